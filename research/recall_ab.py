"""``services.recall`` of two checkouts, A/B in lockstep on one seeded bench database.

    .venv/bin/python -m research.recall_ab --a /path/to/old/checkout --b . [--database trailcache_bench]
                                           [--queries 300] [--warm 150] [--http] [--out reports/recall_ab.json]

On a machine shared with other work, two runs one after the other measure the load more than
the code. Here each checkout runs in a process of its own (its code on ``PYTHONPATH``, the
same interpreter and packages), both against the same bench database (``manage.py bench`` seeds
it), and they take the same question one after the other, alternating which goes first: every
pair of samples sees the same load. Each side clears its query-vector cache before every
recall, so every figure holds the model's own time. Reported per side: the phases' p50/p99 from
the service's own timings, the search phase by path, the paired difference of the medians, and
whether both answered the same outcome.

``--http`` also runs gunicorn (2 sync workers) from each checkout in turn, concurrency 1 and 8,
and reports the CPU each request took in the workers and in the database server (load
independent, unlike the latency): a throughput bound of ``cores / CPU per request``.

A checkout older than the shipped model's name can read the bench's vectors through
``--a-model`` (a path whose file name gives the same model version). Never imported by the
product; needs the research requirements (psutil).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# Runs inside each checkout (``python -c``): reads question indexes on stdin, answers timings.
_WORKER = r'''
import inspect, json, sys, time
import django
django.setup()
from cachecore.embedding import get_embedder
from cachecore.services.recall import recall
from tenants.models import Tenant
questions = json.load(open(sys.argv[1]))
tenants = {str(t.pk): t for t in Tenant.objects.filter(slug__startswith="bench-")}
by_caller = "caller" in inspect.signature(recall).parameters
if by_caller:
    from tenants.caller import tenant_caller
embedder = get_embedder()
print(json.dumps({"ready": embedder.version}), flush=True)
for line in sys.stdin:
    tenant_id, scope, text, path = questions[int(line)]
    tenant = tenants[tenant_id]
    embedder.cache_clear()
    t0 = time.perf_counter()
    if by_caller:
        result = recall(caller=tenant_caller(tenant), scope=scope, query=text)
        timings, outcome = dict(result.diagnostics.timings), str(result.answer.outcome)
    else:
        result = recall(tenant=tenant, scope=scope, query=text)
        timings, outcome = dict(result.timings), str(result.outcome)
    timings["wall"] = time.perf_counter() - t0
    print(json.dumps({"t": timings, "o": outcome, "path": path}), flush=True)
'''

PHASES = ("embedding", "search", "scoring", "write", "total")


def _questions(path: Path, n: int) -> None:
    """The bench's own choice of timed questions (half HNSW scopes, half exact), written for
    the workers."""
    import django

    django.setup()
    from research.bench import seed, timing
    from tenants.models import Tenant

    tenants = {t.pk: t for t in Tenant.objects.filter(slug__startswith=seed.TENANT_PREFIX)}
    chosen = timing.choose_queries(seed.load_probes(), tenants, n)
    path.write_text(json.dumps([[str(q.tenant_id), q.scope, q.text, q.path] for q in chosen]))


def _start(checkout: Path, questions: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-c", _WORKER, str(questions)], cwd=checkout,
                               env={**env, "PYTHONPATH": str(checkout)}, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    ready = json.loads(process.stdout.readline())
    return process, ready["ready"]


def _ask(process: subprocess.Popen, index: int) -> dict:
    process.stdin.write(f"{index}\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def _pct(values: list[float]) -> list[float]:
    return [round(float(np.percentile(values, 50)), 3), round(float(np.percentile(values, 99)), 3)]


def lockstep(*, a: Path, b: Path, env_a: dict[str, str], env_b: dict[str, str], questions: Path,
             warm: int, n: int) -> dict:
    """Both sides, one question after the other; the first ``warm`` pairs are not kept."""
    count = len(json.loads(questions.read_text()))
    sides = {"a": _start(a, questions, env_a), "b": _start(b, questions, env_b)}
    kept: dict[str, list[dict]] = {"a": [], "b": []}
    try:
        for k in range(warm + n):
            order = ("a", "b") if k % 2 == 0 else ("b", "a")
            for side in order:
                answer = _ask(sides[side][0], k % count)
                if k >= warm:
                    kept[side].append(answer)
    finally:
        for process, _ in sides.values():
            process.stdin.close()
            process.wait(timeout=60)
    out: dict = {}
    for side, answers in kept.items():
        phases = {ph: _pct([r["t"].get(ph, 0.0) * 1000 for r in answers]) for ph in (*PHASES, "wall")}
        by_path = {p: _pct([r["t"]["search"] * 1000 for r in answers if r["path"] == p])
                   for p in ("exact", "hnsw") if any(r["path"] == p for r in answers)}
        out[side] = {"model": sides[side][1], "phases_p50_p99_ms": phases, "search_by_path_p50_p99_ms": by_path}
    paired = {ph: round(float(np.median([(x["t"].get(ph, 0.0) - y["t"].get(ph, 0.0)) * 1000
                                         for x, y in zip(kept["a"], kept["b"])])), 3) for ph in (*PHASES, "wall")}
    out["median_paired_a_minus_b_ms"] = paired
    out["same_outcome"] = f"{sum(x['o'] == y['o'] for x, y in zip(kept['a'], kept['b']))}/{n}"
    return out


def http_cpu(*, checkout: Path, env: dict[str, str], questions: Path, n: int) -> dict:
    """gunicorn from ``checkout``: latency and requests/s at concurrency 1 and 8, and CPU per
    request in its workers and in the database server's backends."""
    import django

    django.setup()
    from django.db import connection

    from research.bench import httpload
    from research.bench.cpu import CpuMeter, backends_of
    from tenants.caller import tenant_caller
    from tenants.models import ApiKey, Tenant, all_key_permissions
    from tenants.services import api_key_create

    chosen = json.loads(questions.read_text())
    tenants = {str(t.pk): t for t in Tenant.objects.filter(slug__startswith="bench-")}
    used = {q[0] for q in chosen}
    ApiKey.objects.filter(tenant__in=used, name="recall-ab").delete()
    keys = {pk: api_key_create(caller=tenant_caller(tenants[pk]), name="recall-ab",
                               permissions=all_key_permissions())[1] for pk in used}
    jobs = [("POST", "/api/v1/recall", json.dumps({"scope": q[1], "query": q[2]}).encode(), keys[q[0]])
            for q in chosen]
    backends = backends_of(connection)  # the same database as the workers'
    extra = {**{k: v for k, v in env.items() if k.startswith("TRAILCACHE_")}, "PYTHONPATH": str(checkout)}
    out: dict = {}
    try:
        with httpload.gunicorn(database_url=os.environ["DATABASE_URL"], workers=2, extra_env=extra,
                               cwd=checkout) as server:
            httpload.run_load(server, jobs[:40], concurrency=2, time_limit_s=60)
            for concurrency in (1, 8):
                meter = CpuMeter({"workers": server.worker_pids, "postgres": backends})
                meter.start()
                run = httpload.run_load(server, jobs[:n], concurrency=concurrency, time_limit_s=60)
                out[f"c{concurrency}"] = {
                    "p50_ms": run["p50_ms"], "p99_ms": run["p99_ms"], "per_s": run["per_s"], "errors": run["errors"],
                    "cpu_ms_per_request": meter.stop(run["n"]),
                }
    finally:
        ApiKey.objects.filter(tenant__in=used, name="recall-ab").delete()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, type=Path, help="checkout A (the before)")
    parser.add_argument("--b", default=ROOT, type=Path, help="checkout B (default: this one)")
    parser.add_argument("--a-model", default="", help="TRAILCACHE_EMBEDDING_MODEL for checkout A")
    parser.add_argument("--database", default="trailcache_bench")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warm", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=1, help="--http: runs per side, alternating")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "recall_ab.json")
    args = parser.parse_args(argv)

    from research.localstack import use_database

    use_database(args.database)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("TRAILCACHE_DEV", "true")
    for name in ("TRAILCACHE_RATE_PER_KEY_PER_MINUTE", "TRAILCACHE_RATE_PER_TENANT_PER_MINUTE",
                 "TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS", "TRAILCACHE_EMBEDDING_CACHE_SIZE"):
        os.environ[name] = "0"
    os.environ.setdefault("TRAILCACHE_MODEL_DIR", str(ROOT / ".data" / "models"))
    a, b = args.a.resolve(), args.b.resolve()
    env_b = dict(os.environ)
    env_a = {**env_b, **({"TRAILCACHE_EMBEDDING_MODEL": args.a_model} if args.a_model else {})}
    questions = args.out.with_suffix(".questions.json")
    questions.parent.mkdir(parents=True, exist_ok=True)
    _questions(questions, max(args.queries + args.warm, 600))
    report: dict = {"a": str(a), "b": str(b), "database": args.database, "python": platform.python_version(),
                    "load_average_start": list(os.getloadavg())}
    report["lockstep"] = lockstep(a=a, b=b, env_a=env_a, env_b=env_b, questions=questions,
                                  warm=args.warm, n=args.queries)
    if args.http:
        runs = []
        for round_ in range(args.rounds):
            for side, checkout, env in (("a", a, env_a), ("b", b, env_b)):
                runs.append({"side": side, "round": round_, "load_average": list(os.getloadavg()),
                             **http_cpu(checkout=checkout, env=env, questions=questions, n=args.queries)})
        report["http"] = runs
    report["load_average_end"] = list(os.getloadavg())
    report["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report["lockstep"], indent=2))
    for run in report.get("http", []):
        print(json.dumps(run))
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
