"""Job rows: claimed once, quiet when gone, failures recorded, large upserts as jobs, and
publishing that never makes a request wait on a broker that is down."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import OperationalError, connection

from cachecore.models import Job, JobKind, JobStatus, Section, SectionChunk, Trail, TrailStatus
from cachecore.services import jobs as jobs_module
from cachecore.services.jobs import job_create, job_execute, jobs_requeue
from cachecore.tasks import job_run
from config.celery import app as celery_app
from tests.factories import make_trail

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

    monkeypatch.setitem(jobs_module._HANDLERS, JobKind.EXPORT, boom)
    job_execute(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error == "ValueError: disk full" and job.finished_at


@pytest.mark.django_db
def test_a_transient_database_error_puts_the_job_back_for_the_retry(make_tenant, monkeypatch):
    job = job_create(tenant=make_tenant(), kind=JobKind.EXPORT, params={"format": "csv"})

    def flaky(job):
        raise OperationalError("server closed the connection")

    monkeypatch.setitem(jobs_module._HANDLERS, JobKind.EXPORT, flaky)
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


@pytest.mark.django_db
def test_a_job_of_a_kind_no_service_registered_fails_loudly(make_tenant, monkeypatch):
    job = job_create(tenant=make_tenant(), kind=JobKind.EXPORT, params={"format": "csv"})
    monkeypatch.delitem(jobs_module._HANDLERS, JobKind.EXPORT)
    with pytest.raises(jobs_module.UnknownJobKind, match="export"):
        job_execute(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error == "unknown_kind: export"


def test_a_process_knows_every_job_kind_once_django_is_set_up():
    """A web process never imports the tasks module: the app's ready() loads the services
    that register kinds, so a job written there could be run by any process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, django; django.setup(); "
            "assert 'cachecore.tasks' not in sys.modules; "
            "registered = sys.modules['cachecore.services.jobs']._HANDLERS; "
            "from cachecore.models import JobKind; "
            "assert set(registered) == set(JobKind.values), sorted(registered)")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_jobs_are_published_by_the_name_of_the_task_that_runs_them():
    assert job_run.name == jobs_module.JOB_RUN_TASK


def test_every_job_kind_has_the_handler_its_service_registered():
    assert set(jobs_module._HANDLERS) == set(JobKind.values)
    with pytest.raises(ValueError, match="already runs"):
        jobs_module.register(JobKind.EXPORT, lambda job: {})


@pytest.mark.django_db(transaction=True)
def test_accepting_a_job_with_the_broker_down_publishes_once_after_commit_and_keeps_the_row(caller, monkeypatch):
    """The request never waits on the broker: one publish attempt, after the job row is
    committed, without the transport's connection retries; the row stays for the sweeper."""
    attempts = []
    real_apply_async = job_run.apply_async

    def spy(args=None, kwargs=None, **options):
        # No transaction open (this test runs in autocommit) and the row there: published after commit.
        committed = not connection.in_atomic_block and Job.objects.filter(pk=args[0]).exists()
        attempts.append((committed, options.get("retry")))
        return real_apply_async(args, kwargs, **options)

    monkeypatch.setattr(job_run, "apply_async", spy)
    response = caller.post("/api/v1/exports", {"format": "csv"})
    assert response.status_code == 202
    assert attempts == [(True, False)]
    job = Job.objects.get(pk=response.json()["export_id"])
    assert job.status == JobStatus.QUEUED and job.enqueued_at is None
    # And that one attempt is bounded by the transport: no reconnect loop, short socket timeouts.
    options = celery_app.conf.broker_transport_options
    assert options["max_retries"] == 0 and options["socket_connect_timeout"] <= 1 and options["socket_timeout"] <= 2
    assert celery_app.conf.task_publish_retry is False


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_publishes_jobs_that_never_reached_the_broker(make_tenant, redis_server, broker_down):
    import redis

    from tests.background.conftest import use_broker

    tenant = make_tenant()
    job = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": "csv"})  # autocommit: published now
    assert jobs_requeue(min_age_seconds=0) == 0  # broker down: nothing published, nothing raised
    job.refresh_from_db()
    assert job.enqueued_at is None
    redis_server.start()
    use_broker(redis_server.url)
    assert jobs_requeue(min_age_seconds=0) == 1
    job.refresh_from_db()
    assert job.enqueued_at is not None
    assert redis.Redis(port=redis_server.port).llen(_queue_key()) == 1
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


# ---- durability: the sweeper, dead workers, a broker outage, the beat schedule -------------------

def _queue_key() -> str:
    """The installation's default queue, under its key prefix (config/settings.py)."""
    from django.conf import settings

    return settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("global_keyprefix", "") + settings.CELERY_TASK_DEFAULT_QUEUE


def _messages(redis_port: int) -> list[str]:
    """Job ids of the task messages waiting in the broker's default queue (JSON, base64 body)."""
    import base64
    import json

    import redis

    raw = redis.Redis(port=redis_port).lrange(_queue_key(), 0, -1)
    return [json.loads(base64.b64decode(json.loads(m)["body"]))[0][0] for m in raw]


@pytest.mark.django_db
def test_the_sweeper_republishes_a_job_published_long_ago_that_never_started(make_tenant, redis_server):
    from django.utils import timezone

    from tests.background.conftest import use_broker

    tenant = make_tenant()
    lost = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": "csv"})
    recent = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": "csv"})
    now = timezone.now()
    # Both reached a broker once; the first one's message was lost over 5 minutes ago.
    Job.objects.filter(pk=lost.pk).update(enqueued_at=now - jobs_module.REPUBLISH_AFTER - timedelta(seconds=30))
    Job.objects.filter(pk=recent.pk).update(enqueued_at=now - timedelta(minutes=1))
    redis_server.start()
    use_broker(redis_server.url)
    assert jobs_requeue(min_age_seconds=0) == 1
    assert _messages(redis_server.port) == [str(lost.pk)]
    lost.refresh_from_db()
    assert lost.enqueued_at > now - timedelta(seconds=30)  # a fresh publish time: not republished again at once
    assert jobs_requeue(min_age_seconds=0) == 0


@pytest.mark.django_db
def test_the_sweeper_hands_back_running_jobs_whose_worker_died_and_another_worker_finishes_them(make_tenant):
    from django.utils import timezone

    tenant = make_tenant()
    make_trail(tenant)
    dead = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": "csv"})
    alive = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": "csv"})
    for job in (dead, alive):
        assert jobs_module.job_claim(job_id=str(job.pk)) is not None  # a worker took it ...
    silent_since = timezone.now() - jobs_module.HEARTBEAT_TIMEOUT - timedelta(seconds=30)
    Job.objects.filter(pk=dead.pk).update(heartbeat_at=silent_since)  # ... and died without a heartbeat

    jobs_requeue(min_age_seconds=0)  # broker down: handed back, not published
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert (dead.status, dead.enqueued_at) == (JobStatus.QUEUED, None)
    assert alive.status == JobStatus.RUNNING  # its worker is alive: left alone
    assert job_run(str(alive.pk)) is None  # a duplicate message for a running job does nothing

    job_run(str(dead.pk))
    dead.refresh_from_db()
    assert dead.status == JobStatus.DONE and dead.attempts == 2 and dead.result["rows"] == 1


@pytest.mark.django_db(transaction=True)
def test_an_invalidation_fan_out_accepted_during_a_broker_outage_runs_when_the_broker_is_back(
        caller, settings, redis_server):
    from tests.background.conftest import use_broker

    settings.TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS = 1
    caller.upsert({"a": "Alpha covers installing the agent.", "b": "Beta covers upgrading the agent."})
    trail_id = caller.record(query="How do I install and upgrade the agent?", cited=["a", "b"]).json()["trail_id"]
    result = caller.upsert({"a": "Alpha now covers removing the agent.", "b": "Beta now covers the licence."})
    assert result["invalidated_trails"] == 1
    job = Job.objects.get(kind=JobKind.TRAILS_INVALIDATE)
    assert (job.status, job.enqueued_at) == (JobStatus.QUEUED, None)  # the publish failed: the row waits
    # Meanwhile read-time validation holds: the changed text is never served.
    served = caller.recall("How do I install and upgrade the agent?")
    assert served["outcome"] == "miss" and not served["sections"]

    redis_server.start()
    use_broker(redis_server.url)
    assert jobs_requeue(min_age_seconds=0) == 1
    [message] = _messages(redis_server.port)
    assert message == str(job.pk)
    job_run(message)  # what the worker does with it
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert Trail.objects.get(pk=trail_id).status == TrailStatus.STALE


def test_the_beat_schedule_runs_the_sweeper_every_minute_retention_hourly_and_rollups_every_15_minutes():
    from celery.schedules import crontab

    from config.celery import app

    app.loader.import_default_modules()
    schedule = {entry["task"]: entry["schedule"] for entry in app.conf.beat_schedule.values()}
    assert {"cachecore.tasks.jobs_requeue", "cachecore.tasks.retention_sweep",
            "cachecore.tasks.stats_rollup"} <= set(schedule)
    assert all(name in app.tasks for name in schedule)  # every scheduled name is a registered task
    assert schedule["cachecore.tasks.jobs_requeue"] == 60.0
    retention, rollup = schedule["cachecore.tasks.retention_sweep"], schedule["cachecore.tasks.stats_rollup"]
    assert isinstance(retention, crontab) and len(retention.minute) == 1 and retention.hour == set(range(24))
    assert isinstance(rollup, crontab) and rollup.minute == {0, 15, 30, 45} and rollup.hour == set(range(24))
    assert app.conf.task_serializer == "json" and app.conf.accept_content == ["json"]


@pytest.mark.django_db
def test_a_worker_that_starts_publishes_the_jobs_accepted_while_the_broker_was_down(make_tenant, redis_server):
    from celery.signals import worker_ready

    from tests.background.conftest import use_broker

    job = job_create(tenant=make_tenant(), kind=JobKind.EXPORT, params={"format": "csv"})  # just now: age 0
    redis_server.start()
    use_broker(redis_server.url)
    worker_ready.send(sender=None)
    assert _messages(redis_server.port) == [str(job.pk)]
