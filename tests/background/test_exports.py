"""Compliance exports: the API contract (literal URLs), filters, file formats, progress,
tenant isolation, expiry, audit."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from cachecore.models import Job, JobStatus, TrailStatus
from cachecore.services.exports import export_path
from cachecore.services.retention import retention_sweep
from tenants.models import AuditAction, AuditEntry
from tests.background.factories import make_trail

pytestmark = pytest.mark.django_db


def _download(caller, export_id):
    response = caller.get(f"/api/v1/exports/{export_id}/download")
    assert response.status_code == 200, getattr(response, "content", b"")
    return b"".join(response.streaming_content).decode()


def test_export_is_accepted_with_202_and_runs_as_a_job_with_progress(caller, run_jobs):
    for i in range(5):
        make_trail(caller.tenant, query=f"question {i}", cited=[f"doc#{i}", "doc#shared"])
    response = caller.post("/api/v1/exports", {"format": "csv"})
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"export_id", "status"} and body["status"] == "queued"

    status = caller.get(f"/api/v1/exports/{body['export_id']}").json()
    assert status["status"] == "queued" and status["download_url"] is None
    assert status["progress"] == {"done": 0, "total": None}

    assert run_jobs() == 1
    status = caller.get(f"/api/v1/exports/{body['export_id']}").json()
    assert status["status"] == "done"
    assert status["progress"] == {"done": 5, "total": 5}
    assert status["download_url"] == f"/api/v1/exports/{body['export_id']}/download"

    rows = list(csv.DictReader(io.StringIO(_download(caller, body["export_id"]))))
    assert [r["query"] for r in rows] == [f"question {i}" for i in range(5)]
    assert json.loads(rows[0]["cited"]) == ["doc#0", "doc#shared"]
    assert set(rows[0]) >= {"query", "scope", "subject", "status", "created", "expires", "cited", "hits"}


def test_jsonl_export_applies_every_filter(caller, run_jobs):
    old = timezone.now() - timedelta(days=10)
    with time_machine.travel(old, tick=False):
        make_trail(caller.tenant, query="old one", subject="alice")
    make_trail(caller.tenant, query="wanted", subject="alice", scope="group:a")
    make_trail(caller.tenant, query="other scope", subject="alice", scope="group:b")
    make_trail(caller.tenant, query="other subject", subject="bob", scope="group:a")
    make_trail(caller.tenant, query="pending", subject="alice", scope="group:a", status=TrailStatus.PENDING)
    since = (timezone.now() - timedelta(days=1)).date().isoformat()
    response = caller.post("/api/v1/exports", {"format": "jsonl", "scope": "group:a", "subject": "alice",
                                               "status": "active", "since": since,
                                               "until": timezone.now().date().isoformat()})
    assert response.status_code == 202, response.content
    run_jobs()
    lines = _download(caller, response.json()["export_id"]).splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["query"] for r in records] == ["wanted"]
    assert records[0]["subject"] == "alice" and records[0]["hits"] == 0 and records[0]["cited"] == ["doc#1"]


def test_export_streams_in_batches_beyond_one_batch(caller, run_jobs, monkeypatch):
    from cachecore.services import exports

    monkeypatch.setattr(exports, "BATCH", 3)
    for i in range(10):
        make_trail(caller.tenant, query=f"q{i:02d}")
    export_id = caller.post("/api/v1/exports", {"format": "jsonl"}).json()["export_id"]
    run_jobs()
    queries = [json.loads(line)["query"] for line in _download(caller, export_id).splitlines()]
    assert queries == [f"q{i:02d}" for i in range(10)]


def test_csv_cells_that_start_a_formula_are_neutralised(caller, run_jobs):
    make_trail(caller.tenant, query="=HYPERLINK(\"http://evil\")")
    export_id = caller.post("/api/v1/exports", {"format": "csv"}).json()["export_id"]
    run_jobs()
    row = next(csv.DictReader(io.StringIO(_download(caller, export_id))))
    assert row["query"].startswith("'=")


@pytest.mark.parametrize("body", [{}, {"format": "xml"}, {"format": "csv", "status": "gone"},
                                  {"format": "csv", "since": "yesterday"},
                                  {"format": "csv", "since": "2026-02-01", "until": "2026-01-01"}])
def test_invalid_export_requests_are_400_with_fields_and_write_nothing(caller, body):
    response = caller.post("/api/v1/exports", body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid" and response.json()["fields"]
    assert not Job.objects.exists()


def test_export_request_is_audited_with_the_subjects_hash_only(caller):
    caller.post("/api/v1/exports", {"format": "csv", "subject": "alice@example.com"})
    entry = AuditEntry.objects.get(tenant=caller.tenant, action=AuditAction.EXPORT)
    assert entry.actor_label.startswith("apikey:tc_")
    assert "alice@example.com" not in json.dumps(entry.details) + entry.target
    assert entry.details["subject_sha256"]


def test_another_tenants_key_gets_404_for_status_and_download(caller, outsider, run_jobs):
    make_trail(caller.tenant)
    export_id = caller.post("/api/v1/exports", {"format": "csv"}).json()["export_id"]
    run_jobs()
    assert outsider.get(f"/api/v1/exports/{export_id}").status_code == 404
    assert outsider.get(f"/api/v1/exports/{export_id}/download").status_code == 404
    assert caller.get("/api/v1/exports/not-a-uuid").status_code == 404


def test_a_scope_limited_key_may_not_export(make_caller):
    limited = make_caller(scopes=["group:a:"])
    response = limited.post("/api/v1/exports", {"format": "csv"})
    assert response.status_code == 403
    assert not Job.objects.exists()


def test_a_scope_limited_key_may_not_read_the_status_or_download_of_its_tenants_export(caller, make_caller,
                                                                                    run_jobs):
    limited = make_caller(tenant=caller.tenant, scopes=["group:a:"])
    make_trail(caller.tenant, query="in scope b", scope="group:b")
    export_id = caller.post("/api/v1/exports", {"format": "csv"}).json()["export_id"]
    run_jobs()
    assert caller.get(f"/api/v1/exports/{export_id}/download").status_code == 200
    for url in (f"/api/v1/exports/{export_id}", f"/api/v1/exports/{export_id}/download"):
        response = limited.get(url)
        assert response.status_code == 403 and response.json()["error"] == "scope_forbidden", url


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_holds_no_other_tenants_rows(caller, outsider, run_jobs, fmt):
    make_trail(caller.tenant, query="ours", subject="alice", cited=["doc#ours"])
    for status in TrailStatus.values:  # the other tenant has rows of every kind the filters could pick
        make_trail(outsider.tenant, query=f"theirs {status}", subject="alice", status=status, cited=["doc#theirs"])
    for body in ({"format": fmt}, {"format": fmt, "subject": "alice", "scope": "default"}):
        export_id = caller.post("/api/v1/exports", body).json()["export_id"]
        run_jobs()
        content = _download(caller, export_id)
        assert "theirs" not in content and "ours" in content, body
        assert Job.objects.get(pk=export_id).result["rows"] == 1


def test_download_before_done_is_409(caller):
    export_id = caller.post("/api/v1/exports", {"format": "csv"}).json()["export_id"]
    response = caller.get(f"/api/v1/exports/{export_id}/download")
    assert response.status_code == 409 and response.json()["error"] == "not_ready"


def test_export_file_is_deleted_after_seven_days(caller, run_jobs):
    make_trail(caller.tenant)
    export_id = caller.post("/api/v1/exports", {"format": "csv"}).json()["export_id"]
    run_jobs()
    job = Job.objects.get(pk=export_id)
    path = export_path(job)
    assert path.exists()
    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        retention_sweep()
        assert path.exists()
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        assert retention_sweep().export_files == 1
    assert not path.exists()
    job.refresh_from_db()
    assert job.file_deleted_at is not None and job.status == JobStatus.DONE
    assert caller.get(f"/api/v1/exports/{export_id}").json()["download_url"] is None
    response = caller.get(f"/api/v1/exports/{export_id}/download")
    assert response.status_code == 410 and response.json()["error"] == "gone"
