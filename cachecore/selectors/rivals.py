"""The sections that cover a query best, across the tenant's corpus, and the trails citing
them: the evidence against a trail whose cited section is not the one that answers the query
(``engine/evidence.py``, ``rival_margin``), and a second way to find the trail that answers a
reworded question whose words the trail's question does not share."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from django.db import connection
from django.utils import timezone

from cachecore.embedding import get_embedder
from cachecore.engine.decide import Candidate
from cachecore.selectors.nearest import _json, vector_literal
from tenants.caller import Caller
from tenants.scopes import entries_admit_scope_sql

# Sections returned: enough that a trail citing a few of the best still has a rival listed.
RIVAL_SECTIONS = 8
# The best sections whose citing trails are candidates too (and at most that many trails).
SECTION_ROUTE = 3
# Chunks ranked before grouping by section (a section's best chunk is all that counts).
RIVAL_CHUNKS = 64
# Tenants with at most this many chunks are scanned exactly (through the sections' tenant
# index); larger ones go through the chunks' HNSW index with iterative scan.
EXACT_MAX_CHUNKS = 2000
_HNSW_EF_SEARCH = 100

# tenant → (chunks, counted up to EXACT_MAX_CHUNKS + 1; valid until), least recently used first.
_sizes: OrderedDict[str, tuple[int, float]] = OrderedDict()
_SIZES_MAX = 4096
_SIZE_TTL_S = 60.0
_sizes_lock = threading.Lock()


def _tenant_chunks(tenant_pk: object) -> int:
    """The tenant's chunks, counted up to the exact-scan cap + 1, cached per process for a
    minute (the figure only routes the query; either path is correct)."""
    key = str(tenant_pk)
    now = time.monotonic()
    with _sizes_lock:
        cached = _sizes.get(key)
        if cached and cached[1] > now:
            _sizes.move_to_end(key)
            return cached[0]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM (SELECT 1 FROM cachecore_sectionchunk WHERE tenant_id = %s LIMIT %s) c",
            [tenant_pk, EXACT_MAX_CHUNKS + 1],
        )
        size = int(cur.fetchone()[0])
    with _sizes_lock:
        _sizes[key] = (size, now + _SIZE_TTL_S)
        _sizes.move_to_end(key)
        while len(_sizes) > _SIZES_MAX:
            _sizes.popitem(last=False)
    return size


@dataclass(frozen=True)
class Covering:
    """What the sections covering a query say: the best of them (section id, best cosine), best
    first, and the trails citing the best few (candidates found through their sections)."""

    sections: list[tuple[str, float]] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)


def covering(
    *, caller: Caller, scope: str, embedding: np.ndarray | str, threshold: float, exclude: list[str],
    limit: int = RIVAL_SECTIONS, route: int = SECTION_ROUTE, exact_max_chunks: int = EXACT_MAX_CHUNKS,
) -> Covering:
    """The tenant's sections visible to ``scope`` whose chunks (of their current hash and the
    current model) come closest to the query, best first, each with its best cosine; and the
    active, unexpired trails of the scope (current model) other than ``exclude`` that cite one of
    the best ``route`` sections whose cosine reaches ``threshold``, nearest question first
    (``via_sections``). One statement: exact over a small tenant's chunks, through the chunks'
    HNSW index with iterative scan for a large one (``exact_max_chunks``). A section the
    recall's scope may not see never counts: what it holds must not shape another scope's
    answer. Call inside a transaction."""
    tenant_pk = caller.tenant.pk
    vector = vector_literal(embedding)
    visible = entries_admit_scope_sql("s.scopes", "%(scope)s::text", "%(tenant_wide)s::boolean")
    own = "ch.tenant_id = %(tenant)s AND ch.embedding_model = %(model)s"
    current = f"JOIN cachecore_section s ON s.id = c.section_id AND s.sha256 = c.sha256 WHERE {visible}"
    exact = _tenant_chunks(tenant_pk) <= exact_max_chunks
    if exact:
        # The fenced subquery (OFFSET 0) keeps the planner off the HNSW index: a small tenant's
        # chunks through the (tenant, model) index, every distance computed once.
        ranked = ("(SELECT s.external_id, c.distance FROM (SELECT ch.section_id, ch.sha256, ch.embedding <=> "
                  f"%(vector)s::vector AS distance FROM cachecore_sectionchunk ch WHERE {own} OFFSET 0) c {current})")
    else:
        # The nearest chunks of the tenant through the HNSW index (iterative scan: the tenant's
        # filter is applied inside the scan), then their sections' current hash and scopes.
        ranked = ("(SELECT s.external_id, c.distance FROM (SELECT ch.section_id, ch.sha256, ch.embedding <=> "
                  f"%(vector)s::vector AS distance FROM cachecore_sectionchunk ch WHERE {own} "
                  f"ORDER BY distance LIMIT %(chunks)s) c {current})")
    sql = (
        f"WITH best AS MATERIALIZED (SELECT external_id, 1 - min(distance) AS cos FROM {ranked} b "
        "GROUP BY external_id ORDER BY cos DESC LIMIT %(limit)s), "
        "route AS (SELECT external_id FROM best WHERE cos >= %(threshold)s ORDER BY cos DESC LIMIT %(route)s), "
        "citing AS (SELECT t.id, t.embedding <=> %(vector)s::vector AS distance, t.query_normalised, t.steps, "
        "t.prefetch_boundary FROM cachecore_trail t WHERE t.tenant_id = %(tenant)s AND t.scope = %(scope)s "
        "AND t.status = 'active' AND t.expires_at > %(now)s AND t.embedding_model = %(model)s "
        "AND NOT (t.id = ANY(%(exclude)s::uuid[])) AND t.id IN (SELECT c.trail_id FROM cachecore_citation c "
        "WHERE c.tenant_id = %(tenant)s AND c.section_id IN (SELECT external_id FROM route)) "
        "ORDER BY distance LIMIT %(route)s) "
        "SELECT external_id, cos, NULL::uuid, NULL::text, NULL::jsonb, NULL::float8 FROM best "
        "UNION ALL SELECT NULL, 1 - distance, id, query_normalised, steps, prefetch_boundary FROM citing"
    )
    params = {"vector": vector, "model": get_embedder().version, "tenant": tenant_pk,
              "tenant_wide": not caller.scope_limited, "scope": scope, "chunks": RIVAL_CHUNKS, "limit": limit,
              "threshold": threshold, "route": route, "now": timezone.now(), "exclude": [str(t) for t in exclude]}
    with connection.cursor() as cur:
        if exact:
            cur.execute(sql, params)
        else:
            # One round trip: the settings and the query travel together (client-side binding).
            # Sorts off: the planner's estimate of a tenant's share of the chunks must not turn
            # the scan into a sort of every chunk of the tenant.
            cur.execute(f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {_HNSW_EF_SEARCH}; "
                        "SET LOCAL enable_sort = off; " + sql, params)
            while cur.description is None and cur.nextset():
                pass
        rows = cur.fetchall()
    sections = sorted(((r[0], float(r[1])) for r in rows if r[2] is None), key=lambda x: -x[1])
    candidates = sorted((Candidate(str(r[2]), float(r[1]), r[3], _json(r[4]), boundary=r[5], via_sections=True)
                         for r in rows if r[2] is not None), key=lambda c: -c.similarity)
    return Covering(sections, candidates)
