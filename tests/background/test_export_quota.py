"""A per-tenant byte quota on export files (``TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT``): a
file that would take the tenant's live export files over it stops being written (the job fails
as ``export_quota_exceeded``, nothing left on disk); at the quota, a new export is refused
(409, the error shape) until files expire or are deleted; other tenants are not counted."""

from __future__ import annotations

import pytest

from cachecore.models import Job, JobStatus
from cachecore.services.exports import export_path, exports_expire
from tests.factories import make_trail

pytestmark = pytest.mark.django_db


def _trails(tenant, n: int) -> None:
    for i in range(n):
        make_trail(tenant, query=f"question number {i} about the quota, padded to take some room " + "x" * 100)


def test_an_export_over_the_quota_stops_and_leaves_nothing(make_caller, run_jobs, settings, media_root):
    settings.TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT = 2_000
    caller = make_caller()
    _trails(caller.tenant, 60)  # ~15 kB of CSV
    response = caller.post("/api/v1/exports", {"format": "csv"})
    assert response.status_code == 202, response.content
    run_jobs()
    job = Job.objects.get(pk=response.json()["export_id"])
    assert job.status == JobStatus.FAILED and job.error == "export_quota_exceeded"
    assert not any(p.is_file() for p in media_root.rglob("*"))


def test_at_the_quota_a_new_export_is_refused_until_files_go(make_caller, make_tenant, run_jobs, settings,
                                                              media_root):
    caller = make_caller()
    _trails(caller.tenant, 5)
    first = caller.post("/api/v1/exports", {"format": "csv"})
    run_jobs()
    done = Job.objects.get(pk=first.json()["export_id"])
    assert done.status == JobStatus.DONE
    settings.TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT = done.result["bytes"]  # exactly used up
    refused = caller.post("/api/v1/exports", {"format": "csv"})
    assert refused.status_code == 409, refused.content
    body = refused.json()
    assert body["error"] == "export_quota_exceeded" and set(body) >= {"error", "detail", "fields"}
    other = make_caller()  # another tenant's files do not count
    _trails(other.tenant, 1)
    assert other.post("/api/v1/exports", {"format": "csv"}).status_code == 202
    Job.objects.filter(pk=done.pk).update(file_expires_at="2026-01-01T00:00:00Z")
    exports_expire()
    assert not export_path(done).exists()
    assert caller.post("/api/v1/exports", {"format": "csv"}).status_code == 202
