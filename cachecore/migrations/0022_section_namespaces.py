"""Per-scope id namespaces (docs/scopes.md, "Id namespaces"): ``Section.namespace`` and
``Citation.section_namespace``, both "" (the tenant's shared namespace) for every existing row
and by database default; sections unique by (tenant, external_id, namespace); the citations'
reverse index holds the namespace, which every join from a citation to its section matches.

Reversing refuses while any section or citation is in a namespace other than "": dropping the
columns would merge a limited key's section into the shared id (two rows for one key) and
rebind its citations to the shared section. Delete those sections and purge the trails citing
them first (the console lists both); then the reverse drops the two columns and restores the
(tenant, external_id) key."""

from django.db import migrations, models


def refuse_namespaced(apps, schema_editor):
    Section = apps.get_model("cachecore", "Section")
    Citation = apps.get_model("cachecore", "Citation")
    sections = Section.objects.exclude(namespace="").count()
    citations = Citation.objects.exclude(section_namespace="").count()
    if sections or citations:
        raise RuntimeError(
            f"cannot reverse cachecore 0022: {sections} sections and {citations} citations are in a limited "
            "key's id namespace; reversing would merge them into the shared ids. Delete those sections "
            "(?namespace= on DELETE /api/v1/sections/{id}) and purge the trails citing them first.")


class Migration(migrations.Migration):

    dependencies = [
        ('cachecore', '0021_recallevent_negative_embedding_model'),
    ]

    operations = [
        migrations.AddField(
            model_name='section',
            name='namespace',
            field=models.TextField(blank=True, db_default='', default=''),
        ),
        migrations.AddField(
            model_name='citation',
            name='section_namespace',
            field=models.TextField(blank=True, db_default='', default=''),
        ),
        migrations.RemoveConstraint(
            model_name='section',
            name='section_unique_external_id',
        ),
        migrations.AddConstraint(
            model_name='section',
            constraint=models.UniqueConstraint(fields=('tenant', 'external_id', 'namespace'),
                                               name='section_unique_id_in_namespace'),
        ),
        migrations.RemoveIndex(
            model_name='citation',
            name='citation_by_section',
        ),
        migrations.AddIndex(
            model_name='citation',
            index=models.Index(fields=['tenant', 'section_id', 'section_namespace'], name='citation_by_section'),
        ),
        # Last, so that reversing checks before anything is dropped.
        migrations.RunPython(migrations.RunPython.noop, refuse_namespaced),
    ]
