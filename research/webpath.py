"""A recall's time outside embedding and SQL, and the web worker model chosen by measurement.

    .venv/bin/python -m research.webpath [--requests 200] [--seconds 4] [--rounds 3] [--levels 1,8,32]
                                         [--models sync,gthread,asgi,sync:3] [--profile] [--out reports/webpath.json]

Runs on a database of its own (``trailcache_webpath`` on the embedded server, or on
``DATABASE_URL``'s server), seeded once with one tenant, 40 sections and 200 trails.

1. **In-process split** (no network): ``POST /api/v1/recall`` through the WSGI application,
   called directly, against the recall service's own timings (``RecallResult.diagnostics.timings``):
   web = request total − service total (middleware, API-key auth, throttle, DRF parsing and
   validation, JSON rendering). Also the web path alone, with the service replaced by a canned
   answer; ``--profile`` prints that path's top functions (cProfile).
2. **Worker models over loopback**: gunicorn ``sync``, ``gthread`` (4 threads per worker) and
   ASGI (``uvicorn.workers.UvicornWorker``), 2 workers each unless ``model:N``, all started on free
   ports (and stopped again), then measured in interleaved rounds at concurrency 1, 8 and 32
   (medians over rounds); every request a different question (no embedding-cache hits). The
   load generator runs on the same two cores.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

from research.localstack import with_database
from research.stats import time_calls

ROOT = Path(__file__).resolve().parent.parent
DATABASE = "trailcache_webpath"
TOPICS = ["install", "upgrade", "proxy", "backup", "restore", "logging", "tls", "quota"]
MODELS = {
    "sync": {"worker_class": "sync", "threads": 1, "app": "config.wsgi:application"},
    "gthread": {"worker_class": "gthread", "threads": 4, "app": "config.wsgi:application"},
    "asgi": {"worker_class": "uvicorn.workers.UvicornWorker", "threads": 1, "app": "config.asgi:application"},
}


def prepare_database(name: str) -> str:
    """The URL of a migrated database of this study's own; sets DATABASE_URL for this process."""
    import psycopg
    from psycopg import sql

    base = os.environ.get("DATABASE_URL", "")
    if not base:
        from config import embedded_db

        base = embedded_db.ensure_running()
    url = with_database(base, name)
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    env = dict(os.environ, DATABASE_URL=url)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    os.environ["DATABASE_URL"] = url
    return url


def question(i: int, variant: int = 0) -> str:
    topic = TOPICS[i % len(TOPICS)]
    forms = [f"How do I {topic} Acme Sync on host group {i}?",
             f"What are the steps to {topic} Acme Sync for host group {i}?",
             f"Acme Sync {topic} on machines of group {i}, how?"]
    return forms[variant % len(forms)]


def seed(trails: int = 200) -> tuple[object, str]:
    """The study's tenant (40 sections, ``trails`` trails, made once) and a new API key."""
    from cachecore.models import Trail
    from cachecore.services.sections import sections_upsert
    from cachecore.services.trails import trail_record
    from tenants.caller import tenant_caller
    from tenants.models import Tenant, all_key_permissions
    from tenants.services import api_key_create, tenant_create

    tenant = Tenant.objects.filter(slug="webpath").first() or tenant_create(slug="webpath")
    if not Trail.objects.filter(tenant=tenant).exists():
        sections_upsert(caller=tenant_caller(tenant), sections=[
            {"id": f"guide/{t}-{n}.md#steps", "text": f"To {t} Acme Sync on group {n}: run acme {t} --group {n}."}
            for n in range(5) for t in TOPICS])
        for i in range(trails):
            cited = [f"guide/{TOPICS[i % len(TOPICS)]}-{i % 5}.md#steps"]
            trail_record(caller=tenant_caller(tenant), scope="web", query=question(i), cited=cited,
                         steps=[{"tool": "search", "args": {"q": question(i)}, "returned": cited}],
                         signal={"source": "caller", "accepted": True})
    _, raw = api_key_create(caller=tenant_caller(tenant), name="webpath", permissions=all_key_permissions())
    return tenant, raw


def _wsgi_call(app, body: bytes, key: str) -> tuple[str, bytes]:  # noqa: ANN001
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/recall", "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {key}", "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    status: list[str] = []
    chunks = app(environ, lambda s, h, exc_info=None: status.append(s))
    payload = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return status[0], payload


def _med(xs: list[float]) -> float:
    return round(statistics.median(xs), 3) if xs else 0.0


def _p99(xs: list[float]) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(0.99 * len(xs)))], 3) if xs else 0.0


def in_process(key: str, n: int, *, profile: bool) -> dict:
    """Request total vs the service's own phases, and the web path with a canned service."""
    from django.core.wsgi import get_wsgi_application

    import api.views.core as core
    from cachecore.engine.decide import Reason, RecallDecision
    from cachecore.engine.outcome import Outcome
    from cachecore.services.recall import RecallResult

    app = get_wsgi_application()
    real = core.recall
    seen: list[dict] = []

    def timed(**kw):  # noqa: ANN003, ANN202
        t0 = time.perf_counter()
        result = real(**kw)
        seen.append({**result.diagnostics.timings, "service": time.perf_counter() - t0})
        return result

    bodies = [json.dumps({"scope": "web", "query": question(i, 1 + i % 2) + f" #{i}"}).encode() for i in range(n)]

    def request(i: int) -> None:
        status, _ = _wsgi_call(app, bodies[i], key)
        assert status.startswith("200"), status

    core.recall = timed
    try:
        for i in range(10):  # warm: model, connections, caches
            _wsgi_call(app, json.dumps({"scope": "web", "query": f"warm-up question {i}"}).encode(), key)
        seen.clear()
        totals = time_calls(request, n=n)  # ms
    finally:
        core.recall = real
    ms = lambda xs: [x * 1000 for x in xs]  # noqa: E731
    web = [t - s["service"] * 1000 for t, s in zip(totals, seen)]
    phases = {p: _med(ms([s.get(p, 0.0) for s in seen])) for p in seen[0]} if seen else {}

    canned = RecallResult("00000000-0000-0000-0000-000000000000", RecallDecision(Outcome.MISS, Reason.NO_CANDIDATE))
    core.recall = lambda **kw: canned
    prof = cProfile.Profile() if profile else None
    try:
        body = json.dumps({"scope": "web", "query": "How do I install Acme Sync?"}).encode()
        for _ in range(20):
            _wsgi_call(app, body, key)
        if prof:
            prof.enable()
        bare = time_calls(lambda _: _wsgi_call(app, body, key), n=n)  # ms
        if prof:
            prof.disable()
    finally:
        core.recall = real
    top = ""
    if prof:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
        top = out.getvalue()
    return {"n": n, "request_p50_ms": _med(totals), "request_p99_ms": _p99(totals),
            "service_phases_p50_ms": phases, "web_p50_ms": _med(web), "web_p99_ms": _p99(web),
            "web_only_canned_service_p50_ms": _med(bare), "web_only_p99_ms": _p99(bare), "profile": top}


def _spec(spec: str) -> tuple[str, int, int]:
    """``model[:workers[:embedding threads]]`` → (model, workers, onnxruntime threads); defaults 2 and 1."""
    model, workers, threads = ([*spec.split(":"), "", ""])[:3]
    return model, int(workers or 2), int(threads or 1)


def over_http(key: str, specs: list[str], levels: list[int], n: int, seconds: float, rounds: int) -> list[dict]:
    """Every server started at once (idle ones cost memory, not CPU), then ``rounds`` rounds of
    model × level, interleaved, so that load from elsewhere on the machine falls on every model
    alike; per (model, level) the medians over rounds of p50, p99 and recalls/s."""
    from contextlib import ExitStack

    from research.bench import httpload

    samples: dict[tuple[str, int], list[dict]] = {}
    with ExitStack() as stack:
        servers = {}
        for spec in specs:
            model, workers, threads = _spec(spec)
            cfg = MODELS[model]
            servers[spec] = stack.enter_context(httpload.gunicorn(
                database_url=os.environ["DATABASE_URL"], workers=workers, worker_class=cfg["worker_class"],
                threads=cfg["threads"], app=cfg["app"], extra_env={"TRAILCACHE_EMBEDDING_THREADS": str(threads)}))
            warm = [("POST", "/api/v1/recall", json.dumps({"scope": "web", "query": f"warm {spec} {i}"}).encode(), key)
                    for i in range(20)]
            httpload.run_load(servers[spec], warm, concurrency=2, time_limit_s=30)
        serial = 0
        for _ in range(rounds):
            for spec, server in servers.items():
                for level in levels:
                    jobs = []
                    for i in range(n):
                        serial += 1
                        text = question(i, i % 3) + f" (#{serial})"  # never an embedding-cache hit
                        jobs.append(("POST", "/api/v1/recall", json.dumps({"scope": "web", "query": text}).encode(),
                                     key))
                    r = httpload.run_load(server, jobs, concurrency=level, time_limit_s=seconds)
                    samples.setdefault((spec, level), []).append(r)
    rows = []
    for (spec, level), rs in samples.items():
        model, workers, threads = _spec(spec)
        rows.append({"model": model, "workers": workers, "embedding_threads": threads, "concurrency": level,
                     "p50_ms": _med([r["p50_ms"] for r in rs]), "p99_ms": _med([r["p99_ms"] for r in rs]),
                     "per_s": _med([r["per_s"] for r in rs]), "n": sum(r["n"] for r in rs),
                     "errors": sum(r["errors"] for r in rs),
                     "error_samples": [e for r in rs for e in r["error_samples"]][:3]})
    return rows


def serializer_cost(rounds: int) -> dict:
    """The recall body's rendering, interleaved: the serializer's hot path against DRF's
    declared fields, on a prefetch with three served sections (no database)."""
    import django

    django.setup()
    from api.serializers import RecallResultSerializer
    from cachecore.engine.decide import Reason, RecallDecision
    from cachecore.engine.outcome import Outcome
    from cachecore.services.recall import RecallResult

    trail = "8d3f6a4e-2b1c-4d5e-9f10-112233445566"
    answer = RecallDecision(
        Outcome.PREFETCH, Reason.MATCH, confidence=0.93, trail_id=trail, trails=[trail], similarity=0.97,
        coverage=0.81, sections=[{"id": f"doc#{i}", "status": "valid", "text": "Set proxy.url and restart. " * 8}
                                 for i in range(3)],
        steps=[{"tool": "search", "args": {"q": "proxy"}, "returned": ["doc#0", "doc#1", "doc#2"]}],
    )
    result = RecallResult("00000000-0000-0000-0000-000000000001", answer)
    ways = {"hot path": lambda: RecallResultSerializer(result).data,
            "declared fields": lambda: RecallResultSerializer(result).declared_representation(result)}
    samples: dict[str, list[float]] = {k: [] for k in ways}
    for i in range(rounds):
        for name in (list(ways) if i % 2 else list(ways)[::-1]):
            t0 = time.perf_counter()
            ways[name]()
            samples[name].append((time.perf_counter() - t0) * 1e6)
    return {"load_before": os.getloadavg(), "rounds": rounds,
            "us_p50": {k: round(statistics.median(v), 1) for k, v in samples.items()}}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="per in-process phase and per HTTP run")
    parser.add_argument("--seconds", type=float, default=4.0, help="time limit per HTTP run")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--models", default="sync,gthread,asgi",
                        help="comma-separated model[:workers[:embedding threads]], e.g. sync:3 or sync:2:2")
    parser.add_argument("--trails", type=int, default=200, help="trails seeded in a new study database")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds over models and levels")
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--serializer", type=int, default=0, metavar="ROUNDS",
                        help="only the recall body's rendering: hot path against DRF's declared fields")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("TRAILCACHE_DEV", "true")
    if args.serializer:
        out = serializer_cost(args.serializer)
        print(json.dumps(out, indent=2))
        return out
    # The load sends more than a client should: no request-rate or concurrency limits while it
    # measures (gthread's 2 × 4 threads run eight requests of one tenant at once).
    os.environ["TRAILCACHE_RATE_PER_KEY_PER_MINUTE"] = "0"
    os.environ["TRAILCACHE_RATE_PER_TENANT_PER_MINUTE"] = "0"
    os.environ["TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS"] = "0"
    prepare_database(args.database)
    import django

    django.setup()
    _, key = seed(args.trails)
    load = os.getloadavg()
    result: dict = {"load_before": load, "in_process": in_process(key, args.requests, profile=args.profile)}
    ip = result["in_process"]
    print(f"load average at start: {load[0]:.2f}")
    print(f"in-process recall request p50 {ip['request_p50_ms']} ms (p99 {ip['request_p99_ms']}); service phases "
          f"p50 {ip['service_phases_p50_ms']}")
    print(f"web path (request − service) p50 {ip['web_p50_ms']} ms, p99 {ip['web_p99_ms']}; "
          f"with a canned service p50 {ip['web_only_canned_service_p50_ms']} ms")
    if args.profile:
        print(ip["profile"])
    rows: list[dict] = []
    if not args.skip_http:
        levels = [int(x) for x in args.levels.split(",")]
        rows = over_http(key, args.models.split(","), levels, args.requests, args.seconds, args.rounds)
        print("| worker model | workers | embedding threads | concurrency | p50 ms | p99 ms | recalls/s | errors |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['model']} | {r['workers']} | {r['embedding_threads']} | {r['concurrency']} "
                  f"| {r['p50_ms']} | {r['p99_ms']} | {r['per_s']} | {r['errors']} |")
    result["http"] = rows
    result["load_after"] = os.getloadavg()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
