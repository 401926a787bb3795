"""The Celery app, configured from Django settings (``CELERY_*``), JSON messages only.
Periodic tasks are declared here, in one place."""

from __future__ import annotations

import os

from celery import Celery
from celery.schedules import crontab
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("trailcache")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

app.conf.beat_schedule = {
    # Jobs whose message never reached the broker (or was lost with it) are published again.
    "jobs-requeue": {"task": "cachecore.tasks.jobs_requeue", "schedule": 60.0},
    "retention-sweep": {"task": "cachecore.tasks.retention_sweep", "schedule": crontab(minute=7)},
    "stats-rollup": {"task": "cachecore.tasks.stats_rollup", "schedule": crontab(minute="*/15")},
    # After an embedding model change, trails and chunks of the old model are embedded again.
    "embeddings-refresh": {"task": "cachecore.tasks.embeddings_refresh", "schedule": crontab(minute="*/10")},
    # Tenants that opted in get the operating point their agents' citations suggest.
    "operating-points": {"task": "cachecore.tasks.operating_points_auto_apply", "schedule": crontab(minute=23, hour=3)},
}


@worker_ready.connect
def _requeue_on_worker_start(sender: object = None, **_: object) -> None:
    """A worker that starts after the broker was down picks up the jobs accepted meanwhile."""
    from cachecore.services.jobs import jobs_requeue

    jobs_requeue(min_age_seconds=0)
