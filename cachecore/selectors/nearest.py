"""The nearest-neighbour search over a tenant's scope: exact for small scopes, HNSW with
iterative scan for large ones."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from cachecore.embedding import get_embedder
from tenants.models import Tenant


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


@dataclass(frozen=True)
class Candidate:
    trail_id: str
    similarity: float
    query_normalised: str
    steps: list[object] = field(default_factory=list, compare=False, repr=False)
    boundary: float | None = None


def _json(value: object) -> list[object]:
    # A raw cursor may hand jsonb back as text, depending on the driver's loaders.
    return json.loads(value) if isinstance(value, str) else (value or [])  # type: ignore[return-value]


# (tenant, scope) → (active trails, valid until), least recently used first. Bounded: a
# client inventing a new scope string per request must not grow the process without limit.
_scope_sizes: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()
SCOPE_SIZE_CACHE_MAX = 4096
_scope_sizes_lock = threading.Lock()  # web workers may run threads
# Candidate list of the HNSW scan; iterative scan goes past it when the scope filter needs to.
_HNSW_EF_SEARCH = 100
_SCOPE_SIZE_TTL_S = 60.0


def active_scope_size(*, tenant: Tenant, scope: str) -> int:
    """Active trails in a scope, counted up to the exact-search limit + 1, cached per
    process for a minute (the size only routes the query; either path is correct)."""
    key = (str(tenant.pk), scope)
    now = time.monotonic()
    with _scope_sizes_lock:
        cached = _scope_sizes.get(key)
        if cached and cached[1] > now:
            _scope_sizes.move_to_end(key)
            return cached[0]
    limit = settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM (SELECT 1 FROM cachecore_trail WHERE tenant_id = %s AND scope = %s "
            "AND status = 'active' LIMIT %s) s",
            [tenant.pk, scope, limit + 1],
        )
        size = cur.fetchone()[0]
    with _scope_sizes_lock:
        _scope_sizes[key] = (size, now + _SCOPE_SIZE_TTL_S)
        _scope_sizes.move_to_end(key)
        while len(_scope_sizes) > SCOPE_SIZE_CACHE_MAX:
            _scope_sizes.popitem(last=False)
    return size


_table_rows: list[float] = [0.0, 0.0]  # [estimated rows of cachecore_trail, valid until]


def exact_search_limit() -> int:
    """Scopes with at most this many active trails are searched exactly. The HNSW index
    covers the whole table, so a filtered HNSW scan visits about (table rows / scope size)
    entries per hit while an exact search scans the scope: the crossover grows like the
    square root of the table, ≈ 5·√rows as measured by ``manage.py bench`` (100k trails:
    ~1.5k; 1M: ~5k). Never above TRAILCACHE_EXACT_SEARCH_MAX_TRAILS, never below 1,000.
    The row estimate (pg_class.reltuples) is cached per process for a minute."""
    cap = settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    now = time.monotonic()
    if _table_rows[1] <= now:
        with connection.cursor() as cur:
            cur.execute("SELECT reltuples FROM pg_class WHERE oid = 'cachecore_trail'::regclass")
            row = cur.fetchone()
        _table_rows[:] = [max(0.0, float(row[0])) if row else 0.0, now + _SCOPE_SIZE_TTL_S]
    return min(cap, max(1000, int(5 * _table_rows[0] ** 0.5)))


def nearest_trails(*, tenant: Tenant, scope: str, embedding: np.ndarray, limit: int = 5) -> list[Candidate]:
    """The ``limit`` nearest active, unexpired trails of the tenant's scope by cosine,
    best first. Small scopes (``exact_search_limit``) are searched exactly through the
    (tenant, scope, status) btree; large ones through HNSW with iterative scan, re-ranked
    exactly. Call inside a transaction
    (``SET LOCAL``)."""
    vector = vector_literal(embedding)
    exact = active_scope_size(tenant=tenant, scope=scope) <= exact_search_limit()
    model = get_embedder().version
    where = ("WHERE tenant_id = %s AND scope = %s AND status = 'active' AND expires_at > %s "
             "AND embedding_model = %s")
    with connection.cursor() as cur:
        if exact:
            # The fenced subquery (OFFSET 0) keeps the planner off the HNSW index and computes
            # each distance once (sorting by a second copy of the expression costs ~20%).
            cur.execute(
                "SELECT n.id, n.distance, n.query_normalised, t.steps, t.prefetch_boundary "
                "FROM (SELECT id, distance, query_normalised "
                "FROM (SELECT id, embedding <=> %s::vector AS distance, query_normalised FROM cachecore_trail "
                f"{where} OFFSET 0) s ORDER BY distance LIMIT %s) n JOIN cachecore_trail t ON t.id = n.id",
                [vector, tenant.pk, scope, timezone.now(), model, limit],
            )
        else:
            # One round trip: the settings and the query travel together (client-side binding).
            cur.execute(
                f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {_HNSW_EF_SEARCH}; "
                "SELECT n.id, n.distance, n.query_normalised, t.steps, t.prefetch_boundary "
                "FROM (SELECT id, embedding <=> %s::vector "
                f"AS distance, query_normalised FROM cachecore_trail {where} ORDER BY embedding <=> %s::vector "
                "LIMIT %s) n JOIN cachecore_trail t ON t.id = n.id",
                [vector, tenant.pk, scope, timezone.now(), model, vector, limit],
            )
            while cur.description is None and cur.nextset():
                pass
        rows = cur.fetchall()
    candidates = [Candidate(str(r[0]), 1.0 - float(r[1]), r[2], _json(r[3]), r[4]) for r in rows]
    candidates.sort(key=lambda c: c.similarity, reverse=True)
    return candidates
