"""Chunks carry their section's tenant, so that one tenant's chunks are found inside the index
scan (selectors/rivals.py): added nullable, filled from the sections, then required."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("cachecore", "0018_sectionchunk_embedding_hnsw"),
        ("tenants", "0012_operating_point_noise_allowance_and_pause"),
    ]

    operations = [
        migrations.AddField(
            model_name="sectionchunk",
            name="tenant",
            field=models.ForeignKey(db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="+", to="tenants.tenant"),
        ),
        migrations.RunSQL(
            "UPDATE cachecore_sectionchunk ch SET tenant_id = s.tenant_id FROM cachecore_section s "
            "WHERE s.id = ch.section_id",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="sectionchunk",
            name="tenant",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to="tenants.tenant"),
        ),
        migrations.AddIndex(
            model_name="sectionchunk",
            index=models.Index(fields=["tenant", "embedding_model"], name="chunk_tenant_model"),
        ),
    ]
