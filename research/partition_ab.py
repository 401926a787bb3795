"""Partitioned trails against one unpartitioned table, side by side on the same rows and under
the same load: the nearest-neighbour statement of ``selectors.nearest`` alone.

    .venv/bin/python -m research.partition_ab --database-url postgresql://…/trailcache_bench \
        [--queries 400] [--out reports/partition_ab.json]

Needs a database seeded by ``manage.py bench`` and migrated to the partitioned schema (migration
0011). Builds ``bench_trail_flat`` once (a copy of every row and column, a primary key on id, the
(tenant_id, scope, status) btree and one HNSW index over all rows, as before the migration), then
for probe paraphrases of the bench runs the same statement against each table through each
path (exact scan, HNSW), in a shuffled order per query: by scope size, and as routed by each
table's rule (exact up to 5·√rows of the table, 1,000..5,000, as before the migration; or of the
tenant's partition, EXACT_SEARCH_FLOOR..5,000),
with recall@5 against the exact answer. Load
average printed with the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg

from cachecore.embedding import Embedder
from cachecore.engine.text import normalise_query

PARTITIONED, FLAT = "cachecore_trail", "bench_trail_flat"
EF_SEARCH = 100
CAP = 5000
FLAT_FLOOR = 1000  # the rule before the migration
EXACT_SEARCH_FLOOR = 2000  # selectors.nearest.EXACT_SEARCH_FLOOR (importing it needs Django set up)
WHERE = "WHERE tenant_id = %s AND scope = %s AND status = 'active' AND expires_at > %s AND embedding_model = %s"


def _exact_sql(table: str) -> str:
    return ("SELECT n.id, n.distance FROM (SELECT id, distance FROM (SELECT id, embedding <=> %s::vector AS distance "
            f"FROM {table} {WHERE} OFFSET 0) s ORDER BY distance LIMIT 5) n "
            f"JOIN {table} t ON t.tenant_id = %s AND t.id = n.id")


def _hnsw_sql(table: str) -> str:
    return (f"SELECT n.id, n.distance FROM (SELECT id, embedding <=> %s::vector AS distance FROM {table} {WHERE} "
            f"ORDER BY embedding <=> %s::vector LIMIT 5) n JOIN {table} t ON t.tenant_id = %s AND t.id = n.id")


def _ensure_flat(conn: psycopg.Connection, log=print) -> None:  # noqa: ANN001
    if conn.execute("SELECT to_regclass(%s)", [FLAT]).fetchone()[0]:
        return
    log("building bench_trail_flat (one table, one HNSW index) …")
    t0 = time.perf_counter()
    # Every column, same storage and fill factor: the same rows on the same pages (TOAST included).
    conn.execute(f"CREATE TABLE {FLAT} (LIKE {PARTITIONED} INCLUDING DEFAULTS INCLUDING STORAGE) "
                 "WITH (fillfactor = 80)")
    conn.execute(f"INSERT INTO {FLAT} SELECT * FROM {PARTITIONED} ORDER BY tenant_id, created_at")
    conn.execute(f"ALTER TABLE {FLAT} ADD PRIMARY KEY (id)")
    conn.execute(f"CREATE INDEX ON {FLAT} (tenant_id, scope, status)")
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute(f"CREATE INDEX ON {FLAT} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
    log(f"  built in {time.perf_counter() - t0:.1f}s")


def _percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    s = sorted(xs)
    return {"n": len(s), "p50_ms": round(statistics.median(s), 2),
            "p99_ms": round(s[min(len(s) - 1, int(0.99 * len(s)))], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    embedder = Embedder()
    load_before = os.getloadavg()
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_partitioned_table WHERE partrelid = %s::regclass",
                            [PARTITIONED]).fetchone():
            raise SystemExit("cachecore_trail is not partitioned here: migrate the bench database first")
        _ensure_flat(conn)
        conn.execute(f"VACUUM ANALYZE {FLAT}")
        conn.execute(f"VACUUM ANALYZE {PARTITIONED}")
        table_rows = conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [FLAT]).fetchone()[0]
        probes = conn.execute("SELECT tenant_id, scope, paraphrase FROM bench_probe ORDER BY md5(trail_id::text) "
                              "LIMIT %s", [args.queries]).fetchall()
        model = conn.execute(f"SELECT embedding_model FROM {PARTITIONED} LIMIT 1").fetchone()[0]
        now = datetime.now(UTC)
        vectors = embedder.embed([normalise_query(p[2]) for p in probes])
        buckets = [(0, 500), (500, 1000), (1000, 2000), (2000, 5000), (5000, 10**9)]
        # (table, path) → per probe: (scope size, routed here?, ms, recall@5)
        runs: dict[tuple[str, str], list[tuple[int, bool, float, float | None]]] = {
            (t, p): [] for t in (FLAT, PARTITIONED) for p in ("exact", "hnsw")}
        rng = random.Random(5)
        for warm in (True, False):
            for (tenant, scope, _), v in zip(probes, vectors):
                vec = "[" + ",".join(f"{x:.7g}" for x in v.tolist()) + "]"
                size, part_rows = conn.execute(
                    f"SELECT count(*), (SELECT reltuples FROM pg_class WHERE oid = max(s.tableoid)) FROM (SELECT "
                    f"tableoid FROM {PARTITIONED} WHERE tenant_id = %s AND scope = %s AND status = 'active' "
                    "LIMIT %s) s", [tenant, scope, 10**7]).fetchone()
                params = [tenant, scope, now, model]
                truth = {r[0] for r in conn.execute(_exact_sql(PARTITIONED), [vec, *params, tenant]).fetchall()}
                combos = list(runs)
                rng.shuffle(combos)
                for table, path in combos:
                    rows = table_rows if table == FLAT else float(part_rows or 0)
                    floor = FLAT_FLOOR if table == FLAT else EXACT_SEARCH_FLOOR
                    limit = min(CAP, max(floor, int(5 * max(rows, 0) ** 0.5)))
                    routed = (size <= limit) == (path == "exact")
                    with conn.transaction():
                        if path == "hnsw":
                            conn.execute(f"SET LOCAL hnsw.iterative_scan = relaxed_order; "
                                         f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
                        t0 = time.perf_counter()
                        if path == "exact":
                            got = conn.execute(_exact_sql(table), [vec, *params, tenant]).fetchall()
                        else:
                            got = conn.execute(_hnsw_sql(table), [vec, *params, vec, tenant]).fetchall()
                        took = (time.perf_counter() - t0) * 1000
                    if not warm:
                        hit = len({r[0] for r in got} & truth) / len(truth) if truth else None
                        runs[(table, path)].append((size, routed, took, hit))
    load_after = os.getloadavg()
    report: dict[str, object] = {"rows": int(table_rows), "queries": len(probes), "load_before": load_before,
                                 "load_after": load_after}
    for table in (FLAT, PARTITIONED):
        label = "flat" if table == FLAT else "partitioned"
        routed = [r for p in ("exact", "hnsw") for r in runs[(table, p)] if r[1]]
        hits = [r[3] for r in routed if r[3] is not None]
        by_bucket = {}
        for lo, hi in buckets:
            row = {}
            for path in ("exact", "hnsw"):
                xs = [r for r in runs[(table, path)] if lo < r[0] <= hi]
                if xs:
                    row[path] = {**_percentiles([r[2] for r in xs]),
                                 "recall_at_5": round(float(np.mean([r[3] for r in xs if r[3] is not None] or [1])), 4)}
            if row:
                by_bucket[f"{lo}-{hi}" if hi < 10**9 else f">{lo}"] = row
        report[label] = {"routed": _percentiles([r[2] for r in routed]),
                         "routed_hnsw": sum(1 for r in runs[(table, "hnsw")] if r[1]),
                         "recall_at_5_mean": round(float(np.mean(hits)), 4), "recall_at_5_min": round(min(hits), 4),
                         "by_scope_size": by_bucket}
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
