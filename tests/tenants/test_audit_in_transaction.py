"""Every audited change writes its audit entry in the change's own transaction: when the
audit entry cannot be written, the change is not made either (and when it is made, its
entry is there). The audit table is made to refuse inserts with a trigger, in autocommit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connection

from cachecore.models import Job, Trail, TrailStatus
from cachecore.services.erasure import subject_erase
from cachecore.services.exports import export_request
from cachecore.services.trails import trail_set_status, trails_purge
from tenants.caller import tenant_caller
from tenants.models import ApiKey, AuditEntry, Tenant
from tenants.services import api_key_create, api_key_revoke, tenant_settings_update
from tests.factories import make_trail

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def audit_refuses_writes() -> Iterator[None]:
    with connection.cursor() as cur:
        cur.execute("""
            CREATE FUNCTION test_audit_refuses() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'audit log refuses writes (test)'; END $$;
            CREATE TRIGGER test_audit_refuses BEFORE INSERT ON tenants_auditentry
            FOR EACH ROW EXECUTE FUNCTION test_audit_refuses();
        """)
    yield
    with connection.cursor() as cur:
        cur.execute("DROP TRIGGER test_audit_refuses ON tenants_auditentry; DROP FUNCTION test_audit_refuses();")


@pytest.fixture
def world(make_tenant, settings, tmp_path) -> dict[str, Any]:
    settings.MEDIA_ROOT = tmp_path / "media"
    tenant = make_tenant()
    key, _ = api_key_create(caller=tenant_caller(tenant), name="existing")
    return {"tenant": tenant, "trail": make_trail(tenant, subject="alice"), "key": key}


def _ttl(w) -> int:
    return Tenant.objects.get(pk=w["tenant"].pk).trail_ttl_days


# change → (make it, "did it happen?")
CHANGES: dict[str, tuple[Callable, Callable]] = {
    "settings": (lambda w: tenant_settings_update(caller=tenant_caller(w["tenant"], actor_label="t"),
                                                  changes={"trail_ttl_days": 45}),
                 lambda w: _ttl(w) == 45),
    "key.create": (lambda w: api_key_create(caller=tenant_caller(w["tenant"], actor_label="t"), name="new"),
                   lambda w: ApiKey.objects.filter(name="new").exists()),
    "key.revoke": (lambda w: api_key_revoke(caller=tenant_caller(w["key"].tenant, actor_label="t"), key_id=w["key"].pk),
                   lambda w: ApiKey.objects.get(pk=w["key"].pk).revoked_at is not None),
    "trail.quarantine": (lambda w: trail_set_status(caller=tenant_caller(w["tenant"], actor_label="t"),
                                                    trail_ids=[w["trail"].pk],
                                                             status=TrailStatus.QUARANTINED),
                         lambda w: Trail.objects.get(pk=w["trail"].pk).status == TrailStatus.QUARANTINED),
    "trail.purge": (lambda w: trails_purge(caller=tenant_caller(w["tenant"], actor_label="t"),
                                           trail_ids=[w["trail"].pk]),
                    lambda w: not Trail.objects.filter(pk=w["trail"].pk).exists()),
    "export": (lambda w: export_request(caller=tenant_caller(w["tenant"], actor_label="t"), format="csv"),
               lambda w: Job.objects.filter(tenant=w["tenant"]).exists()),
    "subject.erase": (lambda w: subject_erase(caller=tenant_caller(w["tenant"], actor_label="t"), subject="alice"),
                      lambda w: not Trail.objects.filter(pk=w["trail"].pk).exists()),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_whose_audit_entry_cannot_be_written_is_not_made(world, audit_refuses_writes, change):
    make, happened = CHANGES[change]
    with pytest.raises(DatabaseError, match="audit log refuses writes"):
        make(world)
    assert not happened(world)


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_that_is_made_has_its_audit_entry(world, change):
    make, happened = CHANGES[change]
    before = AuditEntry.objects.filter(tenant=world["tenant"]).count()
    make(world)
    assert happened(world)
    assert AuditEntry.objects.filter(tenant=world["tenant"]).count() == before + 1
