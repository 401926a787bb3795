"""With a real redis-server and a real Celery worker process, both started here: an export
end to end, and jobs accepted while the broker was down completing once it is back."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from cachecore.models import Job, JobKind, JobStatus, Section
from tests.background.conftest import RedisServer, use_broker
from tests.factories import make_trail

pytestmark = [pytest.mark.live_broker, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


def _test_database_url() -> str:
    """The test database, on whatever server this run uses (embedded port or DATABASE_URL)."""
    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="") + (":" + quote(db["PASSWORD"], safe="") if db["PASSWORD"] else "")
    return f"postgresql://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    def __init__(self, *, broker_url: str, media_root: Path, log_path: Path) -> None:
        self.broker_url, self.media_root, self.log_path = broker_url, media_root, log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": _test_database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "TRAILCACHE_MEDIA_ROOT": str(self.media_root),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo", "--without-heartbeat",
             "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            self.log.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


@pytest.fixture
def worker_factory(tmp_path: Path, media_root: Path) -> Iterator[Callable[[str], Worker]]:
    workers: list[Worker] = []

    def make(broker_url: str) -> Worker:
        worker = Worker(broker_url=broker_url, media_root=media_root, log_path=tmp_path / f"worker{len(workers)}.log")
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.stop()


def wait_for(predicate: Callable[[], bool], *, timeout: float, worker: Worker) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out; worker log:\n{worker.output()}")


def test_export_end_to_end_through_a_real_broker_and_worker(caller, redis_server: RedisServer, worker_factory):
    redis_server.start()
    use_broker(redis_server.url)
    worker = worker_factory(redis_server.url)
    worker.start()
    for i in range(25):
        make_trail(caller.tenant, query=f"question {i}", subject="alice" if i % 2 else "")

    response = caller.post("/api/v1/exports", {"format": "csv", "subject": "alice"})
    assert response.status_code == 202
    export_id = response.json()["export_id"]
    assert Job.objects.get(pk=export_id).enqueued_at is not None  # published after commit

    wait_for(lambda: caller.get(f"/api/v1/exports/{export_id}").json()["status"] == "done", timeout=60,
             worker=worker)
    status = caller.get(f"/api/v1/exports/{export_id}").json()
    assert status["progress"] == {"done": 12, "total": 12}
    download = caller.get(status["download_url"])
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert len(rows) == 12 and {r["subject"] for r in rows} == {"alice"}


def test_jobs_accepted_while_the_broker_is_down_complete_when_it_is_back(caller, settings, redis_server,
                                                                         worker_factory, monkeypatch):
    from cachecore.tasks import job_run

    settings.TRAILCACHE_SYNC_CHUNK_LIMIT = 0  # every upsert embeds its chunks in a job
    redis_server.start()
    use_broker(redis_server.url)
    caller.upsert({"doc#warmup": "The publisher's connection to the broker is open now."})
    redis_server.stop()  # the broker goes away under an open connection (and its message with it)
    before = set(Job.objects.values_list("pk", flat=True))
    publishes: list[tuple[str, object]] = []
    real_apply_async = job_run.apply_async

    def counted(args=None, kwargs=None, **options):
        publishes.append((args[0], options.get("retry")))
        return real_apply_async(args, kwargs, **options)

    monkeypatch.setattr(job_run, "apply_async", counted)
    upsert = caller.upsert({"doc#config": "Acme reads its configuration from /etc/acme/acme.toml."})
    export = caller.post("/api/v1/exports", {"format": "jsonl"})
    record = caller.record(query="Where does Acme read its configuration?", cited=["doc#config"])
    recall = caller.recall("Where does Acme read its configuration?")
    monkeypatch.undo()
    assert upsert["created"] == 1 and export.status_code == 202 and record.status_code == 201
    assert recall["outcome"] == "prefetch" and recall["coverage"] is None  # chunks not ready: coverage unknown
    # The requests did not wait on the broker: one attempt per job, no retry loop (the transport's
    # own timeouts bound that attempt), and the rows wait for the sweeper.
    assert sorted(publishes) == sorted((str(pk), False) for pk in Job.objects.exclude(pk__in=before)
                                       .values_list("pk", flat=True))
    accepted = Job.objects.exclude(pk__in=before)
    assert {(j.kind, j.status, j.enqueued_at) for j in accepted} == {
        (JobKind.SECTION_CHUNKS, JobStatus.QUEUED, None), (JobKind.EXPORT, JobStatus.QUEUED, None)}

    redis_server.start()  # same port: the broker is back
    worker = worker_factory(redis_server.url)
    worker.start()  # picks up the rows that never reached the broker
    wait_for(lambda: not accepted.exclude(status=JobStatus.DONE).exists(), timeout=60, worker=worker)
    assert Section.objects.get(tenant=caller.tenant, external_id="doc#config").chunks_ready
    assert Job.objects.get(pk=export.json()["export_id"]).result["rows"] == 1
    assert caller.recall("Where does Acme read its configuration?")["coverage"] is not None


def test_a_job_whose_message_a_broker_restart_lost_completes_after_the_republish(caller, redis_server,
                                                                                 worker_factory):
    from datetime import timedelta

    from django.utils import timezone

    from cachecore.services import jobs

    redis_server.start()
    use_broker(redis_server.url)
    make_trail(caller.tenant, query="a question")
    export = caller.post("/api/v1/exports", {"format": "csv"})
    job = Job.objects.get(pk=export.json()["export_id"])
    assert job.enqueued_at is not None  # the broker took the message; no worker ran it yet
    redis_server.stop()  # keeps nothing on disk: the message is gone
    redis_server.start()
    worker = worker_factory(redis_server.url)
    worker.start()
    time.sleep(3)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # nothing to deliver
    assert jobs.jobs_requeue(min_age_seconds=0) == 0  # published recently: not yet republished
    Job.objects.filter(pk=job.pk).update(enqueued_at=timezone.now() - jobs.REPUBLISH_AFTER - timedelta(seconds=1))
    assert jobs.jobs_requeue(min_age_seconds=0) == 1
    wait_for(lambda: caller.get(f"/api/v1/exports/{job.pk}").json()["status"] == "done", timeout=60,
             worker=worker)
