"""The console's Caller and its one error table (issue 12 item 4), and API key permissions on
the console (issue 13 item 2): domain errors answer their own status (an export not ready 409,
gone 410, not 404); an admin sees each key's permissions, chooses them at creation and edits
them later, every change audited old → new."""

from __future__ import annotations

import re

from django.utils import timezone
from rest_framework.test import APIClient

from cachecore.models import Job, JobStatus
from cachecore.services.exports import export_request
from cachecore.services.jobs import job_execute
from tenants.caller import tenant_caller
from tenants.models import ApiKey, AuditAction, AuditEntry
from tenants.services import api_key_create


def test_an_export_not_ready_is_409_and_a_deleted_one_410_on_the_console(world, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    job = export_request(caller=tenant_caller(world.tenant, actor_label="test"), format="csv")
    client = world.client("compliance")
    url = f"/console/exports/{job.pk}/download/?tenant=acme"
    not_ready = client.get(url)
    assert not_ready.status_code == 409
    assert "not_ready" in not_ready.content.decode()
    job_execute(job_id=str(job.pk))
    assert client.get(url).status_code == 200
    Job.objects.filter(pk=job.pk).update(file_deleted_at=timezone.now())
    gone = client.get(url)
    assert gone.status_code == 410 and "gone" in gone.content.decode()
    # Another tenant's export, or none at all: 404 as before.
    assert world.client("outsider").get(f"/console/exports/{job.pk}/download/?tenant=globex").status_code == 404
    assert client.get("/console/exports/00000000-0000-4000-8000-000000000000/?tenant=acme").status_code == 404
    assert Job.objects.get(pk=job.pk).status == JobStatus.DONE


def test_the_console_shows_sets_and_edits_key_permissions_audited(world):
    client = world.client("admin")
    page = client.get("/console/api-keys/?tenant=acme").content.decode()
    assert 'name="permissions"' in page and "sections:write" in page
    created = client.post("/console/api-keys/?tenant=acme", {
        "name": "reader", "scope_prefixes": "", "permissions_shown": "1",
        "permissions": ["recall", "sections:read"]})
    assert created.status_code == 201
    raw = re.search(r'value="(tc_[^"]+)"', created.content.decode()).group(1)
    key = ApiKey.objects.get(tenant=world.tenant, name="reader")
    assert key.permissions == ["recall", "sections:read"]
    assert 'data-permissions="recall,sections:read"' in client.get("/console/api-keys/?tenant=acme").content.decode()
    nothing = client.post("/console/api-keys/?tenant=acme", {"name": "none", "permissions_shown": "1"})
    assert nothing.status_code == 400 and not ApiKey.objects.filter(name="none").exists()

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    record = {"scope": "default", "query": "q?", "cited": ["manual/install.md#linux"],
              "steps": [{"tool": "search", "args": {"q": "q"}, "returned": []}]}
    assert api.post("/api/v1/trails", record, format="json").status_code == 403

    edited = client.post(f"/console/api-keys/{key.pk}/permissions/?tenant=acme",
                         {"permissions": ["recall", "record"]})
    assert edited.status_code == 302
    assert ApiKey.objects.get(pk=key.pk).permissions == ["recall", "record"]
    entry = AuditEntry.objects.get(tenant=world.tenant, action=AuditAction.KEY_PERMISSIONS)
    assert entry.details == {"permissions": {"old": ["recall", "sections:read"], "new": ["recall", "record"]}}
    assert entry.actor_label == "operator:admin@acme.test" and "tc_" in entry.target
    assert api.post("/api/v1/trails", record, format="json").status_code == 201
    assert api.get("/api/v1/sections/manual%2Finstall.md%23linux").status_code == 403

    # Unchanged or empty: nothing written, nothing audited.
    client.post(f"/console/api-keys/{key.pk}/permissions/?tenant=acme", {"permissions": ["record", "recall"]})
    client.post(f"/console/api-keys/{key.pk}/permissions/?tenant=acme", {})
    assert AuditEntry.objects.filter(tenant=world.tenant, action=AuditAction.KEY_PERMISSIONS).count() == 1
    assert ApiKey.objects.get(pk=key.pk).permissions == ["recall", "record"]


def test_another_tenants_key_permissions_cannot_be_edited(world):
    other_key, _ = api_key_create(caller=tenant_caller(world.other), name="globex key")
    response = world.client("admin").post(f"/console/api-keys/{other_key.pk}/permissions/?tenant=acme",
                                          {"permissions": ["recall"]})
    assert response.status_code == 404
    assert ApiKey.objects.get(pk=other_key.pk).permissions == other_key.permissions  # unchanged
