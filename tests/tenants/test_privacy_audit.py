"""Privacy of the audit log itself: a changed secret is audited as "(changed)", never with its
old or new value, in the stored row."""

from __future__ import annotations

import json

from tenants.caller import tenant_caller
from tenants.models import AuditAction, AuditEntry
from tenants.services import tenant_settings_update


def test_changing_the_resolver_secret_stores_neither_value_in_the_audit_row(make_tenant):
    tenant = make_tenant(resolver_url="https://resolver.example.com/resolve", resolver_secret="old-s3cr3t-4f1a")
    tenant_settings_update(caller=tenant_caller(tenant, actor_label="operator:a@x"),
                           changes={"resolver_secret": "new-s3cr3t-9c2e", "coverage_floor": 0.45})
    entry = AuditEntry.objects.get(tenant=tenant, action=AuditAction.SETTINGS_CHANGE)
    stored = json.dumps(entry.details) + entry.target
    assert "old-s3cr3t-4f1a" not in stored and "new-s3cr3t-9c2e" not in stored
    assert entry.details["resolver_secret"] == "(changed)"
    assert entry.details["coverage_floor"]["new"] == 0.45
    tenant.refresh_from_db()
    assert tenant.resolver_secret == "new-s3cr3t-9c2e"
