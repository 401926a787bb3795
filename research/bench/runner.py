"""One benchmark run against Django's default database (the caller picks which): seed or
reuse, time recall in-process, check HNSW recall, time embedding and records, then the HTTP
phase against gunicorn. Returns the report (a dict)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import connection

from cachecore.embedding import get_embedder
from cachecore.engine.text import normalise_query
from cachecore.models import RecallEvent
from research.bench import corpus, httpload, report, seed, timing
from research.bench.cpu import CpuMeter, backends_of, this_process
from research.bench.timing import percentiles
from tenants.caller import tenant_caller
from tenants.models import ApiKey, Tenant, all_key_permissions
from tenants.services import api_key_create


@dataclass
class BenchConfig:
    trails: int = 100_000
    tenants: int = 100
    real_trails: int | None = None  # default: trails / 30, between 50 and 3000
    recalls: int = 1000  # questions chosen (the HTTP phase sends them; HNSW recall@5 checks some)
    recalls_full: int = 500  # timed in-process through services.recall, each pass
    recall_check: int = 200  # queries (HNSW path) for recall@5
    knn_per_bucket: int = 40  # queries per scope-size bucket, both paths forced
    records: int = 200
    http: bool = True
    http_requests: int = 1000
    http_records: int = 400
    http_time_limit_s: float = 30.0
    workers: int = 2
    worker_class: str = "sync"
    threads: int = 1
    concurrency: int = 8
    reseed: bool = False
    maintenance_work_mem: str = ""
    database_url: str = ""  # for gunicorn; built from the connection when empty

    def resolved_real_trails(self) -> int:
        if self.real_trails is not None:
            return self.real_trails
        return max(50, min(3000, self.trails // 30))


def database_url_of_connection() -> str:
    s = connection.settings_dict
    auth = s.get("USER") or ""
    if s.get("PASSWORD"):
        auth += f":{s['PASSWORD']}"
    host = s.get("HOST") or "127.0.0.1"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgresql://{auth + '@' if auth else ''}{host}{port}/{s['NAME']}"


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=settings.BASE_DIR, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _sizes() -> dict[str, int]:
    # Partitioned tables and indexes hold nothing themselves: sum over their partitions.
    tree = "(SELECT coalesce(sum({f}(relid)), 0)::bigint FROM pg_partition_tree('{r}'))"
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT {tree.format(f='pg_relation_size', r='cachecore_trail')}, "
            f"{tree.format(f='pg_indexes_size', r='cachecore_trail')}, "
            "coalesce((SELECT sum(pg_relation_size(relid))::bigint "
            "FROM pg_partition_tree(to_regclass('trail_embedding_hnsw'))), 0), "
            f"{tree.format(f='pg_relation_size', r='cachecore_citation')}, "
            f"{tree.format(f='pg_indexes_size', r='cachecore_citation')}, "
            "pg_total_relation_size('cachecore_section'), pg_total_relation_size('cachecore_sectionchunk'), "
            "pg_database_size(current_database())"
        )
        names = ["trail_table", "trail_indexes", "trail_hnsw", "citation_table", "citation_indexes",
                 "section_total", "sectionchunk_total", "database"]
        return dict(zip(names, cur.fetchone()))


def _data_shape() -> dict[str, int]:
    limit = timing._routing_limit()
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), coalesce(max(n), 0), count(*) FILTER (WHERE n > %s), coalesce(sum(n), 0) FROM ("
            "SELECT count(*) AS n FROM cachecore_trail WHERE status = 'active' GROUP BY tenant_id, scope) s",
            [limit],
        )
        scopes, largest, over, active = cur.fetchone()
    return {"scopes": scopes, "largest_scope": largest, "hnsw_scopes": over, "active_trails": int(active),
            "exact_search_limit": limit}


def run_bench(cfg: BenchConfig, *, log=print) -> dict:  # noqa: ANN001 - a print-like callable
    started = time.perf_counter()
    params = seed.SeedParams(trails=cfg.trails, tenants=cfg.tenants, real_trails=cfg.resolved_real_trails(),
                             model=get_embedder().version)
    stored = None if cfg.reseed else seed.seeded(params)
    if stored is None:
        log(f"seeding {cfg.trails} trails × {cfg.tenants} tenants into {connection.settings_dict['NAME']} …")
        seed_stats = {**seed.seed(params, log=log, maintenance_work_mem=cfg.maintenance_work_mem), "reused": False}
    else:
        log(f"reusing the seeded database {connection.settings_dict['NAME']} ({cfg.trails} × {cfg.tenants})")
        seed_stats = {**stored, "reused": True}

    tenants = {t.pk: t for t in Tenant.objects.filter(slug__startswith=seed.TENANT_PREFIX)}
    probes = seed.load_probes()
    queries = timing.choose_queries(probes, tenants, cfg.recalls)
    log(f"embedding {len(queries)} timed queries …")
    embeddings = get_embedder().embed([normalise_query(q.text) for q in queries])

    # services.recall itself, twice over the same questions: the first pass reads the partitions'
    # index and heap pages into the caches, as a running service has them for the scopes it
    # serves, and is kept as "cold"; the targets apply to the second pass.
    full = queries[: cfg.recalls_full]
    log(f"first pass: {len(full)} recalls through services.recall (pages not yet cached) …")
    cold = timing.time_recall(full, tenants)
    log(f"  p50 {cold['p50_ms']} ms, p99 {cold['p99_ms']} ms")
    log(f"timing {len(full)} recalls through services.recall (embedding included) …")
    included = timing.time_recall(full, tenants)
    log(f"  p50 {included['p50_ms']} ms, p99 {included['p99_ms']} ms; by phase p50 "
        + " · ".join(f"{k} {v['p50_ms']}" for k, v in included["by_phase"].items()))
    log("checking HNSW recall@5 against exact search …")
    hnsw_recall = timing.hnsw_recall_at_k(queries[: cfg.recall_check * 2], tenants,
                                          embeddings[: cfg.recall_check * 2])
    log("timing the embedding model …")
    embedding = timing.time_embedding([q.text for q in queries[:100]])

    log("timing the nearest-neighbour query by scope size, both paths forced …")
    knn_paths = timing.knn_by_scope_size(probes, tenants, per_bucket=cfg.knn_per_bucket)

    record_tenants = sorted(tenants.values(), key=lambda t: t.slug)[: max(1, min(20, len(tenants)))]
    cited = {t.pk: list(corpus.section_ids(0)) for t in record_tenants}
    log(f"timing {cfg.records} records in-process …")
    records = timing.time_records(record_tenants, cited, cfg.records)

    out: dict = {
        "config": {**asdict(cfg), "database_url": "",
                   "exact_search_max_trails": settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS,
                   "embedding_threads": settings.TRAILCACHE_EMBEDDING_THREADS, "cpu_count": os.cpu_count(),
                   "embedding_model": get_embedder().version, "load_average": list(os.getloadavg()),
                   "python": platform.python_version(), "git_commit": _git_commit(),
                   "database": connection.settings_dict["NAME"], "real_trails": params.real_trails,
                   "finished_at": None},
        "seed": seed_stats,
        "data": _data_shape(),
        "recall": {"included": included, "cold": cold},
        "hnsw_recall": hnsw_recall,
        "knn_by_scope_size": knn_paths,
        "embedding": embedding,
        "records": {**records, "per_s": records["records_per_s"]},
    }
    if cfg.http:
        out["http"] = _http_phase(cfg, queries, tenants, record_tenants, cited, log)
    out["sizes"] = _sizes()
    out["config"]["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    out["config"]["bench_seconds"] = round(time.perf_counter() - started, 1)
    out["targets"] = report.evaluate_targets(out)
    return out


def _http_phase(cfg: BenchConfig, queries: list[timing.TimedQuery], tenants: dict, record_tenants: list[Tenant],
                cited: dict, log) -> dict:  # noqa: ANN001
    used = {q.tenant_id for q in queries} | {t.pk for t in record_tenants}
    ApiKey.objects.filter(tenant__in=used, name="bench").delete()
    keys = {pk: api_key_create(caller=tenant_caller(tenants[pk]), name="bench", permissions=all_key_permissions())[1]
            for pk in used}

    def recall_jobs(n: int, offset: int) -> list[tuple[str, str, bytes, str]]:
        jobs = []
        for i in range(n):
            q = queries[(offset + i) % len(queries)]
            body = json.dumps({"scope": q.scope, "query": q.text}).encode()
            jobs.append(("POST", "/api/v1/recall", body, keys[q.tenant_id]))
        return jobs

    record_jobs = []
    for i in range(cfg.http_records):
        tenant = record_tenants[i % len(record_tenants)]
        text = f"Bench record {i}: how do I reset my password on device {i % 97}?"
        body = json.dumps({"scope": "bench:records", "query": text, "cited": cited[tenant.pk],
                           "steps": [{"tool": "search", "args": {"q": text}, "returned": cited[tenant.pk]}],
                           "signal": {"source": "caller", "accepted": True}}).encode()
        record_jobs.append(("POST", "/api/v1/trails", body, keys[tenant.pk]))

    url = cfg.database_url or database_url_of_connection()
    log(f"starting gunicorn ({cfg.workers} × {cfg.worker_class}) …")
    with httpload.gunicorn(database_url=url, workers=cfg.workers, worker_class=cfg.worker_class,
                           threads=cfg.threads) as server:
        # Warm-up: every worker loads the model and opens its database connection.
        httpload.run_load(server, recall_jobs(max(8, 6 * cfg.workers * cfg.threads), 0),
                          concurrency=max(2, cfg.workers * cfg.threads), time_limit_s=60)
        result: dict = {"workers": cfg.workers, "worker_class": cfg.worker_class, "threads": cfg.threads,
                        "port": server.port}
        n = cfg.http_requests
        log(f"HTTP recall, concurrency 1: {n} requests (≤ {cfg.http_time_limit_s:g}s) …")
        meter = CpuMeter({"workers": server.worker_pids, "database": backends_of(connection),
                          "load_generator": this_process})

        def metered(run: Callable[[], dict]) -> dict:
            meter.start()
            out = run()
            return {**out, "cpu_ms": meter.stop(out["n"])}

        since = datetime.now(UTC)
        result["recall_c1"] = metered(lambda: httpload.run_load(server, recall_jobs(n, 0), concurrency=1,
                                                                time_limit_s=cfg.http_time_limit_s))
        result["recall_c1"]["service_in_workers"] = _logged_latency(used, since, expect=result["recall_c1"]["n"])
        log(f"  p50 {result['recall_c1']['p50_ms']} ms, {result['recall_c1']['per_s']}/s")
        log(f"HTTP recall, concurrency {cfg.concurrency}: {n} requests …")
        result["recall_c8"] = metered(lambda: httpload.run_load(
            server, recall_jobs(n, n // 2), concurrency=cfg.concurrency, time_limit_s=cfg.http_time_limit_s))
        log(f"  p50 {result['recall_c8']['p50_ms']} ms, {result['recall_c8']['per_s']}/s")
        log(f"HTTP record, concurrency {cfg.concurrency}: {len(record_jobs)} requests …")
        result["record_c8"] = metered(lambda: httpload.run_load(
            server, record_jobs, concurrency=cfg.concurrency, time_limit_s=cfg.http_time_limit_s, expect=201))
        log(f"  {result['record_c8']['per_s']}/s")
        result["worker_peak_rss_bytes"] = max(server.rss_peak.values()) if server.rss_peak else None
    ApiKey.objects.filter(tenant__in=used, name="bench").delete()
    return result


def _logged_latency(tenants: set, since: datetime, *, expect: int, wait_s: float = 5.0) -> dict:
    """``services.recall``'s own time (embedding to decision, ``RecallEvent.latency_ms``) for the
    recalls the web workers answered since ``since``: what the service took inside the workers,
    against which the rest of an HTTP recall is the web path's. The workers write the log after
    each answer; this waits (at most ``wait_s``) until ``expect`` entries have landed."""
    deadline = time.monotonic() + wait_s
    while True:
        rows = list(RecallEvent.objects.filter(tenant__in=tenants, created_at__gte=since)
                    .values_list("latency_ms", flat=True))
        if len(rows) >= expect or time.monotonic() > deadline:
            return percentiles(rows)
        time.sleep(0.1)


def default_report_path() -> Path:
    return Path(settings.BASE_DIR) / "reports" / "bench" / "bench.json"
