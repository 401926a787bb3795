"""Negatives become exemplars of either kind: a labelled recall kept for the trail it offered,
uncited (a negative, as before) or cited (a positive); trails say whether they have positives."""

from django.db import migrations, models


def negatives_are_uncited(apps, schema_editor):
    RecallEvent = apps.get_model("cachecore", "RecallEvent")
    RecallEvent.objects.filter(exemplar_for__isnull=False).update(exemplar_cited=False)


def positives_dropped(apps, schema_editor):
    """Backwards: only negatives existed before; a positive would read as one."""
    RecallEvent = apps.get_model("cachecore", "RecallEvent")
    RecallEvent.objects.filter(exemplar_cited=True).update(
        exemplar_for=None, exemplar_embedding=None, exemplar_bar=None, exemplar_embedding_model="")


class Migration(migrations.Migration):

    dependencies = [
        ('cachecore', '0022_section_namespaces'),
    ]

    operations = [
        migrations.RemoveIndex(model_name='recallevent', name='recall_negatives'),
        migrations.RenameField(model_name='recallevent', old_name='negative_for', new_name='exemplar_for'),
        migrations.RenameField(model_name='recallevent', old_name='negative_embedding', new_name='exemplar_embedding'),
        migrations.RenameField(model_name='recallevent', old_name='negative_embedding_model',
                               new_name='exemplar_embedding_model'),
        migrations.RenameField(model_name='recallevent', old_name='negative_bar', new_name='exemplar_bar'),
        migrations.AddField(model_name='recallevent', name='exemplar_cited',
                            field=models.BooleanField(blank=True, null=True)),
        migrations.RunPython(negatives_are_uncited, positives_dropped),
        migrations.AddIndex(model_name='recallevent', index=models.Index(
            condition=models.Q(('exemplar_for__isnull', False)), fields=['tenant', 'exemplar_for'],
            name='recall_exemplars')),
        migrations.AddField(model_name='trail', name='has_positives',
                            field=models.BooleanField(db_default=False, default=False)),
    ]
