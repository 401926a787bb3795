"""Background-work fixtures: a broker that is down unless a test starts one, the media
root in a temp folder, and a helper that runs queued jobs by calling the task body."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cachecore.models import Job, JobStatus
from cachecore.tasks import job_run
from config.celery import app as celery_app
from tests.redis_server import RedisServer, free_port  # noqa: F401 - re-exported for the tests


def use_broker(url: str) -> None:
    """Point the Celery app's publisher at ``url`` (drops its cached connection pools)."""
    celery_app.conf.broker_url = url
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture(autouse=True)
def broker_down() -> Iterator[str]:
    """By default nothing listens at the broker URL: publishing fails fast, job rows stay
    queued and tests run them by calling the task body."""
    original = celery_app.conf.broker_url
    url = f"redis://127.0.0.1:{free_port()}/0"
    use_broker(url)
    yield url
    use_broker(original)


@pytest.fixture(autouse=True)
def media_root(tmp_path: Path, settings: object) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"  # type: ignore[attr-defined]
    return settings.MEDIA_ROOT  # type: ignore[attr-defined]


@pytest.fixture
def run_jobs() -> Callable[[], int]:
    """Run every queued job now through the task body (as a worker would). Returns jobs run."""

    def run() -> int:
        ran = 0
        for job_id in Job.objects.filter(status=JobStatus.QUEUED).order_by("created_at").values_list("pk", flat=True):
            job_run(str(job_id))
            ran += 1
        return ran

    return run


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()
