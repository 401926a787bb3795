"""Which HNSW settings and which routing rule keep recall@5 up in the scopes that the partition's
HNSW index serves badly: the timed query mix of ``manage.py bench`` (half routed through HNSW;
own questions, paraphrases and misses), each HNSW-routed query run under several scan settings,
with recall@5 against the exact answer, the time, the scope's size and its share of the tenant's
partition.

    DATABASE_URL=postgresql://…/trailcache_growth_1m TRAILCACHE_DEV=true \
        .venv/bin/python -m research.hnsw_routing [--queries 1000] [--out reports/hnsw_routing.json]

Needs a database seeded by ``manage.py bench`` (``make bench-growth GROWTH_ARGS=--with-1m`` or
``manage.py bench --trails 1000000 --tenants 1000 --database trailcache_growth_1m``). Reads only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from cachecore.embedding import get_embedder  # noqa: E402
from cachecore.engine.text import normalise_query  # noqa: E402
from cachecore.selectors import nearest  # noqa: E402
from research.bench import seed, timing  # noqa: E402
from tenants.models import Tenant  # noqa: E402

# (label, ef_search, max_scan_tuples, scan_mem_multiplier, rows fetched from the index; negative:
# strict order). The first is what selectors.nearest ships.
SETTINGS = [
    ("shipped: ef 100, 20k tuples", 100, 20000, 1.0, 5),
    ("ef 100, 10k tuples", 100, 10000, 1.0, 5),
    ("ef 100, 5k tuples", 100, 5000, 1.0, 5),
    ("ef 100, 2k tuples", 100, 2000, 1.0, 5),
    ("ef 200, 20k tuples", 200, 20000, 1.0, 5),
    ("ef 200, 5k tuples", 200, 5000, 1.0, 5),
    ("ef 100, 20k tuples, mem ×4", 100, 20000, 4.0, 5),
    ("ef 100, 20k tuples, strict order", 100, 20000, 1.0, -5),
]


def hnsw_ids(*, tenant: Tenant, scope: str, vector: str, model: str, ef: int, tuples: int, mem: float,
             fetch: int) -> list[tuple[str, float]]:
    order = "strict_order" if fetch < 0 else "relaxed_order"
    fetch = abs(fetch)
    where = ("WHERE tenant_id = %s AND scope = %s AND status = 'active' AND expires_at > %s "
             "AND embedding_model = %s")
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(f"SET LOCAL hnsw.iterative_scan = {order}; SET LOCAL hnsw.ef_search = {ef}; "
                    f"SET LOCAL hnsw.max_scan_tuples = {tuples}; SET LOCAL hnsw.scan_mem_multiplier = {mem}; "
                    "SELECT id, 1 - distance FROM (SELECT id, embedding <=> %s::vector AS distance "
                    f"FROM cachecore_trail {where} ORDER BY embedding <=> %s::vector LIMIT %s) n "
                    "ORDER BY distance LIMIT 5",
                    [vector, tenant.pk, scope, timezone.now(), model, vector, fetch])
        while cur.description is None and cur.nextset():
            pass
        return [(str(r[0]), float(r[1])) for r in cur.fetchall()]


def scope_share(tenant: Tenant, scope: str) -> tuple[int, float]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), (SELECT greatest(reltuples, 1) FROM pg_class WHERE oid = max(s.tableoid)) "
            "FROM (SELECT tableoid FROM cachecore_trail WHERE tenant_id = %s AND scope = %s AND status = 'active') s",
            [tenant.pk, scope])
        n, rows = cur.fetchone()
    return int(n), float(rows or 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000, help="timed queries drawn (about half go through HNSW)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    load_before = os.getloadavg()
    tenants = {t.pk: t for t in Tenant.objects.filter(slug__startswith=seed.TENANT_PREFIX)}
    queries = [q for q in timing.choose_queries(seed.load_probes(), tenants, args.queries) if q.path == "hnsw"]
    vectors = get_embedder().embed([normalise_query(q.text) for q in queries])
    model = get_embedder().version
    shares: dict[tuple, tuple[int, float]] = {}
    per: dict[str, list[dict]] = {label: [] for label, *_ in SETTINGS}
    for warm in (True, False):  # a first pass reads every page once: the timed pass finds them cached
        for q, v in zip(queries, vectors):
            tenant = tenants[q.tenant_id]
            key = (q.tenant_id, q.scope)
            if key not in shares:
                shares[key] = scope_share(tenant, q.scope)
            size, rows = shares[key]
            vector = nearest.vector_literal(v)
            truth = timing.exact_neighbours(tenant=tenant, scope=q.scope, embedding=v, limit=5, with_similarity=True)
            truth_ids = {t for t, _ in truth}
            clears = bool(truth) and truth[0][1] >= tenant.similarity_threshold
            for label, ef, tuples, mem, fetch in SETTINGS:
                t0 = time.perf_counter()
                got = hnsw_ids(tenant=tenant, scope=q.scope, vector=vector, model=model, ef=ef, tuples=tuples,
                               mem=mem, fetch=fetch)
                ms = (time.perf_counter() - t0) * 1000
                if warm:
                    continue
                per[label].append({
                    "size": size, "share": size / rows, "kind": q.kind, "ms": ms,
                    "recall": len(truth_ids & {g for g, _ in got}) / len(truth_ids) if truth_ids else 1.0,
                    # a first trail at the same similarity is a tie, not a miss
                    "top1_changed": clears and (not got or got[0][1] < truth[0][1] - 1e-6),
                })
    print(f"{len(queries)} HNSW-routed queries; load {load_before[0]:.2f} → {os.getloadavg()[0]:.2f}")
    print("| settings | recall@5 answerable mean / min | off-topic mean / min | nearest over threshold missed "
          "| p50 / p99 ms | off-topic p99 ms |")
    print("|---|---|---|---|---|---|")
    summary = {}
    for label, rows in per.items():
        ms = sorted(r["ms"] for r in rows)
        ans = [r["recall"] for r in rows if r["kind"] != "miss"]
        off = [r["recall"] for r in rows if r["kind"] == "miss"]
        off_ms = sorted(r["ms"] for r in rows if r["kind"] == "miss") or [0.0]
        summary[label] = {
            "n": len(rows), "answerable_mean": statistics.fmean(ans), "answerable_min": min(ans),
            "off_topic_mean": statistics.fmean(off) if off else None, "off_topic_min": min(off) if off else None,
            "top1_changed": sum(r["top1_changed"] for r in rows),
            "p50_ms": ms[len(ms) // 2], "p99_ms": ms[int(0.99 * (len(ms) - 1))],
            "off_topic_p99_ms": off_ms[int(0.99 * (len(off_ms) - 1))], "rows": rows,
        }
        x = summary[label]
        print(f"| {label} | {x['answerable_mean']:.3f} / {x['answerable_min']:.2f} | "
              f"{(x['off_topic_mean'] or 0):.3f} / {(x['off_topic_min'] or 0):.2f} | {x['top1_changed']} | "
              f"{x['p50_ms']:.2f} / {x['p99_ms']:.2f} | {x['off_topic_p99_ms']:.2f} |")
    shipped = per[SETTINGS[0][0]]
    print("\nshipped settings, by the scope's share of its partition:")
    for lo, hi in [(0, 0.01), (0.01, 0.02), (0.02, 0.05), (0.05, 0.2), (0.2, 1.01)]:
        band = [r for r in shipped if lo <= r["share"] < hi]
        if band:
            mean = statistics.fmean(r["recall"] for r in band)
            print(f"  share {lo:.0%}–{hi:.0%}: {len(band)} queries, recall mean {mean:.3f}"
                  f" min {min(r['recall'] for r in band):.2f}, p50 {statistics.median(r['ms'] for r in band):.2f} ms,"
                  f" sizes {min(r['size'] for r in band)}–{max(r['size'] for r in band)}")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
