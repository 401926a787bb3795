"""``manage.py bench``: seed a dedicated database and measure recall, records, embedding and the
HTTP service (see research.bench). Never touches the dev database: the command creates
``trailcache_bench`` (or ``--database``) on the same server, then runs itself again against it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from research.localstack import with_database

CHILD_ENV = "TRAILCACHE_BENCH_CHILD"


def _server_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if url:
        return url
    from config import embedded_db

    return embedded_db.ensure_running()


def _default_db_name(url: str) -> str:
    if not os.environ.get("DATABASE_URL"):
        return "trailcache_bench"
    current = urlsplit(url).path.lstrip("/") or "trailcache"
    return current if current.endswith("_bench") else f"{current}_bench"


def _create_database(url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


class Command(BaseCommand):
    help = "Benchmark recall, records, embedding and HTTP on a seeded database of its own."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--trails", type=int, default=100_000)
        parser.add_argument("--tenants", type=int, default=100)
        parser.add_argument("--real-trails", type=int, default=None,
                            help="trails with real embeddings (probes); default trails/30, 50..3000")
        parser.add_argument("--recalls", type=int, default=1000, help="timed in-process recalls")
        parser.add_argument("--recalls-full", type=int, default=300, help="timed services.recall calls")
        parser.add_argument("--knn-per-bucket", type=int, default=40,
                            help="queries per scope-size bucket for the forced exact/HNSW comparison")
        parser.add_argument("--records", type=int, default=200)
        parser.add_argument("--http-requests", type=int, default=1000)
        parser.add_argument("--http-records", type=int, default=400)
        parser.add_argument("--http-time-limit", type=float, default=30.0)
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
        parser.add_argument("--worker-class", default="sync")
        parser.add_argument("--threads", type=int, default=1)
        parser.add_argument("--concurrency", type=int, default=8)
        parser.add_argument("--no-http", action="store_true")
        parser.add_argument("--reseed", action="store_true", help="seed again even when parameters match")
        parser.add_argument("--maintenance-work-mem", default="", help="for the index builds, e.g. 4GB")
        parser.add_argument("--database", default="", help="bench database name (default trailcache_bench)")
        parser.add_argument("--out", default="", help="JSON report path (default reports/bench/bench.json)")

    def handle(self, *args: object, **opts: object) -> None:
        if os.environ.get(CHILD_ENV) != "1":
            self._reexec()
            return
        from research.bench import report
        from research.bench.runner import BenchConfig, default_report_path, run_bench

        call_command("migrate", verbosity=0, interactive=False)
        cfg = BenchConfig(
            trails=opts["trails"], tenants=opts["tenants"], real_trails=opts["real_trails"],
            recalls=opts["recalls"], recalls_full=opts["recalls_full"], records=opts["records"],
            knn_per_bucket=opts["knn_per_bucket"],
            http=not opts["no_http"], http_requests=opts["http_requests"], http_records=opts["http_records"],
            http_time_limit_s=opts["http_time_limit"], workers=opts["workers"], worker_class=opts["worker_class"],
            threads=opts["threads"], concurrency=opts["concurrency"], reseed=opts["reseed"],
            maintenance_work_mem=opts["maintenance_work_mem"], database_url=os.environ.get("DATABASE_URL", ""),
        )
        if cfg.trails < cfg.tenants * 5:
            raise CommandError("need at least 5 trails per tenant")

        def log(msg: str) -> None:
            self.stdout.write(msg)
            self.stdout.flush()

        result = run_bench(cfg, log=log)
        path = report.write_json(result, Path(opts["out"]) if opts["out"] else default_report_path())
        self.stdout.write("")
        self.stdout.write(report.render_table(result))
        self.stdout.write(f"\nJSON report: {path}")

    def _reexec(self) -> None:
        url = _server_url()
        name = str(settings.DATABASES["default"]["NAME"])
        bench_name = os.environ.get("TRAILCACHE_BENCH_DB") or ""
        argv = sys.argv[1:]
        for i, arg in enumerate(argv):
            if arg == "--database" and i + 1 < len(argv):
                bench_name = argv[i + 1]
            elif arg.startswith("--database="):
                bench_name = arg.split("=", 1)[1]
        bench_name = bench_name or _default_db_name(url)
        if bench_name == name and not bench_name.endswith("_bench"):
            raise CommandError(f"refusing to benchmark in the working database {name!r}")
        _create_database(url, bench_name)
        env = dict(os.environ, DATABASE_URL=with_database(url, bench_name), **{CHILD_ENV: "1"})
        # No query-vector cache in the bench's processes or its gunicorn workers (unless asked):
        # the timed questions repeat across phases, and every figure is the model's own cost.
        env.setdefault("TRAILCACHE_EMBEDDING_CACHE_SIZE", "0")
        self.stdout.write(f"bench database: {bench_name}")
        code = subprocess.call([sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *argv], env=env)
        if code:
            raise CommandError(f"bench exited with status {code}")
