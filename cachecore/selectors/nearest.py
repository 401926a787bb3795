"""The nearest-neighbour search over a tenant's scope: exact for small scopes, HNSW with
iterative scan for large ones."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone
from psycopg import pq

from cachecore.embedding import get_embedder
from cachecore.engine.decide import Candidate
from tenants.models import Tenant


def vector_literal(vector: np.ndarray | str) -> str:
    """The pgvector text form of a vector (a literal is returned as it is: a caller that sends
    one vector to several statements builds it once): each component as ``%.7g``, formatted in
    one operation (75 against 117 µs per 384 components, one f-string each)."""
    if isinstance(vector, str):
        return vector
    values = vector.tolist()
    return "[" + _components(len(values)) % tuple(values) + "]"


@functools.lru_cache(maxsize=8)
def _components(n: int) -> str:
    return ",".join(["%.7g"] * n)


def _json(value: object) -> list[object]:
    # A raw cursor may hand jsonb back as text, depending on the driver's loaders.
    return json.loads(value) if isinstance(value, str) else (value or [])  # type: ignore[return-value]


# (tenant, scope) → (active trails, rows of the tenant's partition, valid until), least recently
# used first. Bounded: a client inventing a new scope string per request must not grow the
# process without limit.
_scope_sizes: OrderedDict[tuple[str, str], tuple[int, float, float]] = OrderedDict()
SCOPE_SIZE_CACHE_MAX = 4096
_scope_sizes_lock = threading.Lock()  # web workers may run threads
# Candidate list of the HNSW scan; iterative scan goes past it when the scope filter needs to.
_HNSW_EF_SEARCH = 100
_SCOPE_SIZE_TTL_S = 60.0


def _scope_route(*, tenant: Tenant, scope: str) -> tuple[int, float]:
    """Active trails in a scope, counted up to the exact-search cap + 1, and the estimated rows
    of the trail partition holding the tenant (pg_class.reltuples of the rows' ``tableoid``;
    0 for an empty scope). One statement, cached per process for a minute (the figures only
    route the query; either path is correct)."""
    key = (str(tenant.pk), scope)
    now = time.monotonic()
    with _scope_sizes_lock:
        cached = _scope_sizes.get(key)
        if cached and cached[2] > now:
            _scope_sizes.move_to_end(key)
            return cached[0], cached[1]
    limit = settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.n, coalesce((SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = c.part), 0) "
            "FROM (SELECT count(*) AS n, max(s.tableoid) AS part FROM (SELECT tableoid FROM cachecore_trail "
            "WHERE tenant_id = %s AND scope = %s AND status = 'active' LIMIT %s) s) c",
            [tenant.pk, scope, limit + 1],
        )
        size, rows = cur.fetchone()
    size, rows = int(size), float(rows)
    with _scope_sizes_lock:
        _scope_sizes[key] = (size, rows, now + _SCOPE_SIZE_TTL_S)
        _scope_sizes.move_to_end(key)
        while len(_scope_sizes) > SCOPE_SIZE_CACHE_MAX:
            _scope_sizes.popitem(last=False)
    return size, rows


EXACT_SEARCH_FLOOR = 2000


def square_root_crossover(rows: float, *, per_root: float, floor: int, cap: int) -> int:
    """The size up to which an exact scan beats a filtered HNSW scan of an index of ``rows``
    entries: the HNSW scan visits about (rows / size) entries per hit while the exact scan
    reads the size, so the crossover grows like the square root of the index (``per_root``·√rows,
    the coefficient measured for each index), held between ``floor`` and ``cap``."""
    return min(cap, max(floor, int(per_root * rows ** 0.5)))


def exact_search_limit(rows: float) -> int:
    """Scopes with at most this many active trails are searched exactly. Trails are
    partitioned by tenant and each partition has its own HNSW index, so a filtered HNSW scan
    visits about (partition rows / scope size) entries per hit while an exact search scans the
    scope: the crossover grows like the square root of the partition, ≈ 5·√rows (measured on
    one global index by ``manage.py bench``: 100k rows, ~1.5k; 1M, ~5k). On 16 partitions of
    100k trails (``research.partition_ab``) the exact scan wins up to about 2,000 active trails
    and the partition's HNSW beyond (1–2k: 6.3 vs 8.6 ms; 2–5k: 22.6 vs 8.6 ms): hence the
    floor. ``rows``: the rows of the partition the scan visits (``_scope_route``). Never above
    TRAILCACHE_EXACT_SEARCH_MAX_TRAILS, never below 2,000."""
    cap = settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    return square_root_crossover(rows, per_root=5, floor=EXACT_SEARCH_FLOOR, cap=cap)


def search_path(*, tenant: Tenant, scope: str) -> str:
    """``"exact"`` or ``"hnsw"``: the path ``nearest_trails`` takes for this scope."""
    size, rows = _scope_route(tenant=tenant, scope=scope)
    return "exact" if size <= exact_search_limit(rows=rows) else "hnsw"


# The query's vector, sent once per statement: ``WITH query_vector AS (SELECT %s::vector AS v)``
# and ``QUERY_VECTOR`` wherever a statement needs it (an init plan, so the HNSW index still
# orders by it).
QUERY_VECTOR_CTE = "query_vector AS (SELECT %s::vector AS v)"
QUERY_VECTOR = "(SELECT v FROM query_vector)"
# For a plan made without the values (recall's prepared statement): on the HNSW path the order
# must come from the index. Such a plan cannot see that the scope is large (that is why the
# path is HNSW) and would sort the whole scope instead; with sorts off only the final sort of
# a handful of rows remains. Only ever SET LOCAL in a transaction of the statement's own.
HNSW_ORDER_FROM_INDEX = "SET LOCAL enable_sort = off; "


def candidates_sql(*, tenant: Tenant, scope: str, limit: int) -> tuple[str, str, list[object]]:
    """The nearest-trails read as parts of a statement that defines ``QUERY_VECTOR_CTE``:
    the settings to send before it (HNSW path: ``SET LOCAL``; empty for the exact path), a
    SELECT of the candidates' columns (``candidate_from_row`` reads them) and its parameters.
    The path is ``search_path``'s (may run the scope-size statement, once a minute per scope)."""
    exact = search_path(tenant=tenant, scope=scope) == "exact"
    # ``(…) IS TRUE``: the same rows, but never a scan of the expiry index. Nearly every trail
    # is unexpired, and a plan that doesn't know the values (recall's prepared statement) would
    # otherwise AND the scope's index with the whole partition's expiry index.
    where = ("WHERE tenant_id = %s AND scope = %s AND status = 'active' AND (expires_at > %s) IS TRUE "
             "AND embedding_model = %s")
    # The limit is part of the SQL (an int): a plan that does not know the values still sees
    # that only a few rows are wanted, so it keeps ordering by the HNSW index.
    limit = int(limit)
    params: list[object] = [tenant.pk, scope, timezone.now(), get_embedder().version, tenant.pk]
    if exact:
        # The fenced subquery (OFFSET 0) keeps the planner off the HNSW index and computes
        # each distance once (sorting by a second copy of the expression costs ~20%).
        return "", (
            "SELECT n.id, n.distance, n.query_normalised, t.steps, t.prefetch_boundary, t.has_positives "
            "FROM (SELECT id, distance, query_normalised "
            f"FROM (SELECT id, embedding <=> {QUERY_VECTOR} AS distance, query_normalised FROM cachecore_trail "
            f"{where} OFFSET 0) s ORDER BY distance LIMIT {limit}) n "
            "JOIN cachecore_trail t ON t.tenant_id = %s AND t.id = n.id"
        ), params
    return (
        f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {_HNSW_EF_SEARCH}; ",
        "SELECT n.id, n.distance, n.query_normalised, t.steps, t.prefetch_boundary, t.has_positives "
        f"FROM (SELECT id, embedding <=> {QUERY_VECTOR} "
        f"AS distance, query_normalised FROM cachecore_trail {where} ORDER BY embedding <=> {QUERY_VECTOR} "
        f"LIMIT {limit}) n JOIN cachecore_trail t ON t.tenant_id = %s AND t.id = n.id",
        params,
    )


# Columns of a candidates_sql row (the last, whether the trail has positives, is for the
# exemplars' read: ``citations.candidate_laterals_sql``).
CANDIDATE_COLUMNS = 6


def candidate_from_row(row: Sequence[object]) -> Candidate:
    """The engine's Candidate from the first ``CANDIDATE_COLUMNS`` columns of a row."""
    return Candidate(str(row[0]), 1.0 - float(row[1]), row[2], _json(row[3]), boundary=row[4])  # type: ignore[arg-type]


def last_rows(cur: Any) -> list[tuple[Any, ...]]:
    """The rows of a multi-statement query's last result with rows (after its ``SET LOCAL``s).
    Each result's status says whether it has rows: psycopg builds ``description`` anew (a
    ``Column`` per column) on every read of it, and the snapshot's rows are wide."""
    while (cur.pgresult is None or cur.pgresult.status != pq.ExecStatus.TUPLES_OK) and cur.nextset():
        pass
    return cur.fetchall()


def nearest_trails(*, tenant: Tenant, scope: str, embedding: np.ndarray | str, limit: int = 5) -> list[Candidate]:
    """The ``limit`` nearest active, unexpired trails of the tenant's scope by cosine, best
    first, as the engine takes them (``engine.decide.Candidate``, its cited sections still
    empty). ``embedding``: the query's vector or its pgvector literal. Small scopes
    (``exact_search_limit``) are searched exactly through the (tenant, scope, status) btree;
    large ones through the HNSW index of the tenant's partition
    with iterative scan, re-ranked exactly. Both statements name the tenant wherever they read
    trails, so the planner touches one partition. Call inside a transaction (``SET LOCAL``)."""
    settings_sql, select, params = candidates_sql(tenant=tenant, scope=scope, limit=limit)
    with connection.cursor() as cur:
        # One round trip: the settings and the query travel together (client-side binding).
        cur.execute(f"{settings_sql}WITH {QUERY_VECTOR_CTE} {select}", [vector_literal(embedding), *params])
        rows = last_rows(cur)
    candidates = [candidate_from_row(r) for r in rows]
    candidates.sort(key=lambda c: c.similarity, reverse=True)
    return candidates
