"""The sections that cover a query best, across the tenant's corpus: the evidence against a
trail whose cited section is not the one that answers the query (``engine/evidence.py``,
``rival_margin``)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

import numpy as np
from django.db import connection

from cachecore.embedding import get_embedder
from cachecore.selectors.nearest import vector_literal
from tenants.caller import Caller
from tenants.scopes import entries_admit_scope_sql

# Sections returned: enough that a trail citing a few of the best still has a rival listed.
RIVAL_SECTIONS = 8
# Chunks ranked before grouping by section (a section's best chunk is all that counts).
RIVAL_CHUNKS = 64
# Tenants with at most this many chunks are scanned exactly (through the sections' tenant
# index); larger ones go through the chunks' HNSW index with iterative scan.
EXACT_MAX_CHUNKS = 6000
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
            "SELECT count(*) FROM (SELECT 1 FROM cachecore_section s JOIN cachecore_sectionchunk ch "
            "ON ch.section_id = s.id WHERE s.tenant_id = %s LIMIT %s) c",
            [tenant_pk, EXACT_MAX_CHUNKS + 1],
        )
        size = int(cur.fetchone()[0])
    with _sizes_lock:
        _sizes[key] = (size, now + _SIZE_TTL_S)
        _sizes.move_to_end(key)
        while len(_sizes) > _SIZES_MAX:
            _sizes.popitem(last=False)
    return size


def best_covering_sections(
    *, caller: Caller, scope: str, embedding: np.ndarray | str, limit: int = RIVAL_SECTIONS,
    exact_max_chunks: int = EXACT_MAX_CHUNKS,
) -> list[tuple[str, float]]:
    """The tenant's sections visible to ``scope`` whose chunks (of their current hash and the
    current model) come closest to the query, best first, each with its best cosine. One
    statement: exact over a small tenant's chunks, through the chunks' HNSW index with
    iterative scan for a large one (``exact_max_chunks``). A section the recall's scope may not see never counts:
    what it holds must not shape another scope's answer. Call inside a transaction."""
    tenant_pk = caller.tenant.pk
    vector = vector_literal(embedding)
    visible = entries_admit_scope_sql("s.scopes", "%s::text", "%s::boolean")
    # Placeholders in the order the SQL spells them: tenant-wide first, then the scope.
    params = [vector, get_embedder().version, tenant_pk, not caller.scope_limited, scope]
    chunks = (
        "SELECT s.external_id, ch.embedding <=> %s::vector AS distance"
        " FROM cachecore_sectionchunk ch JOIN cachecore_section s"
        " ON s.id = ch.section_id AND ch.sha256 = s.sha256"
        f" WHERE ch.embedding_model = %s AND s.tenant_id = %s AND {visible}"
    )
    with connection.cursor() as cur:
        if _tenant_chunks(tenant_pk) <= exact_max_chunks:
            # The fenced subquery (OFFSET 0) keeps the planner off the global HNSW index, which
            # would visit other tenants' chunks first: the tenant's chunks through its sections.
            cur.execute(
                f"SELECT external_id, 1 - min(distance) AS cos FROM ({chunks} OFFSET 0) b "
                "GROUP BY external_id ORDER BY cos DESC LIMIT %s",
                [*params, limit],
            )
        else:
            # One round trip: the settings and the query travel together (client-side binding).
            cur.execute(
                f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {_HNSW_EF_SEARCH}; "
                f"SELECT external_id, 1 - min(distance) AS cos FROM ({chunks} ORDER BY distance LIMIT %s) b "
                "GROUP BY external_id ORDER BY cos DESC LIMIT %s",
                [*params, RIVAL_CHUNKS, limit],
            )
            while cur.description is None and cur.nextset():
                pass
        return [(r[0], float(r[1])) for r in cur.fetchall()]
