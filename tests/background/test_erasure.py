"""Subject erasure from the console runs as a job with the effect of
``DELETE /api/v1/subjects/{subject}``: nothing of the subject is left."""

from __future__ import annotations

import json

import pytest

from cachecore.models import Citation, Job, JobStatus, RecallEvent, Trail
from cachecore.services.erasure import subject_erase_request
from cachecore.services.exports import export_request
from cachecore.services.subjects import subject_hash
from tenants.caller import tenant_caller
from tenants.models import AuditAction, AuditEntry
from tests.background.factories import make_recall_event, make_trail

pytestmark = pytest.mark.django_db

SUBJECT = "alice@example.com"


def _everything_text(tenant) -> str:
    rows = [
        list(Trail.objects.filter(tenant=tenant).values()),
        list(RecallEvent.objects.filter(tenant=tenant).values()),
        list(Job.objects.filter(tenant=tenant).values("params", "result", "error")),
        list(AuditEntry.objects.filter(tenant=tenant).values("target", "details")),
    ]
    return json.dumps(rows, default=str)


def test_erasure_job_leaves_nothing_of_the_subject(make_tenant, run_jobs):
    tenant = make_tenant()
    theirs = make_trail(tenant, query="alice's secret question", subject=SUBJECT, cited=["a", "b"])
    other = make_trail(tenant, query="bob's question", subject="bob")
    make_recall_event(tenant, query="alice's secret question", subject=SUBJECT, trail=theirs)
    kept = make_recall_event(tenant, query="bob again", subject="bob", trail=other)
    export_request(caller=tenant_caller(tenant, actor_label="operator:c@x"), format="csv", subject=SUBJECT)
    run_jobs()
    done_export = Job.objects.get(kind="export")

    job = subject_erase_request(caller=tenant_caller(tenant, actor_label="operator:c@x"), subject=SUBJECT)
    assert job.status == JobStatus.QUEUED
    run_jobs()
    job.refresh_from_db()

    assert job.status == JobStatus.DONE and job.result == {"deleted": 2}
    assert not Trail.objects.filter(subject=SUBJECT).exists()
    assert not Citation.objects.filter(trail_id=theirs.pk).exists()
    assert not RecallEvent.objects.filter(subject=SUBJECT).exists()
    assert RecallEvent.objects.filter(pk=kept.pk).exists() and Trail.objects.filter(pk=other.pk).exists()
    text = _everything_text(tenant)
    assert SUBJECT not in text and "alice's secret" not in text

    entry = AuditEntry.objects.get(tenant=tenant, action=AuditAction.SUBJECT_ERASE)
    assert entry.details["subject_sha256"] == subject_hash(SUBJECT)
    assert entry.actor_label == "operator:c@x"
    # The export written before the erasure held the subject: its file is deleted, and listed.
    assert entry.details["exports_deleted"] == [str(done_export.pk)]


def test_erasure_api_and_job_have_the_same_effect(make_caller, run_jobs):
    api, console = make_caller(), make_caller()
    for caller in (api, console):
        make_trail(caller.tenant, subject=SUBJECT)
        make_recall_event(caller.tenant, subject=SUBJECT, query="q")
    assert api.delete(f"/api/v1/subjects/{SUBJECT}").json() == {"deleted": 2}
    subject_erase_request(caller=tenant_caller(console.tenant, actor_label="operator:x"), subject=SUBJECT)
    run_jobs()
    assert Job.objects.get(tenant=console.tenant).result == {"deleted": 2}
    for caller in (api, console):
        assert not Trail.objects.filter(tenant=caller.tenant).exists()
        assert not RecallEvent.objects.filter(tenant=caller.tenant).exists()


def test_a_queued_export_filtered_on_an_erased_subject_exports_nothing(make_tenant, run_jobs):
    tenant = make_tenant()
    make_trail(tenant, subject=SUBJECT)
    make_trail(tenant, subject="bob")
    export = export_request(caller=tenant_caller(tenant, actor_label="x"), format="jsonl", subject=SUBJECT)
    from cachecore.services.erasure import subject_erase

    subject_erase(caller=tenant_caller(tenant, actor_label="x"), subject=SUBJECT)
    run_jobs()
    export.refresh_from_db()
    assert export.status == JobStatus.DONE and export.result["rows"] == 0
    assert "subject" not in export.params and export.params["subject_sha256"] == subject_hash(SUBJECT)


@pytest.mark.parametrize("status", ["pending", "quarantined", "stale"])
def test_erasure_deletes_the_subjects_trails_in_every_status(make_caller, run_jobs, status):
    api, console = make_caller(), make_caller()
    for caller in (api, console):
        make_trail(caller.tenant, query="alice's question", subject=SUBJECT, status=status)
        make_trail(caller.tenant, query="bob's question", subject="bob", status=status)
    assert api.delete(f"/api/v1/subjects/{SUBJECT}").json() == {"deleted": 1}
    subject_erase_request(caller=tenant_caller(console.tenant, actor_label="operator:x"), subject=SUBJECT)
    run_jobs()
    assert Job.objects.get(tenant=console.tenant).result == {"deleted": 1}
    for caller in (api, console):
        assert list(Trail.objects.filter(tenant=caller.tenant).values_list("subject", "status")) == [("bob", status)]


def test_erasure_deletes_the_export_files_that_could_hold_the_subject(make_caller, run_jobs):
    from cachecore.services.exports import export_path

    caller = make_caller()
    tenant = caller.tenant
    make_trail(tenant, query="alice's secret question", subject=SUBJECT)
    make_trail(tenant, query="bob's question", subject="bob")
    everyone = caller.post("/api/v1/exports", {"format": "csv"}).json()["export_id"]
    hers = caller.post("/api/v1/exports", {"format": "csv", "subject": SUBJECT}).json()["export_id"]
    bobs = caller.post("/api/v1/exports", {"format": "csv", "subject": "bob"}).json()["export_id"]
    run_jobs()
    jobs = {pk: Job.objects.get(pk=pk) for pk in (everyone, hers, bobs)}
    assert SUBJECT in export_path(jobs[everyone]).read_text() and SUBJECT in export_path(jobs[hers]).read_text()

    assert caller.delete(f"/api/v1/subjects/{SUBJECT}").status_code == 200
    for pk in (everyone, hers):
        job = Job.objects.get(pk=pk)
        assert job.file_deleted_at is not None and not export_path(job).exists()
        assert caller.get(f"/api/v1/exports/{pk}/download").status_code == 410
    assert export_path(jobs[bobs]).exists()  # filtered on another subject: it cannot hold hers
    assert caller.get(f"/api/v1/exports/{bobs}/download").status_code == 200
    entry = AuditEntry.objects.get(tenant=tenant, action=AuditAction.SUBJECT_ERASE)
    assert sorted(entry.details["exports_deleted"]) == sorted([everyone, hers])
