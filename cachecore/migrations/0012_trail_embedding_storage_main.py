"""Keep a trail's embedding in its row: STORAGE MAIN instead of pgvector's EXTERNAL.

With EXTERNAL, a trail row over ~2 kB (the 1.5 kB vector plus its query, steps and keys: about
half of them in the benchmark, most real ones) moves the vector out to the TOAST table, and every
exact scan and every HNSW re-rank reads it back through the TOAST index. MAIN moves the steps
out first and keeps the vector inline unless the row could not fit a page. Measured on a 138k-row
partition of the 1M benchmark (``python -m research.storage_ab``, README Results): the exact
search of a 2k-trail scope 2.7 → 1.4 ms, of 12.8k trails 24.3 → 14.0 ms; heap and TOAST
357 → 288 MB.

Only the column's strategy changes here (no rewrite, no lock beyond a moment's ACCESS
EXCLUSIVE on metadata): rows written from now on are stored inline. Existing rows stay as
they are until rewritten; ``VACUUM FULL cachecore_trail`` (a full lock while it runs) moves
them, or leave them to age out with retention. The partitions follow the parent."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("cachecore", "0011_partition_trails_by_tenant")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE cachecore_trail ALTER COLUMN embedding SET STORAGE MAIN",
            reverse_sql="ALTER TABLE cachecore_trail ALTER COLUMN embedding SET STORAGE EXTERNAL",
        ),
    ]
