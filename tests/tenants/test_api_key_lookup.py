"""The API key lookup on every request (one fixed SQL statement, not the ORM's compiled query)
builds the same key and tenant the ORM would, field by field, and finds no revoked key."""

from __future__ import annotations

import pytest

from tenants.caller import tenant_caller
from tenants.models import ApiKey, Tenant
from tenants.selectors import api_key_active_by_prefix
from tenants.services import api_key_authenticate, api_key_create, api_key_revoke, tenant_create


def _fields(obj: object, model: type) -> dict[str, object]:
    return {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields}


@pytest.mark.django_db
def test_the_raw_lookup_builds_what_the_orm_builds():
    tenant = tenant_create(slug="lookup-a")
    Tenant.objects.filter(pk=tenant.pk).update(shadow_mode=True, shadow_scope_prefixes=["beta:", "x:"],
                                               prefetch_confidence=0.91, default_budget_tokens=1234)
    key, raw = api_key_create(caller=tenant_caller(tenant), name="k", scope_prefixes=["docs:", "faq:"])
    got = api_key_active_by_prefix(key.prefix)
    orm = ApiKey.objects.select_related("tenant").get(pk=key.pk)
    assert _fields(got, ApiKey) == _fields(orm, ApiKey)
    assert _fields(got.tenant, Tenant) == _fields(orm.tenant, Tenant)
    assert got.tenant.shadow_scope_prefixes == ["beta:", "x:"] and got.scope_prefixes == ["docs:", "faq:"]
    # Saved model instances, as the ORM gives: an update of the key writes the same row.
    assert not got._state.adding and got._state.db == "default"
    assert api_key_authenticate(raw).pk == key.pk


@pytest.mark.django_db
def test_a_revoked_or_unknown_prefix_finds_nothing():
    tenant = tenant_create(slug="lookup-b")
    key, raw = api_key_create(caller=tenant_caller(tenant), name="k")
    api_key_revoke(caller=tenant_caller(key.tenant, actor_label="test"), key_id=key.pk)
    assert api_key_active_by_prefix(key.prefix) is None
    assert api_key_authenticate(raw) is None
    assert api_key_active_by_prefix("ffffffff") is None
