"""Migration 0014's backfill: each existing limited key sees exactly the sections it saw through
its scopes' trails (and no more); a tenant without limited keys keeps every section tenant-wide."""

from __future__ import annotations

import importlib

from django.db import connection

from cachecore.models import Section
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import Caller, tenant_caller
from tenants.services import api_key_create, api_key_revoke

BACKFILL = importlib.import_module("cachecore.migrations.0014_section_scopes").BACKFILL


def _world(tenant):
    whole = tenant_caller(tenant)
    sections_upsert(caller=whole, sections=[{"id": f"s{i}", "text": f"Section {i} says {i}."} for i in range(1, 5)])
    for scope, cited in (("public:x", ["s1"]), ("internal:x", ["s2"]), ("public:y", ["s3"]), ("internal:y", ["s3"])):
        trail_record(caller=whole, scope=scope, query=f"What does {cited[0]} say in {scope}?", steps=[], cited=cited,
                     signal={"source": "caller", "accepted": True})
    Section.objects.filter(tenant=tenant).update(scopes=[])  # as the column was added


def _scopes(tenant):
    return dict(Section.objects.filter(tenant=tenant).values_list("external_id", "scopes"))


def test_the_backfill_keeps_what_each_limited_key_saw(make_tenant):
    limited_tenant, plain_tenant = make_tenant(), make_tenant()
    for tenant in (limited_tenant, plain_tenant):
        _world(tenant)
    api_key_create(caller=tenant_caller(limited_tenant), name="public", scope_prefixes=["public:"])
    revoked, _ = api_key_create(caller=tenant_caller(limited_tenant), name="gone", scope_prefixes=["internal:"])
    api_key_revoke(caller=tenant_caller(revoked.tenant, actor_label="test"), key_id=revoked.pk)
    api_key_create(caller=tenant_caller(plain_tenant), name="wide")
    with connection.cursor() as cur:
        cur.execute(BACKFILL)
    assert _scopes(limited_tenant) == {"s1": ["public:x"], "s2": [], "s3": ["public:y"], "s4": []}
    assert _scopes(plain_tenant) == {"s1": [], "s2": [], "s3": [], "s4": []}
    # What the key saw before (a section its scopes' trails cite) is what it sees now.
    public = Caller(tenant=limited_tenant, scope_prefixes=("public:",))
    assert set(Section.objects.visible_to(public).values_list("external_id", flat=True)) == {"s1", "s3"}
    # Tenant-wide callers still see every section.
    assert Section.objects.visible_to(tenant_caller(plain_tenant)).count() == 4
