"""Faults and load against a throw-away stack of its own (issue 13, item 8).

``python -m research.chaos run`` (``make chaos``) starts a PostgreSQL (its own data folder and
port, the embedded package's binaries), a redis-server, gunicorn, a Celery worker and beat, all
as subprocesses with the project's settings, and runs the scenarios:

- ``pg``: PostgreSQL stopped hard (``-m immediate``) and started again, three times, under
  concurrent record load: every acknowledged (201) trail must be in the database afterwards;
  while it is down every answer is 503 with Retry-After in the error shape (records, /healthz,
  a console page); the time from the database back to the next success;
- ``worker``: the worker SIGKILLed in the middle of an export; a replacement worker (what a
  supervisor starts) and the sweeper complete it;
- ``redis``: Redis stopped: the API answers within 5 s, an export accepted meanwhile completes
  once Redis is back;
- ``disk``: a tiny tmpfs mounted over the export folder (root only): the export fails as
  ``disk_full``, its partial file is gone, records and recalls go on, a small export still fits;
- ``resolver``: a second tenant's resolver (a local TCP server) answers properly while trails
  citing its sections are recorded, then stalls (headers trickled one byte every 200 ms, or
  ``100 Continue`` forever) while that tenant's recalls and records run: every answer is back
  within the tenant's resolver deadline + 1 s, and the first tenant's recalls and records, run at
  the same time, all succeed.

``python -m research.chaos load`` (``make load``): a bounded loopback load (threads, keep-alive
connections, recalls and records mixed) reporting recalls/s, records/s, p50/p99 and errors.

Both print a table and exit non-zero when a check fails. Nothing here is imported by the product.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from cachecore.engine.text import content_hash
from config import embedded_db
from research.localstack import free_port, port_open

BASE_DIR = Path(__file__).resolve().parent.parent
DOCS = {
    f"chaos/manual.md#{n}": f"Acme {topic}: see chapter {n} of the manual for {topic} on every platform."
    for n, topic in enumerate(["installation", "configuration", "passwords", "backups", "sync conflicts",
                               "proxies", "updates", "licences"])
}
REQUEST_TIMEOUT_S = 10.0


def percentile(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


# --------------------------------------------------------------------------------------------
# HTTP


@dataclass
class Answer:
    started: float
    ended: float
    status: int  # 0: no HTTP answer (connection refused or reset, timeout)
    body: Any
    retry_after: str | None
    content_type: str

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    def is_503_with_retry_after(self, *, shape: bool = True) -> bool:
        if self.status != 503 or not (self.retry_after or "").isdigit():
            return False
        if not shape:
            return True
        body = self.body
        return isinstance(body, dict) and {"error", "detail", "fields"} <= body.keys()


class Http:
    """One keep-alive connection (a thread's own), reopened after any failure."""

    def __init__(self, port: int, *, key: str = "", cookie: str = "") -> None:
        self.port, self.key, self.cookie = port, key, cookie
        self.conn: http.client.HTTPConnection | None = None

    def call(self, method: str, path: str, body: Any = None) -> Answer:
        headers = {"Accept": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        if self.cookie:
            headers["Cookie"] = self.cookie
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
            if response.getheader("Connection", "").lower() == "close":
                self.close()
        except (OSError, http.client.HTTPException):
            self.close()
            return Answer(started, time.monotonic(), 0, None, None, "")
        content_type = response.getheader("Content-Type", "")
        parsed: Any = raw
        if content_type.startswith("application/json"):
            with suppress(ValueError):
                parsed = json.loads(raw)
        return Answer(started, time.monotonic(), response.status, parsed, response.getheader("Retry-After"),
                      content_type)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def record_body(query: str, cited: str) -> dict[str, Any]:
    return {"scope": "default", "query": query, "cited": [cited],
            "steps": [{"tool": "search", "args": {"q": query}, "returned": [cited]}],
            "signal": {"source": "caller", "accepted": True}}


# --------------------------------------------------------------------------------------------
# The stack


class Stack:
    """PostgreSQL, Redis, gunicorn, a Celery worker and beat of this run's own, in ``workdir``."""

    def __init__(self, workdir: Path, *, web_workers: int = 2, web_threads: int = 4, heartbeat_timeout_s: int = 10,
                 rate_limits: bool = True) -> None:
        self.workdir = workdir
        self.pgdata = workdir / "pg"
        self.media = workdir / "media"
        self.pg_port, self.redis_port, self.web_port = free_port(), free_port(), free_port()
        self.database_url = f"postgresql://postgres@127.0.0.1:{self.pg_port}/trailcache"
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.web_workers, self.web_threads = web_workers, web_threads
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Any] = {}
        # Limits far above anything sent (the limiter still runs and talks to Redis), or off.
        rate = "100000000" if rate_limits else "0"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "TRAILCACHE_DEV": "true",
            "DATABASE_URL": self.database_url,
            "CELERY_BROKER_URL": self.redis_url,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "TRAILCACHE_INSTANCE": f"chaos-{self.pg_port}",
            "TRAILCACHE_DATA_DIR": str(workdir),
            "TRAILCACHE_MEDIA_ROOT": str(self.media),
            "TRAILCACHE_RATE_PER_KEY_PER_MINUTE": rate,
            "TRAILCACHE_RATE_PER_TENANT_PER_MINUTE": rate,
            # The load run sends more requests at once than one tenant may have (api/middleware.py).
            "TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS": "4" if rate_limits else "0",
            "TRAILCACHE_MAX_ACTIVE_EXPORTS": "10",
            "TRAILCACHE_JOB_HEARTBEAT_TIMEOUT_SECONDS": str(heartbeat_timeout_s),
            "PROMETHEUS_MULTIPROC_DIR": str(workdir / "prometheus"),
        }
        self.key = ""
        self.cookie = ""
        self.worker_count = 0

    # PostgreSQL --------------------------------------------------------------------------
    def _pg(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [embedded_db._bin(args[0]), *args[1:]]
        if os.geteuid() == 0:  # PostgreSQL refuses root: run it as the embedded server's user
            command = ["runuser", "-u", embedded_db.PG_USER, "--", *command]
        return subprocess.run(command, check=True, capture_output=True, text=True)

    def pg_init(self) -> None:
        self.pgdata.mkdir(parents=True)
        os.chmod(self.pgdata, 0o700)
        log = self.workdir / "pg.log"
        log.touch()
        if os.geteuid() == 0:
            embedded_db._ensure_pg_user()
            embedded_db._make_traversable(self.workdir)
            embedded_db._make_traversable(Path(embedded_db._bin("postgres")).parent.parent)
            shutil.chown(self.pgdata, embedded_db.PG_USER, embedded_db.PG_USER)
            shutil.chown(log, embedded_db.PG_USER, embedded_db.PG_USER)
        self._pg("initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                 "--locale=C.UTF-8")
        with open(self.pgdata / "postgresql.conf", "a") as conf:
            conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.pg_port}\nunix_socket_directories = ''\n"
                       "max_connections = 100\nshared_buffers = 64MB\nfsync = on\nsynchronous_commit = on\n")
        self.pg_start()
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.pg_port}/postgres", autocommit=True) as conn:
            conn.execute('CREATE DATABASE "trailcache"')

    def pg_start(self) -> None:
        self._pg("pg_ctl", "-D", str(self.pgdata), "-l", str(self.workdir / "pg.log"), "-w", "-t", "60", "start")

    def pg_stop(self, mode: str = "fast") -> None:
        self._pg("pg_ctl", "-D", str(self.pgdata), "-m", mode, "-w", "-t", "60", "stop")

    def sql(self, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else []

    # Redis ---------------------------------------------------------------------------------
    def redis_start(self) -> None:
        self._spawn("redis", ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"])
        self._wait(lambda: port_open(self.redis_port), "redis-server", 10)

    def redis_stop(self) -> None:
        self._end("redis")

    # The service ---------------------------------------------------------------------------
    def manage(self, *args: str, code: str = "") -> str:
        command = [sys.executable, "manage.py", *args]
        if code:
            command += ["-c", code]
        done = subprocess.run(command, cwd=BASE_DIR, env=self.env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    def web_start(self) -> None:
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        self._spawn("web", [gunicorn, "config.wsgi:application", "--bind", f"127.0.0.1:{self.web_port}",
                            "--workers", str(self.web_workers), "--worker-class", "gthread",
                            "--threads", str(self.web_threads), "--timeout", "60", "--graceful-timeout", "5",
                            "--log-level", "warning"])
        self._wait(lambda: Http(self.web_port).call("GET", "/healthz").status == 200, "gunicorn", 60)

    def worker_start(self) -> str:
        self.worker_count += 1
        name = f"worker{self.worker_count}"
        self._spawn(name, [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
                           "-n", f"{name}@chaos", "--without-heartbeat", "--without-gossip", "--without-mingle",
                           "--loglevel", "INFO"])
        self._wait(lambda: "ready." in self.log_tail(name), f"celery {name}", 60)
        return name

    def beat_start(self) -> None:
        self._spawn("beat", [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
                             "--schedule", str(self.workdir / "beat-schedule")])

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def _spawn(self, name: str, command: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")
        self.logs[name] = log
        self.procs[name] = subprocess.Popen(command, cwd=BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def _end(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def log_tail(self, name: str, chars: int = 20000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def _wait(self, predicate: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{what} did not come up within {timeout:.0f} s")

    # Whole stack ---------------------------------------------------------------------------
    def up(self, *, workers: bool = True) -> None:
        (self.workdir / "prometheus").mkdir(exist_ok=True)
        self.pg_init()
        self.redis_start()
        self.manage("migrate", "--noinput")
        out = self.manage("shell", code=(
            "from django.contrib.auth import get_user_model; from django.test import Client; "
            "from tenants.models import all_key_permissions; "
            "from tenants.caller import tenant_caller; from tenants.services import api_key_create, tenant_create; "
            "t = tenant_create(slug='chaos'); "
            "_, raw = api_key_create(caller=tenant_caller(t), name='chaos', scope_prefixes=[], "
            "permissions=all_key_permissions()); "
            "u = get_user_model().objects.create_superuser('chaos', 'chaos@example.com', 'chaos-pass-123456'); "
            "c = Client(); c.force_login(u); print(raw); print(c.cookies['sessionid'].value)"))
        self.key, session = out.strip().splitlines()[-2:]
        self.cookie = f"sessionid={session}"
        self.web_start()
        if workers:
            self.worker_start()
            self.beat_start()
        self.warm_up()

    def warm_up(self) -> None:
        """Sections, a few trails, and every web worker's first recall (the model loads once)."""
        api = self.api()
        answer = api.call("PUT", "/api/v1/sections", {"sections": [{"id": k, "text": v} for k, v in DOCS.items()]})
        if answer.status != 200:
            raise RuntimeError(f"upsert failed: {answer.status} {answer.body!r}")
        for n, doc in enumerate(DOCS):
            api.call("POST", "/api/v1/trails", record_body(f"warm-up question {n} about {doc}", doc))
        for _ in range(self.web_workers * self.web_threads * 2):
            Http(self.web_port, key=self.key).call("POST", "/api/v1/recall",
                                                   {"scope": "default", "query": "warm-up question 1"})

    def api(self) -> Http:
        return Http(self.web_port, key=self.key)

    def down(self) -> None:
        for name in list(self.procs):
            if name != "redis":
                self._end(name)
        self._end("redis")
        with suppress(subprocess.CalledProcessError, FileNotFoundError):
            if (self.pgdata / "postmaster.pid").exists():
                self.pg_stop("immediate")
        for log in self.logs.values():
            log.close()


@contextmanager
def stack(keep: bool = False, **options: Any) -> Iterator[Stack]:
    workdir = Path(tempfile.mkdtemp(prefix="trailcache-chaos-"))
    os.chmod(workdir, 0o755)
    chaos = Stack(workdir, **options)
    try:
        yield chaos
    finally:
        chaos.down()
        if keep:
            print(f"(stack files kept in {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Scenarios: each returns rows (scenario, check, measured, passed)

Row = tuple[str, str, str, bool]


class RecordLoad:
    """Threads POSTing records as fast as the service answers; every answer kept."""

    def __init__(self, chaos: Stack, threads: int) -> None:
        self.chaos, self.threads = chaos, threads
        self.answers: list[tuple[Answer, str]] = []  # (answer, kind)
        self.acknowledged: list[str] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.pool: list[threading.Thread] = []

    def _run(self, n: int) -> None:
        api = self.chaos.api()
        docs = list(DOCS)
        i = 0
        while not self.stop.is_set():
            i += 1
            answer = api.call("POST", "/api/v1/trails", record_body(f"chaos record {n}-{i} {uuid.uuid4().hex[:8]}",
                                                                    docs[i % len(docs)]))
            with self.lock:
                self.answers.append((answer, "record"))
                if answer.status == 201:
                    self.acknowledged.append(answer.body["trail_id"])
            if answer.status != 201:
                time.sleep(0.05)  # as a client would; keeps a refused connection from spinning

    def _probe(self) -> None:
        health, console = Http(self.chaos.web_port), Http(self.chaos.web_port, cookie=self.chaos.cookie)
        while not self.stop.is_set():
            for kind, http_, path in (("healthz", health, "/healthz"), ("console", console, "/console/")):
                answer = http_.call("GET", path)
                with self.lock:
                    self.answers.append((answer, kind))
            time.sleep(0.1)

    def __enter__(self) -> RecordLoad:
        self.pool = [threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(self.threads)]
        self.pool.append(threading.Thread(target=self._probe, daemon=True))
        for thread in self.pool:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.pool:
            thread.join(timeout=REQUEST_TIMEOUT_S + 5)


def scenario_pg(chaos: Stack, *, restarts: int, down_s: float, up_s: float, threads: int) -> list[Row]:
    windows: list[tuple[float, float]] = []
    with RecordLoad(chaos, threads) as load:
        for _ in range(restarts):
            time.sleep(up_s)
            went_down = time.monotonic()
            chaos.pg_stop("immediate")
            time.sleep(down_s)
            chaos.pg_start()
            windows.append((went_down, time.monotonic()))
        time.sleep(max(up_s, 6.0))  # long enough to see it answer again
    answers = load.answers
    recoveries = []
    for _, back in windows:
        after = [a.ended - back for a, kind in answers if kind == "record" and a.status == 201 and a.ended >= back]
        recoveries.append(min(after) if after else float("inf"))
    ok_statuses = {"record": {201}, "healthz": {200}, "console": {200}}
    failures = [(a, kind) for a, kind in answers if a.status not in ok_statuses[kind]]
    proper = [a for a, kind in failures if a.is_503_with_retry_after(shape=kind != "console")]
    others: dict[str, int] = {}
    for a, kind in failures:
        if not a.is_503_with_retry_after(shape=kind != "console"):
            others[f"{kind}:{a.status or 'no answer'}"] = others.get(f"{kind}:{a.status or 'no answer'}", 0) + 1
    outage_kinds = {kind for a, kind in failures if a.is_503_with_retry_after(shape=kind != "console")}
    acked = load.acknowledged
    found = 0
    for start in range(0, len(acked), 5000):
        chunk = acked[start:start + 5000]
        found += chaos.sql("SELECT count(*) FROM cachecore_trail WHERE id = ANY(%s::uuid[])", [chunk])[0][0]
    lost = len(acked) - found
    worst = max(recoveries) if recoveries else float("inf")
    name = f"PostgreSQL restarted {restarts}x under record load"
    return [
        (name, "acknowledged records lost", f"{lost} of {len(acked)}", lost == 0 and len(acked) > 0),
        (name, "answers again after the database is back (max, per restart)",
         f"{worst:.2f} s ({', '.join(f'{r:.2f}' for r in recoveries)})", worst <= 5.0),
        (name, "answers while down: 503 + Retry-After, error shape",
         f"{len(proper)} (records, /healthz, console: {', '.join(sorted(outage_kinds)) or 'none'})",
         len(proper) > 0 and outage_kinds == {"record", "healthz", "console"}),
        (name, "any other answer (500, HTML, no answer)", json.dumps(others) if others else "0", not others),
    ]


def _export(api: Http, body: dict[str, Any]) -> str:
    answer = api.call("POST", "/api/v1/exports", body)
    if answer.status != 202:
        raise RuntimeError(f"export request answered {answer.status}: {answer.body!r}")
    return str(answer.body["export_id"])


def _export_status(api: Http, export_id: str) -> dict[str, Any]:
    answer = api.call("GET", f"/api/v1/exports/{export_id}")
    if answer.status == 200 and isinstance(answer.body, dict):
        return answer.body
    return {"status": f"http {answer.status}"}


def _wait_export(api: Http, export_id: str, timeout: float, statuses: tuple[str, ...] = ("done", "failed")
                 ) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        status = _export_status(api, export_id)
        if status.get("status") in statuses:
            return status, time.monotonic() - started
        time.sleep(0.2)
    return _export_status(api, export_id), float("inf")


def seed_trails(chaos: Stack, n: int) -> int:
    """``n`` copies of a recorded trail, written in SQL (each with its own id and vector), in
    scope ``bulk``: enough rows for an export that runs for seconds."""
    have = chaos.sql("SELECT count(*) FROM cachecore_trail WHERE scope = 'bulk'")[0][0]
    if have >= n:
        return have
    columns = [r[0] for r in chaos.sql("SELECT column_name FROM information_schema.columns "
                                       "WHERE table_name = 'cachecore_trail' ORDER BY ordinal_position")]
    replaced = {"id": "gen_random_uuid()", "scope": "'bulk'",
                "query": "t.query || ' #' || g", "query_normalised": "t.query_normalised || ' #' || g",
                "embedding": ("(SELECT array_agg(random() - 0.5 + 0 * i)::real[] "
                              "FROM generate_series(1, 384) i WHERE g > 0)::vector"),
                "created_at": "now() - make_interval(secs => g)"}
    select = ", ".join(replaced.get(c, f"t.{c}") for c in columns)
    chaos.sql(f"INSERT INTO cachecore_trail ({', '.join(columns)}) SELECT {select} "  # noqa: S608 - column names from the catalogue
              "FROM (SELECT * FROM cachecore_trail WHERE scope = 'default' LIMIT 1) t, generate_series(1, %s) g",
              [n - have])
    return n


def scenario_worker(chaos: Stack, *, rows: int) -> list[Row]:
    name = "worker SIGKILLed mid-export"
    total = seed_trails(chaos, rows)
    api = chaos.api()
    export_id = _export(api, {"format": "jsonl", "scope": "bulk"})
    worker = next(n for n in chaos.procs if n.startswith("worker"))
    # Kill once the job has written at least one batch (it is mid-file).
    deadline = time.monotonic() + 60
    progress = 0
    while time.monotonic() < deadline:
        row = chaos.sql("SELECT status, progress_done FROM cachecore_job WHERE id = %s", [export_id])
        if row and row[0][0] == "running" and row[0][1] > 0:
            progress = row[0][1]
            break
        if row and row[0][0] in {"done", "failed"}:
            return [(name, "killed mid-job", f"the export finished first ({row[0][0]}): seed more rows", False)]
        time.sleep(0.02)
    killed_at = time.monotonic()
    chaos.kill(worker)
    chaos.worker_start()  # what a supervisor does
    status, _ = _wait_export(api, export_id, timeout=240)
    took = time.monotonic() - killed_at
    attempts = chaos.sql("SELECT attempts FROM cachecore_job WHERE id = %s", [export_id])[0][0]
    return [
        (name, "killed at rows written", f"{progress} of {total}", progress > 0),
        (name, "the job completes on the replacement worker",
         f"{status.get('status')}, {status.get('rows')} rows, attempt {attempts}, {took:.1f} s after the kill",
         status.get("status") == "done" and status.get("rows") == total),
    ]


def scenario_redis(chaos: Stack) -> list[Row]:
    name = "Redis down"
    api = chaos.api()
    chaos.redis_stop()
    answers: list[tuple[str, Answer]] = []
    export_id = ""
    for i in range(5):
        answers.append(("record", api.call("POST", "/api/v1/trails",
                                           record_body(f"while redis is down {i}", list(DOCS)[i]))))
        answers.append(("recall", api.call("POST", "/api/v1/recall",
                                           {"scope": "default", "query": f"while redis is down {i}"})))
        answers.append(("healthz", Http(chaos.web_port).call("GET", "/healthz")))
    export = api.call("POST", "/api/v1/exports", {"format": "csv", "scope": "default"})
    answers.append(("export", export))
    if export.status == 202:
        export_id = export.body["export_id"]
    expected = {"record": 201, "recall": 200, "healthz": 200, "export": 202}
    slowest = max(a.seconds for _, a in answers)
    wrong = [f"{kind}:{a.status}" for kind, a in answers if a.status != expected[kind]]
    time.sleep(2)
    back = time.monotonic()
    chaos.redis_start()
    status, _ = _wait_export(api, export_id, timeout=180) if export_id else ({"status": "not accepted"}, 0.0)
    took = time.monotonic() - back
    return [
        (name, "API answers within 5 s (records, recalls, /healthz, export)",
         f"slowest {slowest:.2f} s; {len(answers) - len(wrong)} of {len(answers)} as usual"
         + (f" ({', '.join(wrong)})" if wrong else ""), slowest <= 5.0 and not wrong),
        (name, "export accepted while down completes after Redis is back",
         f"{status.get('status')} {took:.1f} s after Redis returned", status.get("status") == "done"),
    ]


def scenario_disk(chaos: Stack, *, rows: int) -> list[Row]:
    name = "disk full during an export"
    if os.geteuid() != 0:
        return [(name, "tmpfs over the export folder", "not run: mounting a tmpfs needs root", True)]
    seed_trails(chaos, rows)
    exports = chaos.media / "exports"
    exports.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(exports)], check=True)
    try:
        api = chaos.api()
        export_id = _export(api, {"format": "jsonl", "scope": "bulk"})
        others: list[Answer] = []
        # Long enough for a message lost with a broker restart just before (the scenario runs
        # after ``redis`` by default): the minute sweep plus REPUBLISH_AFTER (90 s).
        deadline = time.monotonic() + 200
        while True:
            others.append(api.call("POST", "/api/v1/trails", record_body(f"disk full {uuid.uuid4().hex}",
                                                                           list(DOCS)[0])))
            others.append(api.call("POST", "/api/v1/recall", {"scope": "default", "query": "disk full"}))
            others.append(Http(chaos.web_port).call("GET", "/healthz"))
            status = _export_status(api, export_id)
            if status.get("status") in {"done", "failed"} or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        leftovers = [p.name for p in exports.rglob("*") if p.is_file()]
        small_id = _export(api, {"format": "csv", "scope": "default", "subject": "nobody"})
        small, _ = _wait_export(api, small_id, timeout=200)
        bad = [a.status for a in others if a.status not in {200, 201}]
    finally:
        subprocess.run(["umount", str(exports)], check=False)
    return [
        (name, "the export fails with a clear error", f"{status.get('status')}: {status.get('error')!r}",
         status.get("status") == "failed" and status.get("error") == "disk_full"),
        (name, "no partial file left on the full volume", f"{len(leftovers)} files", not leftovers),
        (name, "other requests meanwhile (records, recalls, /healthz)",
         f"{len(others) - len(bad)} of {len(others)} fine", not bad),
        (name, "a small export afterwards, same volume", str(small.get("status")), small.get("status") == "done"),
    ]


# --------------------------------------------------------------------------------------------
# Load


class StallingResolver:
    """A tenant's resolver on loopback: answers every id with the hash of its text while ``ok``
    is set, and otherwise stalls (alternately: a header trickled one byte every 200 ms, or
    ``100 Continue`` forever) until the client hangs up."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.ok = threading.Event()
        self.ok.set()
        self.stop = threading.Event()
        self.stalled = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/resolve"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, suppress(OSError):
            conn.settimeout(5)
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                request += chunk
            head, _, body = request.partition(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            if self.ok.is_set():
                ids = json.loads(body)["ids"]
                answer = json.dumps({"sections": [{"id": i, "hash": content_hash(self.texts[i])}
                                                  for i in ids if i in self.texts]}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer))
                return
            self.stalled += 1
            if self.stalled % 2:
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                piece, pause = b"x", 0.2
            else:
                piece, pause = b"HTTP/1.1 100 Continue\r\n\r\n", 0.05
            deadline = time.monotonic() + 60
            while not self.stop.is_set() and time.monotonic() < deadline:
                conn.sendall(piece)
                time.sleep(pause)

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


def scenario_resolver(chaos: Stack, *, duration_s: float, threads: int, timeout_ms: int = 2000) -> list[Row]:
    name = f"a tenant's resolver stalls (deadline {timeout_ms} ms)"
    remote = {f"remote/manual.md#{n}": f"Remote chapter {n} of the manual." for n in range(6)}
    server = StallingResolver(remote)
    try:
        out = chaos.manage("shell", code=(
            "from tenants.caller import tenant_caller; from tenants.services import api_key_create, tenant_create; "
            f"t = tenant_create(slug='stalled-{uuid.uuid4().hex[:6]}'); "
            f"t.resolver_url = {server.url!r}; t.resolver_secret = 'chaos-resolver-secret'; "
            f"t.resolver_timeout_ms = {timeout_ms}; t.full_clean(); t.save(); "
            "_, raw = api_key_create(caller=tenant_caller(t), name='chaos', scope_prefixes=[]); print(raw)"))
        stalled_key = out.strip().splitlines()[-1]
        setup = Http(chaos.web_port, key=stalled_key)
        for n, doc in enumerate(remote):
            answer = setup.call("POST", "/api/v1/trails", record_body(f"remote question {n} about {doc}", doc))
            if answer.status != 201:
                measured = f"{answer.status} {answer.body!r}"[:300]
                return [(name, "trails citing the resolver's sections recorded", measured, False)]
        server.ok.clear()  # from here on every call to it stalls
        answers: list[tuple[Answer, str]] = []
        lock = threading.Lock()
        stop = threading.Event()

        def stalled_tenant(n: int) -> None:
            api = Http(chaos.web_port, key=stalled_key)
            docs = list(remote)
            i = 0
            while not stop.is_set():
                i += 1
                doc = docs[i % len(docs)]
                if i % 2:
                    answer = api.call("POST", "/api/v1/recall",
                                      {"scope": "default", "query": f"remote question {i % len(docs)} about {doc}"})
                    kind = "stalled recall"
                else:
                    answer = api.call("POST", "/api/v1/trails", record_body(f"stalled record {n}-{i}", doc))
                    kind = "stalled record"
                with lock:
                    answers.append((answer, kind))

        def other_tenant(n: int) -> None:
            api = chaos.api()
            docs = list(DOCS)
            i = 0
            while not stop.is_set():
                i += 1
                if i % 2:
                    answer = api.call("POST", "/api/v1/recall",
                                      {"scope": "default", "query": f"warm-up question {i % 8}"})
                    kind = "other recall"
                else:
                    answer = api.call("POST", "/api/v1/trails",
                                      record_body(f"other record {n}-{i} {uuid.uuid4().hex[:6]}", docs[i % len(docs)]))
                    kind = "other record"
                with lock:
                    answers.append((answer, kind))

        pool = [threading.Thread(target=stalled_tenant, args=(n,), daemon=True) for n in range(threads)]
        pool += [threading.Thread(target=other_tenant, args=(n,), daemon=True) for n in range(max(1, threads // 2))]
        for thread in pool:
            thread.start()
        time.sleep(duration_s)
        stop.set()
        for thread in pool:
            thread.join(timeout=REQUEST_TIMEOUT_S + 5)
    finally:
        server.close()
    stalled = [a for a, kind in answers if kind.startswith("stalled")]
    others = [a for a, kind in answers if kind.startswith("other")]
    bound = timeout_ms / 1000 + 1.0
    slowest = max((a.seconds for a in stalled), default=float("inf"))
    no_answer = sum(1 for a in stalled if a.status == 0)
    stalled_statuses: dict[str, int] = {}
    for a, kind in answers:
        if kind.startswith("stalled"):
            stalled_statuses[f"{kind}:{a.status}"] = stalled_statuses.get(f"{kind}:{a.status}", 0) + 1
    other_failures = [a for a in others if a.status not in {200, 201}]
    other_p99 = percentile([a.seconds for a in others], 0.99) if others else float("inf")
    return [
        (name, "calls that reached the stalling resolver", str(server.stalled), server.stalled > 0),
        (name, f"every answer of its tenant within {bound:.1f} s (slowest)",
         f"{slowest:.2f} s over {len(stalled)} answers, {no_answer} without one; {json.dumps(stalled_statuses)}",
         bool(stalled) and slowest <= bound and no_answer == 0),
        (name, "another tenant's recalls and records meanwhile",
         f"{len(others) - len(other_failures)} of {len(others)} succeeded, p99 {other_p99:.2f} s",
         bool(others) and not other_failures),
    ]


def run_load(chaos: Stack, *, duration_s: float, concurrency: int, record_share: float, trails: int) -> list[Row]:
    api = chaos.api()
    docs = list(DOCS)
    questions = [f"how do I handle {doc.split('#')[1]} case {i}" for i in range(trails) for doc in docs[:1]]
    for i, question in enumerate(questions):
        api.call("POST", "/api/v1/trails", record_body(question, docs[i % len(docs)]))
    samples: dict[str, list[float]] = {"recall": [], "record": []}
    errors: dict[str, int] = {}
    lock = threading.Lock()
    stop_at = time.monotonic() + duration_s

    def client(n: int) -> None:
        rng = random.Random(n)
        http_ = chaos.api()
        i = 0
        while time.monotonic() < stop_at:
            i += 1
            if rng.random() < record_share:
                kind, answer = "record", http_.call("POST", "/api/v1/trails", record_body(
                    f"load {n}-{i} {rng.choice(questions)}", rng.choice(docs)))
                good = answer.status == 201
            else:
                query = rng.choice(questions) if rng.random() < 0.7 else f"something else entirely {rng.random()}"
                kind, answer = "recall", http_.call("POST", "/api/v1/recall", {"scope": "default", "query": query})
                good = answer.status == 200
            with lock:
                samples[kind].append(answer.seconds * 1000)
                if not good:
                    errors[f"{kind}:{answer.status}"] = errors.get(f"{kind}:{answer.status}", 0) + 1

    started = time.monotonic()
    pool = [threading.Thread(target=client, args=(n,)) for n in range(concurrency)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.monotonic() - started
    name = f"load {duration_s:.0f} s, {concurrency} clients, {record_share:.0%} records"
    rows: list[Row] = []
    for kind in ("recall", "record"):
        ms = samples[kind]
        rows.append((name, f"{kind}s/s", f"{len(ms) / elapsed:.1f} ({len(ms)} in {elapsed:.1f} s)", len(ms) > 0))
        rows.append((name, f"{kind} p50 / p99", f"{percentile(ms, 50):.1f} / {percentile(ms, 99):.1f} ms", True))
    total_errors = sum(errors.values())
    rows.append((name, "errors", json.dumps(errors) if errors else "0", total_errors == 0))
    return rows


# --------------------------------------------------------------------------------------------


def render(rows: list[Row]) -> str:
    headers = ("scenario", "check", "measured", "result")
    table = [headers, *[(s, c, m, "PASS" if ok else "FAIL") for s, c, m, ok in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = [" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)) for r in table]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.chaos", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    run = sub.add_parser("run", help="the fault scenarios")
    run.add_argument("--scenarios", default="pg,worker,redis,disk,resolver",
                     help="comma-separated, run in this order: pg, worker, redis, disk, resolver")
    run.add_argument("--stall-seconds", type=float, default=20.0, help="load while a tenant's resolver stalls")
    run.add_argument("--restarts", type=int, default=3)
    run.add_argument("--down-seconds", type=float, default=3.0, help="how long PostgreSQL stays down each time")
    run.add_argument("--up-seconds", type=float, default=4.0, help="load between restarts")
    run.add_argument("--threads", type=int, default=4, help="concurrent record clients")
    run.add_argument("--rows", type=int, default=30000, help="trails seeded for the export scenarios")
    load = sub.add_parser("load", help="a bounded loopback load run")
    load.add_argument("--duration", type=float, default=120.0, help="seconds")
    load.add_argument("--concurrency", type=int, default=8)
    load.add_argument("--record-share", type=float, default=0.2)
    load.add_argument("--trails", type=int, default=300, help="trails recorded before the run")
    for p in (run, load):
        p.add_argument("--web-workers", type=int, default=2)
        p.add_argument("--web-threads", type=int, default=4)
        p.add_argument("--keep", action="store_true", help="keep the stack's folder (logs) afterwards")
        p.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)

    rows: list[Row] = []
    started = time.monotonic()
    with stack(keep=args.keep, web_workers=args.web_workers, web_threads=args.web_threads,
               rate_limits=args.mode == "run") as chaos:
        if args.mode == "load":
            chaos.up(workers=False)
            rows += run_load(chaos, duration_s=args.duration, concurrency=args.concurrency,
                             record_share=args.record_share, trails=args.trails)
        else:
            wanted = [s.strip() for s in args.scenarios.split(",") if s.strip()]
            unknown = set(wanted) - {"pg", "worker", "redis", "disk", "resolver"}
            if unknown:
                parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
            chaos.up(workers=True)
            for scenario in wanted:
                print(f"… {scenario}", file=sys.stderr, flush=True)
                try:
                    if scenario == "pg":
                        rows += scenario_pg(chaos, restarts=args.restarts, down_s=args.down_seconds,
                                            up_s=args.up_seconds, threads=args.threads)
                    elif scenario == "worker":
                        rows += scenario_worker(chaos, rows=args.rows)
                    elif scenario == "redis":
                        rows += scenario_redis(chaos)
                    elif scenario == "disk":
                        rows += scenario_disk(chaos, rows=args.rows)
                    elif scenario == "resolver":
                        rows += scenario_resolver(chaos, duration_s=args.stall_seconds, threads=args.threads)
                except Exception as exc:  # a scenario that could not run is a failed row, the others still run
                    rows.append((scenario, "ran", f"{type(exc).__name__}: {exc}"[:300], False))
    print(render(rows))
    print(f"({time.monotonic() - started:.0f} s, {os.cpu_count()} cores)")
    if args.json:
        args.json.write_text(json.dumps([{"scenario": s, "check": c, "measured": m, "passed": ok}
                                         for s, c, m, ok in rows], indent=2))
    return 0 if rows and all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
