"""``halfvec`` against ``vector`` for recall's exact path, on a seeded bench database.

``python -m research.halfvec_exact [--database trailcache_bench] [--queries 300] [--out reports/halfvec.json]``

Recall searches a scope of at most ``TRAILCACHE_EXACT_SEARCH_MAX_TRAILS`` trails exactly: it
reads the scope's rows and sorts them by cosine distance. This study copies the active trails
of bench scopes of several sizes into two tables of its own, one with a ``vector(384)`` column
and one with a ``halfvec(384)`` column (each kept in the row, as the trail table keeps its
embedding: ``STORAGE MAIN``), and times the exact top-5 over each, the two statements taking the same
query one after the other (alternating which goes first). It reports p50/p99 per size and the
recall@5 of the half-precision ranking against the single-precision one. The tables are
dropped afterwards. Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BUCKETS = ((200, 600), (600, 1500), (1500, 5000))
TABLE = "research_halfvec_exact"


def _pcts(values: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(values, 50)), 3), "p99": round(float(np.percentile(values, 99)), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.halfvec_exact", description=__doc__.split("\n\n")[1])
    parser.add_argument("--database", default="trailcache_bench")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "halfvec.json")
    args = parser.parse_args(argv)
    from research.localstack import use_database

    use_database(args.database)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("TRAILCACHE_DEV", "true")
    import django

    django.setup()
    import psycopg

    from research.bench.seed import conninfo

    rng = np.random.default_rng(0)
    report: dict = {"database": args.database, "load_start": os.getloadavg()[0], "sizes": []}
    with psycopg.connect(conninfo(), autocommit=True) as conn:
        scopes = conn.execute(
            "SELECT tenant_id, scope, count(*) FROM cachecore_trail WHERE status = 'active' "
            "GROUP BY tenant_id, scope ORDER BY count(*)").fetchall()
        drop = f"DROP TABLE IF EXISTS {TABLE}_v, {TABLE}_h"
        conn.execute(drop)
        try:
            for low, high in BUCKETS:
                chosen = [s for s in scopes if low <= s[2] < high]
                if not chosen:
                    continue
                tenant, scope, n = chosen[len(chosen) // 2]
                conn.execute(drop)
                for suffix, column in (("v", "embedding"), ("h", "embedding::halfvec(384)")):
                    conn.execute(f"CREATE TABLE {TABLE}_{suffix} (id uuid, {suffix} "
                                 f"{'vector' if suffix == 'v' else 'halfvec'}(384) STORAGE MAIN)")
                    conn.execute(f"INSERT INTO {TABLE}_{suffix} SELECT id, {column} FROM cachecore_trail "
                                 "WHERE tenant_id = %s AND scope = %s AND status = 'active'", [tenant, scope])
                    conn.execute(f"VACUUM ANALYZE {TABLE}_{suffix}")
                sizes = conn.execute(
                    f"SELECT pg_table_size('{TABLE}_v'), pg_table_size('{TABLE}_h'), "
                    f"(SELECT avg(pg_column_size(v)) FROM {TABLE}_v), (SELECT avg(pg_column_size(h)) FROM {TABLE}_h)"
                ).fetchone()
                rows = conn.execute(f"SELECT v::text FROM {TABLE}_v ORDER BY random() LIMIT %s",
                                    [args.queries]).fetchall()
                queries = []
                for (text,) in rows:   # a stored vector moved a little: a question near a trail
                    v = np.array(json.loads(text), dtype=np.float32) + rng.normal(0, 0.02, 384).astype(np.float32)
                    v /= np.linalg.norm(v)
                    queries.append("[" + ",".join(f"{x:.7g}" for x in v) + "]")
                sql = {
                    "vector": f"SELECT id FROM (SELECT id, v <=> %s::vector AS d FROM {TABLE}_v OFFSET 0) s "
                              "ORDER BY d LIMIT 5",
                    "halfvec": f"SELECT id FROM (SELECT id, h <=> %s::halfvec AS d FROM {TABLE}_h OFFSET 0) s "
                               "ORDER BY d LIMIT 5",
                }
                for q in queries[:20]:   # warm
                    for s in sql.values():
                        conn.execute(s, [q]).fetchall()
                times: dict[str, list[float]] = {"vector": [], "halfvec": []}
                overlap: list[float] = []
                for i, q in enumerate(queries):
                    got = {}
                    for kind in (("vector", "halfvec") if i % 2 == 0 else ("halfvec", "vector")):
                        t0 = time.perf_counter()
                        got[kind] = [r[0] for r in conn.execute(sql[kind], [q]).fetchall()]
                        times[kind].append((time.perf_counter() - t0) * 1000)
                    overlap.append(len(set(got["vector"]) & set(got["halfvec"])) / 5)
                report["sizes"].append({
                    "trails": n, "vector_table_bytes": sizes[0], "halfvec_table_bytes": sizes[1],
                    "vector_bytes": float(sizes[2]), "halfvec_bytes": float(sizes[3]),
                    "vector_ms": _pcts(times["vector"]), "halfvec_ms": _pcts(times["halfvec"]),
                    "halfvec_recall_at_5": {"mean": round(float(np.mean(overlap)), 4),
                                            "min": round(float(np.min(overlap)), 4)},
                })
                print(json.dumps(report["sizes"][-1]), flush=True)
        finally:
            conn.execute(drop)
    report["load_end"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
