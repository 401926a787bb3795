"""`make cluster-demo`: two web nodes and two Celery workers against one PostgreSQL and one Redis.

    .venv/bin/python scripts/cluster_demo.py [--records 40] [--exports 8] [--database NAME]

What it starts (and stops again; nothing else is touched):
- a throw-away redis-server on a free port (the broker and the shared breaker/rate-limit store);
- two gunicorn web processes (production mode, one random secret key shared by both) on two
  free ports, and two Celery workers (``demo1@…``, ``demo2@…``), all with the same
  ``DATABASE_URL``, ``CELERY_BROKER_URL`` and ``TRAILCACHE_INSTANCE``.
The database: ``DATABASE_URL``'s server when set, else the embedded server (started if
needed), in a database of the demo's own (``trailcache_cluster_demo``, created and migrated;
the working database is never used). Each run makes its own two tenants.

It records trails through both nodes, recalls each one from the *other* node, requests
exports through both and waits for them; then checks that every acknowledged record is a row
in the database and was recalled (prefetch of that trail) from the node that did not write it,
that every export finished, and that both workers ran jobs (the worker's log line
``job … on worker …``). Prints a table; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/cluster_demo.py`: sys.path[0] is scripts/
    sys.path.insert(0, str(ROOT))

from research.localstack import free_port, port_open, with_database  # noqa: E402 - needs ROOT on sys.path

BIN = Path(sys.executable).parent
DEFAULT_DATABASE = "trailcache_cluster_demo"
JOB_LINE = re.compile(r"job (?P<job>[0-9a-f-]{36}) \((?P<kind>\w+)\) (?P<status>\w+) on worker (?P<worker>\S+)")


def database_url(name: str) -> str:
    """DATABASE_URL's server, else the embedded one (started when it is not running)."""
    base = os.environ.get("DATABASE_URL", "")
    if not base:
        subprocess.run([sys.executable, "-m", "config.embedded_db", "start"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        base = subprocess.run([sys.executable, "-m", "config.embedded_db", "url"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
    return with_database(base, name)


def ensure_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(with_database(url, "postgres"), autocommit=True, connect_timeout=5) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


class Cluster:
    """The processes this demo started, stopped in reverse order by their own handles."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> Path:
        log = self.workdir / f"{name}.log"
        fh = open(log, "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        fh.close()
        self.procs.append((name, proc))
        return log

    def check_alive(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def call(port: int, method: str, path: str, key: str, body: object | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        return response.status, (json.loads(raw) if raw else {})
    finally:
        conn.close()


def wait_until(what: str, ready, cluster: Cluster, timeout: float = 60.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not ready():
        cluster.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout:.0f} s")
        time.sleep(0.1)


SETUP_CODE = """
import json, secrets, django
django.setup()
from tenants.caller import tenant_caller
from tenants.models import all_key_permissions
from tenants.services import api_key_create, tenant_create
out = []
for i in range(2):
    tenant = tenant_create(slug=f"cluster-{secrets.token_hex(4)}-{i}")
    _, raw = api_key_create(caller=tenant_caller(tenant), name="cluster-demo", permissions=all_key_permissions())
    out.append({"tenant_id": str(tenant.pk), "slug": tenant.slug, "key": raw})
print(json.dumps(out))
"""


# Read through the ORM (whatever the trails table looks like): trail id -> tenant id.
STORED_CODE = """
import json, sys, django
django.setup()
from cachecore.models import Trail
ids = json.load(sys.stdin)
print(json.dumps({str(t): str(n) for t, n in Trail.objects.filter(pk__in=ids).values_list("pk", "tenant_id")}))
"""


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="trailcache-cluster-"))
    cluster = Cluster(workdir)
    try:
        db_url = database_url(args.database)
        ensure_database(db_url)
        redis_port = free_port()
        cluster.start("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no"], dict(os.environ))
        wait_until("redis-server", lambda: port_open(redis_port), cluster, 10)
        instance = f"tc-cluster-demo-{secrets.token_hex(3)}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "CELERY_"))}
        env.update({
            "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": db_url,
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0", "TRAILCACHE_INSTANCE": instance,
            # Production mode, as a deployment runs: one secret key shared by every node.
            "TRAILCACHE_DEV": "false", "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
            # Export files on storage every node shares (one folder here; a shared volume across machines).
            "TRAILCACHE_DATA_DIR": str(workdir / "data"), "TRAILCACHE_MEDIA_ROOT": str(workdir / "media"),
            "TRAILCACHE_MAX_ACTIVE_EXPORTS": str(max(3, args.exports)),
            "PYTHONUNBUFFERED": "1",
        })
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        tenants = json.loads(subprocess.run([sys.executable, "-c", SETUP_CODE], cwd=ROOT, env=env, check=True,
                                            capture_output=True, text=True).stdout)

        web_ports = [free_port(), free_port()]
        for i, port in enumerate(web_ports, 1):
            cluster.start(f"web{i}", [str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
                                      "--workers", "1", "--log-level", "warning", "--graceful-timeout", "5"], env)
        worker_logs = {}
        for i in (1, 2):
            worker_logs[f"demo{i}"] = cluster.start(f"worker{i}", [
                str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", "1",
                "--pool", "solo", "-n", f"demo{i}@%h", "--without-gossip", "--without-mingle"], env)

        def healthy(port: int) -> bool:
            try:
                return call(port, "GET", "/healthz", "")[0] == 200
            except OSError:
                return False

        for port in web_ports:
            wait_until(f"web node :{port}", lambda port=port: healthy(port), cluster)
        for log in worker_logs.values():
            wait_until(f"worker {log.stem}", lambda log=log: b" ready." in log.read_bytes(), cluster)
        startup_s = time.monotonic() - started

        # Sections, through node 1 (both tenants).
        for t in tenants:
            status, body = call(web_ports[0], "PUT", "/api/v1/sections", t["key"], {"sections": [
                {"id": f"guide/topic-{n}.md#setup", "text": f"To set up topic {n}, run acme setup --topic {n}."}
                for n in range(10)]})
            if status != 200:
                raise RuntimeError(f"section upsert: {status} {body}")

        # Records through both nodes, a few at a time.
        def record(i: int) -> dict:
            t, node = tenants[i % 2], i % 2
            query = f"How do I set up topic {i % 10} for team {i} in region {t['slug']}?"
            cited = [f"guide/topic-{i % 10}.md#setup"]
            status, body = call(web_ports[node], "POST", "/api/v1/trails", t["key"], {
                "scope": "cluster", "query": query, "cited": cited,
                "steps": [{"tool": "search", "args": {"q": query}, "returned": cited}],
                "signal": {"source": "caller", "accepted": True}})
            return {"i": i, "node": node, "tenant": t, "query": query, "status": status,
                    "trail_id": body.get("trail_id"), "trail_status": body.get("status")}

        with ThreadPoolExecutor(4) as pool:
            records = list(pool.map(record, range(args.records)))
        acked = [r for r in records if r["status"] == 201 and r["trail_id"]]

        # Each acknowledged record recalled from the node that did not write it.
        def recall(r: dict) -> dict:
            other = 1 - r["node"]
            status, body = call(web_ports[other], "POST", "/api/v1/recall", r["tenant"]["key"],
                                {"scope": "cluster", "query": r["query"]})
            return {"node": other, "status": status, "ok": status == 200 and body.get("trail_id") == r["trail_id"]
                    and body.get("outcome") == "prefetch"}

        with ThreadPoolExecutor(4) as pool:
            recalls = list(pool.map(recall, acked))

        # Exports through both nodes; each worker takes one job at a time.
        exports = []
        for i in range(args.exports):
            t = tenants[i % 2]
            status, body = call(web_ports[i % 2], "POST", "/api/v1/exports", t["key"], {"format": "jsonl"})
            exports.append({"node": i % 2, "tenant": t, "status": status, "id": body.get("export_id")})
        finished: dict[str, str] = {}
        deadline = time.monotonic() + args.job_timeout
        while time.monotonic() < deadline and len(finished) < len(exports):
            for e in exports:
                if e["id"] and e["id"] not in finished:
                    # Polled through the node that did not take the request.
                    status, body = call(web_ports[1 - e["node"]], "GET", f"/api/v1/exports/{e['id']}",
                                        e["tenant"]["key"])
                    if body.get("status") in ("done", "failed"):
                        finished[e["id"]] = body["status"]
            time.sleep(0.2)
        ran_on: dict[str, str] = {}
        for log in worker_logs.values():
            for m in JOB_LINE.finditer(log.read_text(errors="replace")):
                ran_on[m["job"]] = m["worker"].split("@")[0]

        # Nothing lost: every acknowledged trail is a row, in the tenant that wrote it.
        stored = json.loads(subprocess.run(
            [sys.executable, "-c", STORED_CODE], cwd=ROOT, env=env, check=True, capture_output=True, text=True,
            input=json.dumps([r["trail_id"] for r in acked])).stdout)
        in_db = sum(1 for r in acked if stored.get(r["trail_id"]) == r["tenant"]["tenant_id"])
    except Exception as exc:
        print(f"cluster demo could not run: {exc}", file=sys.stderr)
        for name, _ in cluster.procs:
            log = workdir / f"{name}.log"
            if log.exists():
                print(f"--- {name} (last lines)\n{log.read_text(errors='replace')[-1500:]}", file=sys.stderr)
        return 2
    finally:
        cluster.stop()
        if args.keep_logs:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    per_node = []
    for node in (0, 1):
        per_node.append((
            f"web{node + 1} :{web_ports[node]}",
            sum(1 for r in records if r["node"] == node), sum(1 for r in acked if r["node"] == node),
            sum(1 for r in recalls if r["node"] == node), sum(1 for r in recalls if r["node"] == node and r["ok"]),
            sum(1 for e in exports if e["node"] == node),
        ))
    jobs_by_worker = {w: sum(1 for e in exports if ran_on.get(e["id"] or "") == w) for w in worker_logs}
    checks = [
        ("every record acknowledged (201)", len(acked) == len(records), f"{len(acked)}/{len(records)}"),
        ("every acknowledged trail in the database, in its tenant", in_db == len(acked), f"{in_db}/{len(acked)}"),
        ("every trail recalled (prefetch) from the other node", sum(r["ok"] for r in recalls) == len(acked),
         f"{sum(r['ok'] for r in recalls)}/{len(acked)}"),
        ("every export accepted (202) and done",
         all(e["status"] == 202 for e in exports) and list(finished.values()).count("done") == len(exports),
         f"{list(finished.values()).count('done')}/{len(exports)}"),
        ("every export's worker known from its log", all(e["id"] in ran_on for e in exports),
         f"{sum(1 for e in exports if e['id'] in ran_on)}/{len(exports)}"),
        ("jobs ran on both workers", all(n > 0 for n in jobs_by_worker.values()),
         ", ".join(f"{w}: {n}" for w, n in jobs_by_worker.items())),
    ]
    print(f"database {urlsplit(db_url).hostname}:{urlsplit(db_url).port}/{urlsplit(db_url).path.lstrip('/')}, "
          f"redis 127.0.0.1:{redis_port}, instance {instance}; started in {startup_s:.1f} s, "
          f"total {time.monotonic() - started:.1f} s")
    print("| node | records sent | acknowledged | recalls served | recalled its peer's trail | exports requested |")
    print("|---|---|---|---|---|---|")
    for row in per_node:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print("| worker | jobs run |")
    print("|---|---|")
    for w, n in jobs_by_worker.items():
        print(f"| {w} | {n} |")
    print("| check | result | |")
    print("|---|---|---|")
    for name, ok, detail in checks:
        print(f"| {name} | {'PASS' if ok else 'FAIL'} | {detail} |")
    return 0 if all(ok for _, ok, _ in checks) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--exports", type=int, default=8)
    parser.add_argument("--database", default=DEFAULT_DATABASE, help="database name on the server (created if missing)")
    parser.add_argument("--job-timeout", type=float, default=45.0)
    parser.add_argument("--keep-logs", action="store_true", help="keep the processes' logs (the path is printed)")
    args = parser.parse_args(argv)
    if shutil.which("redis-server") is None:
        print("cluster demo needs redis-server on PATH", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
