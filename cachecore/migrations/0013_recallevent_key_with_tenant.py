"""The recall log's primary key holds the tenant: (id, tenant_id), as trails' and citations'
do since 0011. The recall log references trails (composite keys with the tenant), and a table
distributed by tenant (Citus) can enforce only keys that hold the tenant, so with this the
trails and everything that references them distribute by tenant as they are (docs/deploy.md).

id stays first, so a lookup by id alone (Django's pk, the feedback endpoint) is still one index
probe; Django keeps ``id`` as the model's primary key. The key's index is rebuilt (the table
is locked while it is: about a second per million rows here)."""

from django.db import migrations

FORWARD = """
ALTER TABLE cachecore_recallevent DROP CONSTRAINT cachecore_recallevent_pkey;
ALTER TABLE cachecore_recallevent ADD CONSTRAINT cachecore_recallevent_pkey PRIMARY KEY (id, tenant_id);
"""
BACKWARD = """
ALTER TABLE cachecore_recallevent DROP CONSTRAINT cachecore_recallevent_pkey;
ALTER TABLE cachecore_recallevent ADD CONSTRAINT cachecore_recallevent_pkey PRIMARY KEY (id);
"""


class Migration(migrations.Migration):
    dependencies = [("cachecore", "0012_trail_embedding_storage_main")]

    operations = [migrations.RunSQL(FORWARD, reverse_sql=BACKWARD)]
