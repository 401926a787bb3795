"""Durable background jobs: a row written in the accepting request's transaction, published
to the broker after commit (never waiting on it), claimed with a conditional UPDATE, and
re-published by a sweeper while it never started. Nothing a request accepted is lost.

These primitives know no job kind: each service registers the body of its own kinds
(``register(JobKind.EXPORT, export_job_run)``) when it is imported, and publishing goes by the
Celery task's name, so nothing here imports a service or ``cachecore.tasks``."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone

from cachecore.models import Job, JobKind, JobStatus
from tenants.models import Tenant

log = logging.getLogger(__name__)

# A job that failed this many times (worker crashes, database errors) is marked failed.
MAX_ATTEMPTS = 5
# Published but never started for this long: the message may be lost with the broker (a Redis
# that keeps nothing on disk restarted, a publish that raced the worker's reconnect); publish
# again. Short, because a duplicate message costs one conditional claim that finds nothing to do
# (job_claim), while a lost one left an accepted export waiting: `make chaos` once saw an export
# published 9 s after a Redis restart reach no worker until this republish (then 5 minutes).
REPUBLISH_AFTER = timedelta(seconds=90)
# Running without a heartbeat for this long: its worker died (killed, lost its machine); the
# sweeper hands the job back. The default of TRAILCACHE_JOB_HEARTBEAT_TIMEOUT_SECONDS.
HEARTBEAT_TIMEOUT = timedelta(minutes=10)


def heartbeat_timeout() -> timedelta:
    """How long a running job may go without a heartbeat before the sweeper hands it back."""
    return timedelta(seconds=settings.TRAILCACHE_JOB_HEARTBEAT_TIMEOUT_SECONDS)


# The Celery task that runs a job row (cachecore/tasks.py), published by name.
JOB_RUN_TASK = "cachecore.tasks.job_run"

JobHandler = Callable[[Job], dict[str, Any]]
_HANDLERS: dict[str, JobHandler] = {}


class JobRetry(Exception):
    """Raised by a job body for a transient failure: the job goes back to the queue."""


class JobFailed(Exception):
    """Raised by a job body for a failure the caller should see by name (``disk_full``): the
    job fails with that short code instead of the exception's text."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code


class UnknownJobKind(LookupError):
    """A job row whose kind no service registered a handler for (a programming error)."""


def register(kind: JobKind, handler: JobHandler) -> None:
    """Make ``handler`` the body of jobs of ``kind``; it returns the job's result (a dict).
    Each service registers its own kinds at import; a second, different handler is a bug."""
    current = _HANDLERS.get(kind)
    if current is not None and _name(current) != _name(handler):
        raise ValueError(f"job kind {kind!r} already runs {_name(current)}, not {_name(handler)}")
    _HANDLERS[kind] = handler


def _name(handler: JobHandler) -> str:
    return f"{handler.__module__}.{handler.__qualname__}"


def job_handler(kind: str) -> JobHandler:
    """The registered body of a job kind; ``UnknownJobKind`` when there is none."""
    try:
        return _HANDLERS[kind]
    except KeyError:
        known = ", ".join(sorted(_HANDLERS)) or "none"
        raise UnknownJobKind(f"no handler registered for job kind {kind!r} (registered: {known})") from None


def job_create(
    *, tenant: Tenant, kind: JobKind, params: dict[str, Any], actor_label: str = "system", actor: Any = None,
    progress_total: int | None = None,
) -> Job:
    """Write a queued job and publish it after the surrounding transaction commits. Call
    inside the request's transaction so the job exists exactly when the request's writes do."""
    job = Job.objects.create(tenant=tenant, kind=kind, params=params, actor=actor, actor_label=actor_label,
                             progress_total=progress_total)
    job_id = str(job.pk)
    transaction.on_commit(lambda: job_publish(job_id=job_id))
    return job


def job_publish(*, job_id: str) -> bool:
    """Send the job's message to the broker. Fails fast and quietly when the broker is down
    (the job stays queued for the sweeper); returns whether the broker took it."""
    try:
        # By name: the web process needs no import of the tasks module (which imports services).
        current_app.signature(JOB_RUN_TASK, args=(job_id,)).apply_async(retry=False)
    except Exception as exc:  # any broker/transport error: never fail the request over it
        log.warning("job %s not published, the sweeper will retry: %s", job_id, exc)
        return False
    Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(enqueued_at=timezone.now())
    return True


def jobs_requeue(*, min_age_seconds: float = 5.0) -> int:
    """Publish queued jobs that never reached the broker (or whose message may be lost), and
    hand back running jobs whose worker went silent. Returns jobs published."""
    now = timezone.now()
    Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=now - heartbeat_timeout()).update(
        status=JobStatus.QUEUED, enqueued_at=None,
    )
    never = Q(enqueued_at__isnull=True, created_at__lte=now - timedelta(seconds=min_age_seconds))
    lost = Q(enqueued_at__lt=now - REPUBLISH_AFTER)
    due = Job.objects.filter(never | lost, status=JobStatus.QUEUED).order_by("created_at")
    ids = [str(pk) for pk in due.values_list("pk", flat=True)[:1000]]
    published = 0
    for job_id in ids:
        if not job_publish(job_id=job_id):
            break  # broker still down: try again on the next sweep
        published += 1
    return published


def job_claim(*, job_id: str) -> Job | None:
    """Take a queued job for this worker (conditional UPDATE), or None when it is gone,
    finished or taken by another worker: duplicate messages are harmless."""
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update(skip_locked=True).filter(pk=job_id, status=JobStatus.QUEUED).first()
        if job is None:
            return None
        job.attempts += 1
        if job.attempts > MAX_ATTEMPTS:
            job.status, job.finished_at, job.error = JobStatus.FAILED, now, "too_many_attempts"
            job.save(update_fields=["attempts", "status", "finished_at", "error"])
            return None
        job.status, job.started_at, job.heartbeat_at = JobStatus.RUNNING, job.started_at or now, now
        job.save(update_fields=["attempts", "status", "started_at", "heartbeat_at"])
    return job


def job_progress(*, job: Job, done: int, total: int | None = None) -> None:
    """Record progress (and a heartbeat) on the job row."""
    job.progress_done = done
    fields = {"progress_done": done, "heartbeat_at": timezone.now()}
    if total is not None:
        job.progress_total = fields["progress_total"] = total
    Job.objects.filter(pk=job.pk).update(**fields)


def _finish(job: Job, *, status: JobStatus, result: dict[str, Any] | None = None, error: str = "",
            claimed_params: dict[str, Any] | None = None) -> None:
    job.status, job.finished_at, job.error = status, timezone.now(), error[:300]
    if result is not None:
        job.result = result
    fields = ["status", "finished_at", "error", "result", "file_name", "file_expires_at"]
    # The params only when the body changed them: an erasure may have scrubbed them on the row
    # while the job ran, and the copy claimed before must not write the subject back.
    if claimed_params is None or job.params != claimed_params:
        fields.append("params")
    if status == JobStatus.DONE and job.progress_total is not None:
        job.progress_done = job.progress_total
        fields.append("progress_done")
    job.save(update_fields=fields)


def job_execute(*, job_id: str) -> Job | None:
    """Claim and run one job. Transient failures (database errors, ``JobRetry``) put it back
    in the queue and re-raise so the task's retry policy applies; any other error fails the
    job with a short code; a kind with no registered handler fails the job and raises
    ``UnknownJobKind``. Returns the job, or None when there was nothing to do."""
    job = job_claim(job_id=job_id)
    if job is None:
        return None
    claimed = copy.deepcopy(job.params)
    try:
        handler = job_handler(job.kind)
    except UnknownJobKind:
        _finish(job, status=JobStatus.FAILED, error=f"unknown_kind: {job.kind}")
        raise
    try:
        result = handler(job)
    except (DatabaseError, JobRetry):
        Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(status=JobStatus.QUEUED, enqueued_at=None)
        raise
    except JobFailed as exc:
        log.error("job %s (%s) failed: %s (%s)", job.pk, job.kind, exc.code, exc)
        _finish(job, status=JobStatus.FAILED, error=exc.code, claimed_params=claimed)
        return job
    except Exception as exc:
        log.exception("job %s (%s) failed", job.pk, job.kind)
        _finish(job, status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}", claimed_params=claimed)
        return job
    _finish(job, status=JobStatus.DONE, result=result, claimed_params=claimed)
    return job
