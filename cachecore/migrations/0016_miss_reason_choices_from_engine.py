# The unused "guard" miss reason dropped: miss reasons are the engine's (cachecore.engine.outcome.MissReason).
# Choices only: no change in the database.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('cachecore', '0015_recall_negatives'),
    ]

    operations = [
        migrations.AlterField(
            model_name='recallevent',
            name='miss_reason',
            field=models.CharField(blank=True, choices=[('no_candidate', 'No similar trail'), ('stale', 'Every cited section changed')], max_length=16),
        ),
    ]
