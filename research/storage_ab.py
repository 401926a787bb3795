"""The exact nearest-neighbour scan on one trail partition as stored (rows written under
pgvector's EXTERNAL strategy: vectors of large rows in the TOAST table) against a copy of the
same rows with the embedding kept in the row (STORAGE MAIN, migration 0012), scope by scope.

    .venv/bin/python -m research.storage_ab --database-url postgresql://…/trailcache_growth_1m \
        [--partition cachecore_trail_p09] [--queries 15]

Needs a bench database seeded before migration 0012 (or with its rows rewritten under
EXTERNAL). Builds ``bench_storage_main`` once (a copy of the partition, MAIN, the
(tenant_id, scope, status) btree), then times the exact statement of ``selectors.nearest`` on
each scope of 300–20,000 active trails, the two tables alternating. Reads only otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import psycopg

COPY = "bench_storage_main"
EXACT = ("SELECT id FROM (SELECT id, embedding <=> %s::vector AS d FROM {table} WHERE tenant_id = %s AND scope = %s "
         "AND status = 'active' AND expires_at > now() OFFSET 0) s ORDER BY d LIMIT 5")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    ap.add_argument("--partition", default="cachecore_trail_p09")
    ap.add_argument("--queries", type=int, default=15, help="query vectors per scope")
    args = ap.parse_args()
    part = args.partition
    if not part.replace("_", "").isalnum():
        raise SystemExit("--partition: a table name")
    with psycopg.connect(args.database_url, autocommit=True) as c:
        if not c.execute("SELECT to_regclass(%s)", [COPY]).fetchone()[0]:
            c.execute(f"CREATE TABLE {COPY} (LIKE {part} INCLUDING DEFAULTS)")
            c.execute(f"ALTER TABLE {COPY} ALTER COLUMN embedding SET STORAGE MAIN")
            c.execute(f"INSERT INTO {COPY} SELECT * FROM {part}")
            c.execute(f"CREATE INDEX ON {COPY} (tenant_id, scope, status)")
            c.execute(f"VACUUM ANALYZE {COPY}")
        for table in (part, COPY):
            out, total = c.execute(
                f"SELECT count(*) FILTER (WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL), count(*) FROM {table}"
            ).fetchone()
            size = c.execute("SELECT pg_size_pretty(pg_table_size(%s::regclass))", [table]).fetchone()[0]
            print(f"{table}: {out:,} of {total:,} vectors out of line; {size} with its TOAST table, no indexes")
        scopes = c.execute(f"SELECT tenant_id, scope, count(*) FROM {part} WHERE status = 'active' GROUP BY 1, 2 "
                           "HAVING count(*) BETWEEN 300 AND 20000 ORDER BY 3").fetchall()
        vectors = [r[0] for r in c.execute(f"SELECT embedding::text FROM {part} ORDER BY md5(id::text) LIMIT %s",
                                           [args.queries]).fetchall()]
        load = os.getloadavg()[0]
        print(f"| active trails in the scope | as stored: exact p50 ms | MAIN: exact p50 ms |  (load {load:.2f})")
        print("|---|---|---|")
        for tenant, scope, n in scopes:
            times: dict[str, list[float]] = {part: [], COPY: []}
            for v in vectors:
                for table in (part, COPY):
                    t0 = time.perf_counter()
                    c.execute(EXACT.format(table=table), [v, tenant, scope]).fetchall()
                    times[table].append((time.perf_counter() - t0) * 1000)
            print(f"| {n:,} | {statistics.median(times[part]):.2f} | {statistics.median(times[COPY]):.2f} |")


if __name__ == "__main__":
    main()
