# The term features stem with the Snowball English stemmer (cachecore.engine.polarity.stem) instead
# of the hand-written suffix stripper: every stored section's terms are derived again from its text,
# and each tenant's document frequencies are counted again from those terms. Reverse: nothing (the
# terms stay those of the current stemmer).

from django.db import migrations

BATCH = 1000


def rederive_terms(apps, schema_editor):
    """Section.terms from the current ``section_terms``; TermFrequency recounted from them."""
    from cachecore.engine.evidence import SECTION_COUNT_TERM, section_terms

    Section = apps.get_model("cachecore", "Section")
    TermFrequency = apps.get_model("cachecore", "TermFrequency")
    changed = []
    for section in Section.objects.only("pk", "text", "terms").order_by("pk").iterator(chunk_size=BATCH):
        terms = sorted(section_terms(section.text))
        if terms != list(section.terms):
            section.terms = terms
            changed.append(section)
        if len(changed) >= BATCH:
            Section.objects.bulk_update(changed, ["terms"])
            changed = []
    Section.objects.bulk_update(changed, ["terms"])
    section_table, frequency_table = Section._meta.db_table, TermFrequency._meta.db_table
    with schema_editor.connection.cursor() as cur:
        cur.execute(f"DELETE FROM {frequency_table}")
        cur.execute(
            f"INSERT INTO {frequency_table} (tenant_id, term, sections) "
            f"SELECT tenant_id, term, count(*) FROM {section_table}, unnest(terms) AS term GROUP BY tenant_id, term "
            f"UNION ALL SELECT tenant_id, %s, count(*) FROM {section_table} GROUP BY tenant_id",
            [SECTION_COUNT_TERM],
        )


class Migration(migrations.Migration):

    dependencies = [
        ("cachecore", "0016_miss_reason_choices_from_engine"),
    ]

    operations = [
        migrations.RunPython(rederive_terms, migrations.RunPython.noop),
    ]
