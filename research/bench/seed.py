"""Seeding the benchmark database in bulk: tenants through the ORM, sections, chunks, trails
and citations through binary COPY, with the trail/citation indexes dropped during the load
and rebuilt afterwards (HNSW build timed).

Trails: tenant sizes Zipf-like, several scopes per tenant. A sample of trails (the *probes*)
carry real embeddings of generated questions; the bulk carries synthetic vectors mixed from a
pool of real question embeddings plus noise, so they lie where real embeddings lie (random
clusters in all 384 dimensions make HNSW look worse than it is). Every trail cites 1–3 real
sections of its tenant with their current hashes, so timed recalls do the whole recall path.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
from django.db import connection
from psycopg.types.json import Jsonb

from cachecore.embedding import get_embedder
from cachecore.engine.text import content_hash, normalise_query, split_chunks, split_sentences
from research.bench import corpus
from tenants.models import Tenant

SEED_VERSION = 4  # 4: sections' sentences (cachecore 0025)
TENANT_PREFIX = "bench-"
SCOPE_SHARES = [("default", 0.70), ("group:premium", 0.20), ("paper:1", 0.05), ("paper:2", 0.03), ("paper:3", 0.02)]
BULK_TABLES = ("cachecore_trail", "cachecore_citation")
Log = Callable[[str], None]


@dataclass(frozen=True)
class SeedParams:
    trails: int
    tenants: int
    real_trails: int
    seed: int = 7
    version: int = SEED_VERSION
    # The embedding model of the real trails and chunks: another model seeds again.
    model: str = ""


def conninfo() -> str:
    """A libpq conninfo for Django's default database (its own connection, for COPY)."""
    s = connection.settings_dict
    parts = {"dbname": s["NAME"], "user": s.get("USER") or "", "password": s.get("PASSWORD") or "",
             "host": s.get("HOST") or "", "port": str(s.get("PORT") or "")}
    return " ".join(f"{k}='{v}'" for k, v in parts.items() if v)


def _raw_connect() -> psycopg.Connection:
    from pgvector.psycopg import register_vector

    conn = psycopg.connect(conninfo(), autocommit=True)
    register_vector(conn)
    return conn


def ensure_meta_tables(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS bench_meta (key text PRIMARY KEY, value jsonb NOT NULL)")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS bench_probe (trail_id uuid PRIMARY KEY, tenant_id uuid NOT NULL, "
        "scope text NOT NULL, feature int NOT NULL, query text NOT NULL, paraphrase text NOT NULL)"
    )


def drop_meta_tables() -> None:
    with _raw_connect() as conn:
        conn.execute("DROP TABLE IF EXISTS bench_meta, bench_probe")


def _meta_get(conn: psycopg.Connection, key: str) -> object:
    row = conn.execute("SELECT value FROM bench_meta WHERE key = %s", [key]).fetchone()
    return row[0] if row else None


def _meta_set(conn: psycopg.Connection, key: str, value: object) -> None:
    conn.execute("INSERT INTO bench_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                 "SET value = EXCLUDED.value", [key, Jsonb(value)])


def restore_indexes(conn: psycopg.Connection) -> None:
    """Recreate any index a crashed load left dropped (definitions kept in bench_meta)."""
    for _name, definition in (_meta_get(conn, "index_defs") or []):
        conn.execute(definition.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
                     .replace("CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX IF NOT EXISTS ", 1))


def seeded(params: SeedParams) -> dict | None:
    """The stored seed statistics when the database holds a complete seed with these parameters."""
    with _raw_connect() as conn:
        ensure_meta_tables(conn)
        restore_indexes(conn)
        if _meta_get(conn, "params") == asdict(params):
            return _meta_get(conn, "seed_stats")  # type: ignore[return-value]
    return None


def tenant_sizes(total: int, tenants: int) -> list[int]:
    """Zipf-like (1/rank), no tenant above a tenth of all trails (or twice the mean with few
    tenants), every tenant at least 5."""
    weights = np.array([1.0 / (i + 1) for i in range(tenants)])
    cap = max(total // 10, 2 * -(-total // tenants), 5)
    sizes = np.zeros(tenants)
    remaining, free = float(total), np.ones(tenants, dtype=bool)
    for _ in range(10):  # water-filling under the cap
        if not free.any():
            break
        share = remaining * weights * free / (weights * free).sum()
        over = free & (share > cap)
        if not over.any():
            sizes[free] = share[free]
            break
        sizes[over] = cap
        free &= ~over
        remaining = total - sizes[~free].sum()
    out = [max(5, int(x)) for x in sizes]
    i = 0
    while sum(out) < total:  # rounding remainder, to the tenants under the cap
        if out[i % tenants] < cap or tenants == 1:
            out[i % tenants] += 1
        i += 1
    return out


def _scope_counts(n: int) -> list[tuple[str, int]]:
    counts = [(scope, int(n * share)) for scope, share in SCOPE_SHARES]
    counts[0] = (counts[0][0], counts[0][1] + n - sum(c for _, c in counts))
    return [(s, c) for s, c in counts if c > 0]


def _embed(texts: list[str], log: Log, what: str) -> np.ndarray:
    started = time.perf_counter()
    vectors = get_embedder().embed([normalise_query(t) for t in texts])
    elapsed = time.perf_counter() - started
    log(f"  embedded {len(texts)} {what} in {elapsed:.1f}s ({len(texts) / max(elapsed, 1e-9):.0f}/s)")
    return vectors


def _synthetic(rng: np.random.Generator, pool: np.ndarray, n: int) -> np.ndarray:
    """Unit vectors near the real-embedding manifold: a pool vector, half of another, noise."""
    a = pool[rng.integers(0, len(pool), n)]
    b = pool[rng.integers(0, len(pool), n)]
    v = a + 0.5 * b + rng.normal(0.0, 0.02, size=a.shape).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _index_defs(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """Indexes of the bulk tables that back no constraint (those are dropped for the load). On
    a partitioned table the definition says ``ON ONLY`` (the parent alone); rebuilt without it,
    the index is built on every partition (per-partition HNSW)."""
    return [(name, definition.replace(" ON ONLY ", " ON ", 1)) for name, definition in conn.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = 'public' "
        "AND i.tablename = ANY(%s) AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
        "WHERE c.conname = i.indexname) ORDER BY i.indexname",
        [list(BULK_TABLES)],
    ).fetchall()]


def seed(params: SeedParams, *, log: Log = print, maintenance_work_mem: str = "") -> dict:
    """Empty the engine's tables and seed them; returns seed statistics (also stored)."""
    started = time.perf_counter()
    rng = random.Random(params.seed)
    nrng = np.random.default_rng(params.seed)
    embedder = get_embedder()
    model = embedder.version
    stats: dict[str, object] = {}
    with _raw_connect() as conn:
        ensure_meta_tables(conn)
        restore_indexes(conn)
        conn.execute("DELETE FROM bench_meta WHERE key IN ('params', 'seed_stats')")
        conn.execute("TRUNCATE bench_probe")
        conn.execute("TRUNCATE cachecore_citation, cachecore_sectionchunk, cachecore_sectionsentence, "
                     "cachecore_recallevent, cachecore_trail, cachecore_section")
    Tenant.objects.filter(slug__startswith=TENANT_PREFIX).delete()

    sizes = tenant_sizes(params.trails, params.tenants)
    tenants = Tenant.objects.bulk_create([
        Tenant(slug=f"{TENANT_PREFIX}{i:05d}", name=f"Bench tenant {i}") for i in range(params.tenants)
    ])
    products = [corpus.PRODUCTS[i % len(corpus.PRODUCTS)] for i in range(params.tenants)]
    log(f"  {params.tenants} tenants, sizes {sizes[0]}..{sizes[-1]} (largest scope ≈ {int(sizes[0] * 0.7)})")

    # Sections: the same documentation per product; chunks embedded once per distinct text.
    texts_by_product = {p: corpus.section_texts(p) for p in set(products)}
    distinct = sorted({t for texts in texts_by_product.values() for t in texts.values()})
    tokens = dict(zip(distinct, embedder.count_tokens_batch(distinct)))
    chunks = {t: split_chunks(t) for t in distinct}
    flat = [c for t in distinct for c in chunks[t]]
    chunk_vectors = dict(zip(flat, _embed(flat, log, "section chunks")))
    sentences = {t: split_sentences(t) for t in distinct}
    flat_sentences = sorted({s for t in distinct for s in sentences[t]})
    sentence_vectors = dict(zip(flat_sentences, _embed(flat_sentences, log, "section sentences")))
    hashes = {t: content_hash(t) for t in distinct}
    now = datetime.now(UTC)

    # Probe questions (real embeddings) and the pool for synthetic vectors.
    real_per_tenant = [min(size, max(2, round(params.real_trails * size / params.trails))) for size in sizes]
    probes = [[corpus.question(rng, products[i]) for _ in range(k)] for i, k in enumerate(real_per_tenant)]
    probe_texts = [q.text for qs in probes for q in qs]
    probe_vectors = _embed(probe_texts, log, "probe questions")
    pool_rng = random.Random(params.seed + 1)
    pool_n = max(100, min(3000, params.trails // 30))
    pool_texts = [corpus.question(pool_rng, pool_rng.choice(corpus.PRODUCTS)).text for _ in range(pool_n)]
    pool = _embed(pool_texts, log, "pool questions")

    with _raw_connect() as conn:
        defs = _index_defs(conn)
        _meta_set(conn, "index_defs", defs)
        for name, _ in defs:
            conn.execute(f'DROP INDEX IF EXISTS "{name}"')
        load_started = time.perf_counter()
        with conn.cursor() as cur:
            # Sections of the whole tenant (no scopes: every scope of a tenant-wide caller sees them).
            with cur.copy("COPY cachecore_section (tenant_id, external_id, text, sha256, token_count, chunks_ready, "
                          "created_at, updated_at, scopes) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["uuid", "varchar", "text", "varchar", "int4", "bool", "timestamptz", "timestamptz",
                                "varchar[]"])
                for tenant, product in zip(tenants, products):
                    for ext_id, text in texts_by_product[product].items():
                        copy.write_row([tenant.pk, ext_id, text, hashes[text], tokens[text], True, now, now, []])
            section_pk = {}
            for pk, tenant_id, ext_id in conn.execute("SELECT id, tenant_id, external_id FROM cachecore_section"):
                section_pk[(tenant_id, ext_id)] = pk
            product_of = {t.pk: p for t, p in zip(tenants, products)}
            with cur.copy("COPY cachecore_sectionchunk (section_id, tenant_id, ordinal, sha256, text, embedding, "
                          "embedding_model) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "uuid", "int4", "varchar", "text", "vector", "varchar"])
                for (tenant_id, ext_id), pk in section_pk.items():
                    text = texts_by_product[product_of[tenant_id]][ext_id]
                    for ordinal, chunk in enumerate(chunks[text]):
                        copy.write_row([pk, tenant_id, ordinal, hashes[text], chunk, chunk_vectors[chunk], model])
            with cur.copy("COPY cachecore_sectionsentence (section_id, ordinal, sha256, embedding, embedding_model) "
                          "FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "int4", "varchar", "vector", "varchar"])
                for (tenant_id, ext_id), pk in section_pk.items():
                    text = texts_by_product[product_of[tenant_id]][ext_id]
                    for ordinal, sentence in enumerate(sentences[text]):
                        copy.write_row([pk, ordinal, hashes[text], sentence_vectors[sentence], model])

            trail_cols = ("id, tenant_id, scope, query, query_normalised, embedding, steps, status, signal_source, "
                          "signal_accepted, subject, hits, positive_feedback, negative_feedback, created_at, "
                          "expires_at, status_changed_at, embedding_model")
            trail_types = ["uuid", "uuid", "varchar", "text", "text", "vector", "jsonb", "varchar", "varchar",
                           "bool", "varchar", "int4", "int4", "int4", "timestamptz", "timestamptz", "timestamptz",
                           "varchar"]
            citations: list[tuple[uuid.UUID, uuid.UUID, str, int, str]] = []
            probe_rows: list[tuple[uuid.UUID, uuid.UUID, str, int, str, str]] = []
            expires = now + timedelta(days=90)
            written = 0
            probe_i = 0
            with cur.copy(f"COPY cachecore_trail ({trail_cols}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(trail_types)
                for t_index, (tenant, product, size) in enumerate(zip(tenants, products, sizes)):
                    texts = texts_by_product[product]
                    ext_ids = list(texts)
                    scopes = [s for s, c in _scope_counts(size) for _ in range(c)]
                    n_real = real_per_tenant[t_index]
                    vectors = _synthetic(nrng, pool, size - n_real)
                    for j in range(size):
                        real = j < n_real
                        if real:
                            q = probes[t_index][j]
                            vector = probe_vectors[probe_i]
                            probe_i += 1
                            status = "active"
                        else:
                            q = corpus.question(rng, product)
                            vector = vectors[j - n_real]
                            roll = rng.random()
                            status = "active" if roll < 0.92 else ("stale" if roll < 0.97 else "pending")
                        # Probes spread over the tenant's scopes like the rest.
                        scope = scopes[(j * 7919) % size] if real else scopes[j]
                        overview, trouble = corpus.section_ids(q.feature)
                        cited = [overview]
                        if rng.random() < 0.5:
                            cited.append(trouble)
                        if rng.random() < 0.3:
                            other = rng.choice(ext_ids)
                            if other not in cited:
                                cited.append(other)
                        trail_id = uuid.uuid4()
                        steps = [{"tool": "search", "args": {"q": q.text}, "returned": cited}]
                        copy.write_row([trail_id, tenant.pk, scope, q.text, normalise_query(q.text), vector,
                                        Jsonb(steps), status, "caller", True, "", 0, 0, 0, now,
                                        expires if status != "pending" else now + timedelta(hours=24), now,
                                        model])
                        for pos, sid in enumerate(cited):
                            recorded = hashes[texts[sid]] if status != "stale" else "0" * 64
                            citations.append((trail_id, tenant.pk, sid, pos, recorded))
                        if real:
                            probe_rows.append((trail_id, tenant.pk, scope, q.feature, q.text, q.paraphrase))
                        written += 1
                    if t_index % max(1, params.tenants // 10) == 0:
                        log(f"  trails: {written}/{params.trails}")
            with cur.copy("COPY cachecore_citation (trail_id, tenant_id, section_id, position, recorded_hash) "
                          "FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["uuid", "uuid", "varchar", "int2", "varchar"])
                for row in citations:
                    copy.write_row(row)
            with cur.copy("COPY bench_probe (trail_id, tenant_id, scope, feature, query, paraphrase) "
                          "FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["uuid", "uuid", "text", "int4", "text", "text"])
                for row in probe_rows:
                    copy.write_row(row)
        load_s = time.perf_counter() - load_started
        log(f"  loaded {written} trails and {len(citations)} citations in {load_s:.1f}s")
        stats.update(load_s=round(load_s, 2), trails_loaded_per_s=round(written / load_s),
                     citations=len(citations), probes=len(probe_rows))

        mwm = maintenance_work_mem or f"{max(1024, params.trails * 4 // 1024)}MB"
        conn.execute(f"SET maintenance_work_mem = '{mwm}'")
        conn.execute("SET max_parallel_maintenance_workers = 2")
        stats["maintenance_work_mem"] = mwm
        btree_s = 0.0
        for name, definition in defs:
            t0 = time.perf_counter()
            conn.execute(definition)
            took = time.perf_counter() - t0
            if "USING hnsw" in definition:
                stats["hnsw_build_s"] = round(took, 2)
                log(f"  HNSW index {name} built in {took:.1f}s")
            elif "USING gin" in definition:
                stats["trgm_build_s"] = round(took, 2)
            else:
                btree_s += took
        stats["btree_build_s"] = round(btree_s, 2)
        # All rebuilt: forget the saved definitions, or a later run would restore indexes that a
        # migration has dropped since.
        conn.execute("DELETE FROM bench_meta WHERE key = 'index_defs'")
        t0 = time.perf_counter()
        conn.execute("VACUUM ANALYZE cachecore_trail, cachecore_citation, cachecore_section, cachecore_sectionchunk, "
                     "cachecore_sectionsentence")
        stats["vacuum_analyze_s"] = round(time.perf_counter() - t0, 2)
        stats["seed_total_s"] = round(time.perf_counter() - started, 2)
        stats["sizes"] = sizes[:5] + ([sizes[-1]] if len(sizes) > 5 else [])
        _meta_set(conn, "seed_stats", stats)
        _meta_set(conn, "params", asdict(params))
        _meta_set(conn, "seeded_at", now.isoformat())
    log(f"  seeded in {stats['seed_total_s']}s")
    return stats


def load_probes() -> list[dict]:
    with _raw_connect() as conn:
        rows = conn.execute("SELECT trail_id, tenant_id, scope, feature, query, paraphrase FROM bench_probe "
                            "ORDER BY trail_id").fetchall()
    return [{"trail_id": str(r[0]), "tenant_id": r[1], "scope": r[2], "feature": r[3], "query": r[4],
             "paraphrase": r[5]} for r in rows]


def dumps(obj: object) -> str:
    return json.dumps(obj, default=str)
