"""Erasure finds every copy of a subject: a record inherits its recall's subject, a finishing
export never writes an erased subject back, the export sweep removes the files (and partial
files) of every erased or expired export whatever the interleaving, log redaction covers the
whole path segment, and the API and the console match a subject the same way."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest
from django.db import connection, transaction

from cachecore.models import Job, JobKind, JobStatus, RecallEvent, Trail
from cachecore.services.erasure import subject_erase, subject_erase_request
from cachecore.services.exports import export_path, export_request, exports_expire
from cachecore.services.jobs import job_execute
from config.logredact import SubjectPathFilter, redact_subject_paths
from tenants.caller import tenant_caller
from tenants.models import AuditEntry
from tests.factories import make_trail

SUBJECT = "alice@example.com"
QUERY = "What is alice's secret plan for the migration?"


def _copies(tenant, media_root: Path, *needles: str) -> list[str]:
    """Where any of ``needles`` is still found: rows of every table that holds a subject, and files."""
    found = []
    tables = {
        "trails": list(Trail.objects.filter(tenant=tenant).values()),
        "recalls": list(RecallEvent.objects.filter(tenant=tenant).values()),
        "jobs": list(Job.objects.filter(tenant=tenant).values("params", "result", "error")),
        "audit": list(AuditEntry.objects.filter(tenant=tenant).values("target", "details")),
    }
    for name, rows in tables.items():
        text = json.dumps(rows, default=str)
        found += [f"{name}: {n}" for n in needles if n in text]
    for path in media_root.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            found += [f"file {path.name}: {n}" for n in needles if n in text]
    return found


@pytest.mark.django_db
def test_a_record_inherits_the_subject_of_the_recall_it_answers(caller):
    caller.upsert({"docs/plan.md#1": "The migration plan: move the database first, then the web nodes."})
    recalled = caller.recall(QUERY, subject=SUBJECT)
    recorded = caller.record(query=QUERY, cited=["docs/plan.md#1"], recall_id=recalled["recall_id"])
    assert recorded.status_code == 201, recorded.content
    assert Trail.objects.get(pk=recorded.json()["trail_id"]).subject == SUBJECT
    assert caller.delete(f"/api/v1/subjects/{SUBJECT}").status_code == 200
    assert not Trail.objects.filter(query=QUERY).exists()


def _export_job(tenant, **filters) -> Job:
    return export_request(caller=tenant_caller(tenant, actor_label="operator:c@x"), format="jsonl", **filters)


@pytest.mark.django_db
def test_the_sweep_removes_the_files_of_every_erased_or_expired_export(make_tenant, media_root):
    tenant = make_tenant()
    make_trail(tenant, query=QUERY, subject=SUBJECT)
    jobs = [_export_job(tenant) for _ in range(3)]
    for job in jobs:
        job_execute(job_id=str(job.pk))
    erased, expired, kept = (Job.objects.get(pk=j.pk) for j in jobs)
    # The interleaving that left files behind: the row says "deleted", the file is still there
    # (written after the erasure's check), and a partial file of a crashed run next to it.
    Job.objects.filter(pk=erased.pk).update(file_deleted_at="2026-01-01T00:00:00Z")
    Job.objects.filter(pk=expired.pk).update(file_expires_at="2026-01-01T00:00:00Z")
    for job in (erased, expired, kept):
        assert export_path(job).exists()
    part = export_path(erased).with_suffix(export_path(erased).suffix + ".part")
    part.write_text("half")
    orphan = export_path(kept).parent / "00000000-0000-0000-0000-000000000000.csv.part"
    orphan.write_text("orphan")

    exports_expire()

    assert not export_path(erased).exists() and not part.exists() and not orphan.exists()
    assert not export_path(expired).exists()
    assert export_path(kept).exists()


def _many_trails(tenant, n: int) -> None:
    from django.utils import timezone

    from tests.factories import unit_vector

    expires = timezone.now() + timezone.timedelta(days=30)
    Trail.objects.bulk_create([
        Trail(tenant=tenant, query=f"{QUERY} #{i}", query_normalised=f"{QUERY.lower()} #{i}", embedding=unit_vector(),
              steps=[], status="active", expires_at=expires, scope="default", subject=SUBJECT)
        for i in range(n)
    ], batch_size=1000)


@pytest.mark.django_db(transaction=True)
def test_an_erasure_while_an_export_waits_on_its_final_check(make_tenant, media_root):
    """The erasure holds the export's row while the export reaches its final check: the export
    sees the erasure once it may go on, deletes its file and keeps the erased params."""
    tenant = make_tenant()
    _many_trails(tenant, 4000)
    job = _export_job(tenant, subject=SUBJECT)
    outcome: dict[str, object] = {}

    def run_export() -> None:
        try:
            outcome["job"] = job_execute(job_id=str(job.pk))
        finally:
            connection.close()

    worker = threading.Thread(target=run_export)
    worker.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not Job.objects.filter(
            pk=job.pk, status=JobStatus.RUNNING, file_name__gt="").exists():
        time.sleep(0.005)
    with transaction.atomic():
        # A key-share lock: the export's progress updates pass, its final check (FOR UPDATE) waits.
        with connection.cursor() as cursor:
            cursor.execute("SELECT status FROM cachecore_job WHERE id = %s FOR KEY SHARE", [str(job.pk)])
            assert cursor.fetchone()[0] == JobStatus.RUNNING, "the export finished before the lock: more rows"
        path = export_path(Job.objects.get(pk=job.pk))
        while not path.exists() and worker.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the export is at its final check, waiting for this row
        assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING
        subject_erase(caller=tenant_caller(tenant, actor_label="api:test"), subject=SUBJECT)
    worker.join(timeout=60)
    finished = Job.objects.get(pk=job.pk)
    assert finished.status == JobStatus.DONE, finished.error
    assert SUBJECT not in json.dumps(finished.params) and finished.params.get("subject_sha256")
    assert not path.exists() and not path.with_suffix(".jsonl.part").exists()
    assert _copies(tenant, media_root, SUBJECT, QUERY) == []


@pytest.mark.django_db
def test_an_export_claimed_before_an_erasure_never_writes_the_subject_back(make_tenant, media_root):
    from cachecore.services import jobs as job_service

    tenant = make_tenant()
    make_trail(tenant, query=QUERY, subject=SUBJECT)
    job = _export_job(tenant, subject=SUBJECT)
    # job_execute's steps, with the erasure between the claim and the body (as a worker sees it).
    claimed = job_service.job_claim(job_id=str(job.pk))  # the worker's copy of the row
    snapshot = dict(claimed.params)
    subject_erase(caller=tenant_caller(tenant, actor_label="api:test"), subject=SUBJECT)
    result = job_service.job_handler(JobKind.EXPORT)(claimed)
    job_service._finish(claimed, status=JobStatus.DONE, result=result, claimed_params=snapshot)
    finished = Job.objects.get(pk=job.pk)
    assert SUBJECT not in json.dumps(finished.params)
    assert _copies(tenant, media_root, SUBJECT, QUERY) == []


@pytest.mark.parametrize("subject", ['al"ice', "al'ice", "alice smith", "a#b", "al%22ice", "x/y", "o'brien\"x"])
def test_log_redaction_covers_the_whole_subject(subject):
    from urllib.parse import quote

    paths = [f"/api/v1/subjects/{quote(subject, safe='')}"]
    if not any(c in subject for c in " #"):  # what can stand raw in a request line
        paths.append(f"/api/v1/subjects/{subject}")
    for path in paths:
        line = f'127.0.0.1 - - "DELETE {path} HTTP/1.1" 200 17'
        redacted = redact_subject_paths(line)
        visible = redacted.removeprefix('127.0.0.1 - - "DELETE /api/v1/subjects/').removesuffix(' HTTP/1.1" 200 17')
        assert visible.startswith("sha256:") and len(visible) == len("sha256:") + 16, redacted
    record = logging.LogRecord("django.request", logging.WARNING, __file__, 1, "Not Found: %s", (
        f"/api/v1/subjects/{subject}",), None)
    SubjectPathFilter().filter(record)
    if not any(c in subject for c in " #"):
        assert subject not in record.getMessage(), record.getMessage()


@pytest.mark.django_db
def test_the_console_erases_a_subject_exactly_as_the_api_recorded_it(make_tenant, run_jobs):
    tenant = make_tenant()
    padded = " alice "
    make_trail(tenant, query=QUERY, subject=padded)
    job = subject_erase_request(caller=tenant_caller(tenant, actor_label="operator:c@x"), subject=padded)
    run_jobs()
    assert Job.objects.get(pk=job.pk).result == {"deleted": 1}
    assert not Trail.objects.filter(tenant=tenant).exists()


@pytest.mark.django_db
def test_every_path_that_holds_a_subject_is_erased(caller, media_root, run_jobs, settings):
    """Recall, record, record linked to a recall, export params and files, logs, audit."""
    caller.upsert({"docs/plan.md#1": "The migration plan: move the database first, then the web nodes."})
    recalled = caller.recall(QUERY, subject=SUBJECT)
    assert caller.record(query=QUERY + " (direct)", cited=["docs/plan.md#1"], subject=SUBJECT).status_code == 201
    assert caller.record(query=QUERY, cited=["docs/plan.md#1"], recall_id=recalled["recall_id"]).status_code == 201
    exported = caller.post("/api/v1/exports", {"format": "csv", "subject": SUBJECT})
    assert exported.status_code == 202, exported.content
    caller.post("/api/v1/exports", {"format": "jsonl"})
    run_jobs()
    assert _copies(caller.tenant, media_root, SUBJECT)  # it is there before
    erased = caller.delete(f"/api/v1/subjects/{SUBJECT}")
    assert erased.status_code == 200, erased.content
    run_jobs()
    exports_expire()
    assert _copies(caller.tenant, media_root, SUBJECT, QUERY) == []
