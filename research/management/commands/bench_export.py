"""``manage.py bench_export``: seed a tenant with N trails in bulk (synthetic unit vectors,
two citations each), time a CSV/JSONL export of all of them through the job body the worker
runs, and report rows/s and the process's peak memory while exporting."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import numpy as np
import psutil
from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.utils import timezone

from cachecore.embedding import DIMENSIONS
from cachecore.models import Citation, Job, JobKind, Trail, TrailStatus
from cachecore.services.jobs import job_create, job_execute
from tenants.models import Tenant
from tenants.services import tenant_create


class _PeakRss:
    def __init__(self) -> None:
        self.process = psutil.Process()
        self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Command(BaseCommand):
    help = "Seed N trails in bulk and time an export of them (rows/s, peak RSS)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--trails", type=int, default=100_000)
        parser.add_argument("--format", choices=["csv", "jsonl"], default="csv")
        parser.add_argument("--keep", action="store_true", help="keep the bench tenant for another run")

    def _seed(self, tenant: Tenant, n: int) -> None:
        rng = np.random.default_rng(1)
        now = timezone.now()
        batch = 5000
        for start in range(0, n, batch):
            size = min(batch, n - start)
            vectors = rng.standard_normal((size, DIMENSIONS)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            trails = [
                Trail(id=uuid.uuid4(), tenant=tenant, scope=f"group:{i % 10}", query=f"synthetic question {start + i}",
                      query_normalised=f"synthetic question {start + i}", embedding=vectors[i],
                      steps=[{"tool": "search", "args": {"q": "x"}, "returned": ["doc#1", "doc#2"]}],
                      status=TrailStatus.ACTIVE, subject=f"user-{i % 100}", hits=i % 7,
                      expires_at=now + timedelta(days=90))
                for i in range(size)
            ]
            with transaction.atomic():
                Trail.objects.bulk_create(trails)
                Citation.objects.bulk_create([
                    Citation(trail=t, tenant=tenant, section_id=f"doc#{p + (j % 50)}", position=p,
                             recorded_hash="0" * 64)
                    for j, t in enumerate(trails) for p in range(2)
                ])
            self.stdout.write(f"  seeded {start + size}/{n}")

    def handle(self, *args: Any, **options: Any) -> None:
        n = options["trails"]
        slug = f"bench-export-{n}"
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None or Trail.objects.filter(tenant=tenant).count() != n:
            if tenant is not None:
                self._drop(tenant)
            tenant = tenant_create(slug=slug)
            started = time.perf_counter()
            self._seed(tenant, n)
            self.stdout.write(f"seeded {n} trails in {time.perf_counter() - started:.1f}s")
        job = job_create(tenant=tenant, kind=JobKind.EXPORT, params={"format": options["format"]},
                         actor_label="bench")
        baseline = psutil.Process().memory_info().rss
        with _PeakRss() as rss:
            started = time.perf_counter()
            job_execute(job_id=str(job.pk))
            elapsed = time.perf_counter() - started
        job = Job.objects.get(pk=job.pk)
        rows = job.result.get("rows", 0)
        self.stdout.write(
            f"export {options['format']}: {rows} rows, {job.result.get('bytes', 0) / 1e6:.1f} MB in {elapsed:.2f}s "
            f"= {rows / elapsed:,.0f} rows/s; RSS before {baseline / 2**20:.0f} MiB, peak {rss.peak / 2**20:.0f} MiB "
            f"(+{(rss.peak - baseline) / 2**20:.0f} MiB); status {job.status}"
        )
        if not options["keep"]:
            self._drop(tenant)

    def _drop(self, tenant: Tenant) -> None:
        with connection.cursor() as cur:
            cur.execute("DELETE FROM cachecore_citation WHERE tenant_id = %s", [tenant.pk])
            cur.execute("DELETE FROM cachecore_trail WHERE tenant_id = %s", [tenant.pk])
        Job.objects.filter(tenant=tenant).delete()
        tenant.delete()
