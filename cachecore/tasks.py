"""Thin Celery wrappers: ids in, a service call, retries declared here. Periodic tasks are
scheduled in config/celery.py. Tasks import services, never the other way round: a service
publishes a job by this module's task name (``cachecore.services.jobs.JOB_RUN_TASK``)."""

from __future__ import annotations

import logging
from dataclasses import asdict

from celery import shared_task
from django.db import InterfaceError, OperationalError

from cachecore.services import calibration, jobs, reembed, retention, rollups

log = logging.getLogger(__name__)


@shared_task(acks_late=True, autoretry_for=(OperationalError, InterfaceError, jobs.JobRetry),
             retry_backoff=2, retry_backoff_max=60, retry_jitter=True, max_retries=jobs.MAX_ATTEMPTS)
def job_run(job_id: str) -> None:
    """Run a queued job row (export, erasure, chunk embeddings, invalidation fan-out). A job
    that is gone, finished or taken by another worker is skipped quietly. Logs which worker ran
    it (the cluster demo reads this line)."""
    job = jobs.job_execute(job_id=job_id)
    if job is not None:
        log.info("job %s (%s) %s on worker %s", job.pk, job.kind, job.status, job_run.request.hostname)


@shared_task(ignore_result=True)
def jobs_requeue() -> int:
    return jobs.jobs_requeue()


@shared_task(autoretry_for=(OperationalError, InterfaceError), retry_backoff=5, max_retries=3)
def retention_sweep() -> dict[str, int]:
    return asdict(retention.retention_sweep())


@shared_task(autoretry_for=(OperationalError, InterfaceError), retry_backoff=5, max_retries=3)
def stats_rollup() -> int:
    return rollups.stats_rollup()


@shared_task(autoretry_for=(OperationalError, InterfaceError), retry_backoff=5, max_retries=3)
def embeddings_refresh() -> dict[str, object]:
    """After an embedding model change: re-embed what was stored under another model."""
    return asdict(reembed.embeddings_refresh())


@shared_task(autoretry_for=(OperationalError, InterfaceError), retry_backoff=5, max_retries=3)
def operating_points_auto_apply() -> int:
    """Tenants that opted in get the prefetch confidence their labels suggest (audited)."""
    return calibration.operating_points_auto_apply()
