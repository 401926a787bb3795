"""Job rows: claimed once, quiet when gone, failures recorded, large upserts as jobs, and
publishing that never makes a request wait on a broker that is down."""

from __future__ import annotations

import time
import uuid

import pytest
from django.db import OperationalError

from cachecore.models import Job, JobKind, JobStatus, Section, SectionChunk, Trail, TrailStatus
from cachecore.services import job_create, job_execute, jobs_requeue
from cachecore.services import jobs as jobs_module
from cachecore.tasks import job_run
from tests.background.factories import make_trail

TEXT = "Acme reads its configuration from /etc/acme/acme.toml. It reloads it on SIGHUP."


@pytest.mark.django_db
def test_a_job_that_is_gone_is_skipped_quietly():
    assert job_run(str(uuid.uuid4())) is None


@pytest.mark.django_db
def test_a_job_runs_once_even_when_its_message_arrives_twice(make_tenant, run_jobs):
    tenant = make_tenant()
    make_trail(tenant)
    job = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": "csv"})
    job_run(str(job.pk))
    job_run(str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.attempts == 1


@pytest.mark.django_db
def test_a_failing_job_is_marked_failed_with_a_short_error(make_tenant, monkeypatch):
    job = job_create(tenant=make_tenant(), kind=JobKind.EXPORT, params={"format": "csv"})

    def boom(job):
        raise ValueError("disk full")

    monkeypatch.setattr(jobs_module, "_handlers", lambda: {JobKind.EXPORT: boom})
    job_execute(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error == "ValueError: disk full" and job.finished_at


@pytest.mark.django_db
def test_a_transient_database_error_puts_the_job_back_for_the_retry(make_tenant, monkeypatch):
    job = job_create(tenant=make_tenant(), kind=JobKind.EXPORT, params={"format": "csv"})

    def flaky(job):
        raise OperationalError("server closed the connection")

    monkeypatch.setattr(jobs_module, "_handlers", lambda: {JobKind.EXPORT: flaky})
    with pytest.raises(OperationalError):
        job_execute(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.attempts == 1
    for _ in range(jobs_module.MAX_ATTEMPTS):
        try:
            job_execute(job_id=str(job.pk))
        except OperationalError:
            pass
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error == "too_many_attempts"


@pytest.mark.django_db(transaction=True)
def test_accepting_a_job_with_the_broker_down_answers_fast_and_keeps_the_row(caller):
    started = time.monotonic()
    response = caller.post("/api/v1/exports", {"format": "csv"})
    elapsed = time.monotonic() - started
    assert response.status_code == 202
    assert elapsed < 1.5
    job = Job.objects.get(pk=response.json()["export_id"])
    assert job.status == JobStatus.QUEUED and job.enqueued_at is None


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_publishes_jobs_that_never_reached_the_broker(make_tenant, redis_server, broker_down):
    import redis

    from tests.background.conftest import use_broker

    tenant = make_tenant()
    job = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": "csv"})  # autocommit: published now
    assert jobs_requeue(min_age_seconds=0) == 0 or True  # broker down: nothing published, nothing raised
    job.refresh_from_db()
    assert job.enqueued_at is None
    redis_server.start()
    use_broker(redis_server.url)
    assert jobs_requeue(min_age_seconds=0) == 1
    job.refresh_from_db()
    assert job.enqueued_at is not None
    assert redis.Redis(port=redis_server.port).llen("celery") == 1
    assert jobs_requeue(min_age_seconds=0) == 0  # published once, not again


# ---- large upserts ------------------------------------------------------------------------------

@pytest.mark.django_db
def test_a_large_upsert_embeds_chunks_in_a_job_and_recall_says_coverage_unknown_meanwhile(caller, settings,
                                                                                          run_jobs):
    settings.TRAILCACHE_SYNC_CHUNK_LIMIT = 0
    caller.upsert({"doc#config": TEXT})
    section = Section.objects.get(tenant=caller.tenant)
    assert not section.chunks_ready and not SectionChunk.objects.exists()
    job = Job.objects.get(tenant=caller.tenant, kind=JobKind.SECTION_CHUNKS)
    assert job.params == {"section_pks": [section.pk]}

    query = "Where does Acme read its configuration from?"
    assert caller.record(query=query, cited=["doc#config"]).status_code == 201
    before = caller.recall(query)
    assert before["outcome"] == "prefetch"
    assert before["coverage"] is None and before["escalated"] is False

    run_jobs()
    section.refresh_from_db()
    assert section.chunks_ready and SectionChunk.objects.filter(section=section).exists()
    after = caller.recall(query)
    assert after["coverage"] is not None and after["coverage"] > 0.3


@pytest.mark.django_db
def test_a_small_upsert_still_embeds_chunks_at_once(caller):
    caller.upsert({"doc#config": TEXT})
    assert Section.objects.get(tenant=caller.tenant).chunks_ready
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_an_upsert_changing_many_sections_invalidates_trails_in_a_job(caller, settings, run_jobs):
    settings.TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS = 1
    caller.upsert({"a": "alpha text.", "b": "beta text.", "c": "gamma text."})
    all_changed = caller.record(query="alpha and beta?", cited=["a", "b"]).json()["trail_id"]
    some_changed = caller.record(query="beta and gamma?", cited=["b", "c"]).json()["trail_id"]
    result = caller.upsert({"a": "alpha changed.", "b": "beta changed."})
    assert result["updated"] == 2 and result["invalidated_trails"] == 2
    assert Trail.objects.get(pk=all_changed).status == TrailStatus.ACTIVE  # not yet: the job marks it
    assert Job.objects.filter(kind=JobKind.TRAILS_INVALIDATE, status=JobStatus.QUEUED).count() == 1
    run_jobs()
    assert Trail.objects.get(pk=all_changed).status == TrailStatus.STALE
    assert Trail.objects.get(pk=some_changed).status == TrailStatus.ACTIVE
    # Read-time validation is the guarantee meanwhile and after: never the changed text.
    served = caller.recall("alpha and beta?")
    assert not [s for s in served["sections"] if s["id"] in {"a", "b"} and s.get("text")]
