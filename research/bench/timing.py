"""In-process measurements: ``services.recall`` and its phases, HNSW recall@5 against exact
search, embedding latency, record throughput."""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from cachecore.embedding import get_embedder
from cachecore.engine.text import normalise_query
from cachecore.selectors import nearest
from cachecore.selectors.nearest import _scope_sizes, nearest_trails
from cachecore.services import recall_log
from cachecore.services.recall import recall
from cachecore.services.trails import trail_record
from research.bench.cpu import CpuMeter, backends_of, this_process
from tenants.caller import tenant_caller
from tenants.models import Tenant


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    if not samples_ms:
        return {"n": 0, "p50_ms": 0.0, "p95_ms": 0.0, "p99_ms": 0.0, "mean_ms": 0.0, "max_ms": 0.0}
    a = np.asarray(samples_ms)
    return {
        "n": len(samples_ms),
        "p50_ms": round(float(np.percentile(a, 50)), 3),
        "p95_ms": round(float(np.percentile(a, 95)), 3),
        "p99_ms": round(float(np.percentile(a, 99)), 3),
        "mean_ms": round(float(a.mean()), 3),
        "max_ms": round(float(a.max()), 3),
    }


@dataclass(frozen=True)
class TimedQuery:
    tenant_id: object
    scope: str
    text: str
    kind: str  # own | paraphrase | miss
    path: str  # exact | hnsw
    trail_id: str  # the probe it came from


def scope_path(tenant: Tenant, scope: str) -> str:
    return nearest.search_path(tenant=tenant, scope=scope)


def _routing_limit() -> int:
    """The scope size up to which nearest_trails searches exactly, for a partition of mean size
    (each scope's own route uses its tenant's partition)."""
    rule = getattr(nearest, "exact_search_limit", None)
    if rule is None:
        return settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    with connection.cursor() as cur:
        cur.execute(
            "SELECT coalesce((SELECT avg(greatest(c.reltuples, 0)) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'cachecore_trail'::regclass), "
            "(SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'cachecore_trail'::regclass))"
        )
        mean_rows = float(cur.fetchone()[0] or 0.0)
    return rule(rows=mean_rows)


def choose_queries(probes: list[dict], tenants: dict, n: int, *, seed: int = 11) -> list[TimedQuery]:
    """``n`` queries: half from scopes searched through HNSW (when any), half from exact-path
    scopes; 50% a probe's own question, 35% its paraphrase, 15% an off-topic miss."""
    from research.bench import corpus

    rng = random.Random(seed)
    by_path: dict[str, list[dict]] = {"exact": [], "hnsw": []}
    for p in probes:
        by_path[scope_path(tenants[p["tenant_id"]], p["scope"])].append(p)
    pools = [v for v in by_path.values() if v]
    out: list[TimedQuery] = []
    for i in range(n):
        pool = pools[i % len(pools)]
        p = rng.choice(pool)
        path = "hnsw" if pool is by_path["hnsw"] else "exact"
        roll = rng.random()
        if roll < 0.50:
            kind, text = "own", p["query"]
        elif roll < 0.85:
            kind, text = "paraphrase", p["paraphrase"]
        else:
            kind, text = "miss", corpus.miss_question(rng)
        out.append(TimedQuery(p["tenant_id"], p["scope"], text, kind, path, p["trail_id"]))
    return out


def time_recall(queries: list[TimedQuery], tenants: dict) -> dict:
    """``services.recall`` itself, as a client calls it (embedding, the snapshot's reads, the
    resolver, scoring, the log write): its percentiles, by search path, the same without the
    embedding, and each phase's percentiles from the timings the service keeps for its metrics
    (``RecallResult.diagnostics``). The query-vector cache is emptied before each call: every figure
    holds the model's own time (a repeated question skips it). ``to_decision``: the time up to
    the decision, as the recall log's ``latency_ms`` counts it (the HTTP phase reads the same
    from the log for the recalls the web workers answered). ``cpu_ms``: the mean CPU a recall
    spent in this process (the model, Python, the log writer's thread) and in the database
    server (``research.bench.cpu``), its log write included."""
    embedder = get_embedder()
    samples: list[float] = []
    without_embedding: list[float] = []
    decided: list[float] = []
    by_path: dict[str, list[float]] = {"exact": [], "hnsw": []}
    # A recorded question asked again, a paraphrase, an off-topic miss (``choose_queries``' mix).
    by_kind: dict[str, list[float]] = {}
    by_phase: dict[str, list[float]] = {}
    outcomes: Counter[str] = Counter()
    recall_log.flush()
    meter = _in_process_meter()
    meter.start()
    for q in queries:
        tenant = tenants[q.tenant_id]
        embedder.cache_clear()
        t0 = time.perf_counter()
        result = recall(caller=tenant_caller(tenant), scope=q.scope, query=q.text)
        ms = (time.perf_counter() - t0) * 1000
        samples.append(ms)
        by_path[q.path].append(ms)
        by_kind.setdefault(q.kind, []).append(ms)
        timings = result.diagnostics.timings
        without_embedding.append(ms - timings.get("embedding", 0.0) * 1000)
        # As the recall log's latency counts it: up to the decision, before the log write.
        decided.append(sum(timings.get(p, 0.0) for p in ("embedding", "search", "validation", "scoring")) * 1000)
        for phase, seconds in timings.items():
            if phase != "total":
                by_phase.setdefault(phase, []).append(seconds * 1000)
        outcomes[str(result.answer.outcome)] += 1
    recall_log.flush()
    cpu = meter.stop(len(queries))
    return {**percentiles(samples), "by_path": {k: percentiles(v) for k, v in by_path.items() if v},
            "by_kind": {k: percentiles(v) for k, v in sorted(by_kind.items())},
            "without_embedding": percentiles(without_embedding), "to_decision": percentiles(decided),
            "by_phase": {k: percentiles(v) for k, v in by_phase.items()}, "outcomes": dict(outcomes),
            "mean_ms": round(sum(samples) / max(1, len(samples)), 2), "cpu_ms": cpu}


def _in_process_meter() -> CpuMeter:
    """CPU of this process (every thread) and of the database server's backends serving it."""
    return CpuMeter({"process": this_process, "database": backends_of(connection)})


def exact_neighbours(*, tenant: Tenant, scope: str, embedding: np.ndarray, limit: int = 5,
                     with_similarity: bool = False) -> list:
    """Ground truth: the nearest active, unexpired trails by a full scan of the scope (ids, or
    (id, cosine similarity) pairs with ``with_similarity``)."""
    from cachecore.selectors.nearest import vector_literal

    vector = vector_literal(embedding)
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL enable_indexscan = off")
        cur.execute("SET LOCAL enable_bitmapscan = on")
        cur.execute(
            "SELECT id, 1 - (embedding <=> %s::vector) FROM cachecore_trail WHERE tenant_id = %s AND scope = %s "
            "AND status = 'active' AND expires_at > %s ORDER BY (embedding <=> %s::vector) + 0 LIMIT %s",
            [vector, tenant.pk, scope, timezone.now(), vector, limit],
        )
        rows = cur.fetchall()
    return [(str(r[0]), float(r[1])) for r in rows] if with_similarity else [str(r[0]) for r in rows]


def _recall_summary(scores: list[float]) -> dict:
    if not scores:
        return {"n": 0, "mean": None, "min": None}
    return {"n": len(scores), "mean": round(float(np.mean(scores)), 4), "min": round(float(np.min(scores)), 4)}


def hnsw_recall_at_k(queries: list[TimedQuery], tenants: dict, embeddings: np.ndarray, k: int = 5) -> dict:
    """recall@k of nearest_trails against exact search, for queries routed through HNSW: over
    all of them, and apart for questions with an answer in the scope (a trail's own question or
    its paraphrase) and off-topic ones. ``top1_changed``: queries where the exact nearest trail
    clears the tenant's similarity threshold and the HNSW path's first trail is less similar: the
    only misses of the approximate index that can change what a recall serves."""
    scores: list[float] = []
    by_kind: dict[str, list[float]] = {"answerable": [], "off_topic": []}
    changed = 0
    for q, e in zip(queries, embeddings):
        if q.path != "hnsw":
            continue
        tenant = tenants[q.tenant_id]
        with transaction.atomic():
            found = nearest_trails(tenant=tenant, scope=q.scope, embedding=e, limit=k)
        truth = exact_neighbours(tenant=tenant, scope=q.scope, embedding=e, limit=k, with_similarity=True)
        if truth:
            score = len({c.trail_id for c in found} & {t for t, _ in truth}) / len(truth)
            scores.append(score)
            by_kind["off_topic" if q.kind == "miss" else "answerable"].append(score)
            # Another first trail at the same similarity is a tie (trails recorded for the same question), not a miss.
            if truth[0][1] >= tenant.similarity_threshold and (not found or found[0].similarity < truth[0][1] - 1e-6):
                changed += 1
    return {**_recall_summary(scores), "top1_changed": changed,
            **{kind: _recall_summary(values) for kind, values in by_kind.items()}}


def time_embedding(texts: list[str], *, many: int = 128) -> dict:
    """One query through the model (p50/p99), and ``many`` texts through ``embed`` (one graph run
    each, as the chunk and re-embed jobs run them): sentences/s."""
    embedder = get_embedder()
    normalised = [normalise_query(t) for t in texts]
    one: list[float] = []
    for t in normalised:
        t0 = time.perf_counter()
        embedder.embed_one(t)  # the model's own time, never the query-vector cache
        one.append((time.perf_counter() - t0) * 1000)
    many_texts = (normalised * (1 + many // max(1, len(normalised))))[:many]
    t0 = time.perf_counter()
    embedder.embed(many_texts)
    elapsed = time.perf_counter() - t0
    return {"one": percentiles(one), "many": len(many_texts), "sentences_per_s": round(len(many_texts) / elapsed, 1)}


def time_records(tenants: list[Tenant], cited_by_tenant: dict, n: int, *, seed: int = 5) -> dict:
    """Records through trail_record (embedding included), into a scope no timed
    recall reads."""
    from research.bench import corpus

    rng = random.Random(seed)
    samples: list[float] = []
    meter = _in_process_meter()
    meter.start()
    started = time.perf_counter()
    for i in range(n):
        tenant = tenants[i % len(tenants)]
        q = corpus.question(rng, "the product")
        cited = cited_by_tenant[tenant.pk]
        t0 = time.perf_counter()
        trail_record(
            caller=tenant_caller(tenant), scope="bench:records", query=q.text, cited=cited,
            steps=[{"tool": "search", "args": {"q": q.text}, "returned": cited}],
            signal={"source": "caller", "accepted": True},
        )
        samples.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - started
    return {**percentiles(samples), "records_per_s": round(n / elapsed, 1), "cpu_ms": meter.stop(n)}


SIZE_BUCKETS = [(0, 500), (500, 2000), (2000, 5000), (5000, 20000), (20000, 10**9)]


def knn_by_scope_size(probes: list[dict], tenants: dict, *, per_bucket: int = 40, seed: int = 13) -> list[dict]:
    """The nearest-neighbour query alone through each path (exact scan / HNSW), forced, for
    scopes bucketed by active size, with HNSW recall@5: where the size rule should switch."""
    rng = random.Random(seed)
    with connection.cursor() as cur:
        cur.execute("SELECT tenant_id, scope, count(*) FROM cachecore_trail WHERE status = 'active' "
                    "GROUP BY tenant_id, scope")
        sizes = {(t, s): n for t, s, n in cur.fetchall()}
    buckets: dict[tuple[int, int], list[dict]] = {b: [] for b in SIZE_BUCKETS}
    for p in probes:
        n = sizes.get((p["tenant_id"], p["scope"]), 0)
        for lo, hi in SIZE_BUCKETS:
            if lo < n <= hi:
                buckets[(lo, hi)].append(p)
    original_cap = settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    original_rule = getattr(nearest, "exact_search_limit", None)
    out = []
    try:
        for (lo, hi), chosen in buckets.items():
            if not chosen:
                continue
            chosen = rng.sample(chosen, min(per_bucket, len(chosen)))
            vectors = get_embedder().embed([normalise_query(p["paraphrase"]) for p in chosen])
            row: dict = {"scope_size": f"{lo}-{hi}" if hi < 10**9 else f">{lo}", "n": len(chosen)}
            found: dict[str, list[list[str]]] = {}
            for path, limit in (("exact", 10**9), ("hnsw", -1)):
                # Force the path: the cap for the scope-size count, the rule for the routing.
                settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS = limit
                if original_rule is not None:
                    nearest.exact_search_limit = lambda rows, limit=limit: limit
                _scope_sizes.clear()
                samples: list[float] = []
                found[path] = []
                for _ in range(2):  # the first pass warms the cache
                    samples, found[path] = [], []
                    for p, v in zip(chosen, vectors):
                        tenant = tenants[p["tenant_id"]]
                        t0 = time.perf_counter()
                        with transaction.atomic():
                            got = nearest_trails(tenant=tenant, scope=p["scope"], embedding=v, limit=5)
                        samples.append((time.perf_counter() - t0) * 1000)
                        found[path].append([c.trail_id for c in got])
                stats = percentiles(samples)
                row[path] = {"p50_ms": stats["p50_ms"], "p99_ms": stats["p99_ms"]}
            hits = [len(set(h) & set(e)) / len(e) for h, e in zip(found["hnsw"], found["exact"]) if e]
            row["hnsw_recall_at_5"] = round(float(np.mean(hits)), 4) if hits else None
            out.append(row)
    finally:
        settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS = original_cap
        if original_rule is not None:
            nearest.exact_search_limit = original_rule
        _scope_sizes.clear()
    return out
