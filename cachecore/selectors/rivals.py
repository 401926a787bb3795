"""The sections that cover a query best, across the tenant's corpus, and the trails citing
them: the evidence against a trail whose cited section is not the one that answers the query
(``engine/evidence.py``, ``rival_margin``), and a second way to find the trail that answers a
reworded question whose words the trail's question does not share."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from cachecore.embedding import get_embedder
from cachecore.engine.decide import Candidate
from cachecore.selectors.citations import candidate_laterals_sql
from cachecore.selectors.nearest import QUERY_VECTOR, QUERY_VECTOR_CTE, square_root_crossover
from cachecore.selectors.sections import sentence_coverage_sql
from tenants.caller import Caller
from tenants.scopes import entries_admit_scope_sql

# Sections returned: enough that a trail citing a few of the best still has a rival listed.
RIVAL_SECTIONS = 8
# The best sections whose citing trails are candidates too (and at most that many trails).
SECTION_ROUTE = 3
# Citations of each of those sections read (a section may be cited by thousands of trails; the
# first read finds the trails whose questions are nearest anyway).
CITING_PER_SECTION = 200
# Chunks ranked before grouping by section (a section's best chunk is all that counts).
RIVAL_CHUNKS = 64
# Tenants with more chunks than this read the chunks' HNSW index with iterative scan; up to this
# many, they scan their chunks exactly (through the chunks' (tenant, model) index) unless they are a
# large share of the HNSW index (``exact_chunks_limit``, ``chunk_route``).
EXACT_MAX_CHUNKS = 2000
# Below this many chunks the exact scan (about 1.6 ms + 2.3 µs a chunk) is within about 1 ms of
# the HNSW read (1.7–2.0 ms) whatever the index holds, and exact.
EXACT_MIN_CHUNKS = 500
_HNSW_EF_SEARCH = 100
# The order of the best sections' arrays (ties broken the same way in each).
BEST_ORDER = "best.cos DESC, best.external_id, best.namespace"
# Pending sections are counted up to this many (on the partial index of pending sections).
PENDING_COUNT_CAP = 1000

# tenant → (chunks counted up to EXACT_MAX_CHUNKS + 1, the chunk table's estimated rows, whether a
# section of the tenant is held to scopes; valid until), least recently used first.
_sizes: OrderedDict[str, tuple[int, float, bool, float]] = OrderedDict()
_SIZES_MAX = 4096
_SIZE_TTL_S = 60.0
_sizes_lock = threading.Lock()


def exact_chunks_limit(rows: float) -> int:
    """Tenants with at most this many chunks read them exactly. The chunks share one HNSW
    index; the crossover grows like its square root (``nearest.square_root_crossover``), as for
    trails (``nearest.exact_search_limit``). Measured on the Flask documentation
    tenant's covering read (1,712 chunks, ``python -m research.read_plans --chunk-route``):
    alone in the index, HNSW 1.7–1.9 ms against 5.2–6.1 ms exact, the same best sections for
    100/100 questions; beside the Python docs tenant (29,496 chunks in all) the two are even
    (4.3 ms p50; HNSW's p90 10.8 against 4.8 ms): 10·√rows puts the crossover there (1,717).
    Never below ``EXACT_MIN_CHUNKS`` nor above ``EXACT_MAX_CHUNKS`` (what a tenant that is a
    small share of a large index meets); ``rows`` unknown (a table never analysed: negative)
    counts as a large index."""
    if rows < 0:
        return EXACT_MAX_CHUNKS
    return square_root_crossover(rows, per_root=10, floor=EXACT_MIN_CHUNKS, cap=EXACT_MAX_CHUNKS)


def _tenant_chunks(tenant_pk: object) -> tuple[int, float, bool]:
    """The tenant's chunks, counted up to ``EXACT_MAX_CHUNKS`` + 1, the chunk table's estimated
    rows (``pg_class.reltuples``; negative when never analysed) and whether any of the tenant's
    sections is held to scopes. One statement, cached per process for a minute (the figures
    only route the query; either route is correct)."""
    key = str(tenant_pk)
    now = time.monotonic()
    with _sizes_lock:
        cached = _sizes.get(key)
        if cached and cached[3] > now:
            _sizes.move_to_end(key)
            return cached[0], cached[1], cached[2]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM cachecore_sectionchunk WHERE tenant_id = %s LIMIT %s) c), "
            "(SELECT reltuples FROM pg_class WHERE oid = 'cachecore_sectionchunk'::regclass), "
            "EXISTS (SELECT 1 FROM cachecore_section WHERE tenant_id = %s AND cardinality(scopes) > 0)",
            [tenant_pk, EXACT_MAX_CHUNKS + 1, tenant_pk],
        )
        size, rows, scoped = cur.fetchone()
    size, rows, scoped = int(size), float(rows), bool(scoped)
    with _sizes_lock:
        _sizes[key] = (size, rows, scoped, now + _SIZE_TTL_S)
        _sizes.move_to_end(key)
        while len(_sizes) > _SIZES_MAX:
            _sizes.popitem(last=False)
    return size, rows, scoped


def chunk_route(caller: Caller) -> str:
    """``"exact"`` or ``"hnsw"``: the route the covering read takes over the caller's tenant's
    chunks. The HNSW route reads the nearest chunks first and the sections' visibility after,
    so a recall that may not see every section (a scope-limited key, or a tenant with sections
    held to scopes) keeps the exact scan up to ``EXACT_MAX_CHUNKS``, as before the limit grew
    with the index: the sections it can see are all weighed."""
    size, rows, scoped = _tenant_chunks(caller.tenant.pk)
    limit = EXACT_MAX_CHUNKS if scoped or caller.scope_limited else exact_chunks_limit(rows)
    return "exact" if size <= limit else "hnsw"


@dataclass(frozen=True)
class Covering:
    """What the sections covering a query say: the best of them (section id, best cosine), best
    first (an id once, at its best, when sections of two namespaces share it), and the trails
    citing the best few (candidates found through their sections, with their cited sections and
    their exemplars' bars, as the snapshot reads them)."""

    sections: list[tuple[str, float]] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    # The same sections' best sentence cosines (section id, cosine), where their sentences are
    # known: the sentence-level rivals (``engine/evidence.sentence_rival``).
    sentences: list[tuple[str, float]] = field(default_factory=list)
    # Sections of the tenant still waiting for their chunks (counted up to PENDING_COUNT_CAP):
    # the best-covering list may miss one of them (engine/evidence.rivals_complete).
    chunks_pending: int = 0


def covering_sql(
    *, caller: Caller, scope: str, terms: list[str], threshold: float, exclude: list[str],
    limit: int = RIVAL_SECTIONS, route: int = SECTION_ROUTE, chunk_route_as: str | None = None,
    citing_per_section: int = CITING_PER_SECTION,
) -> tuple[str, str, list[object]]:
    """The covering read as the settings to send before it (HNSW path: ``SET LOCAL``), one
    statement that defines ``QUERY_VECTOR_CTE`` (its vector is the first parameter) and its
    parameters; ``covering_from_rows`` reads its rows.

    It reads the tenant's sections visible to ``scope`` whose chunks (of their current hash and
    the current model) come closest to the query, best first, each with its best cosine; and the
    active, unexpired trails of the scope (current model) other than ``exclude`` that cite one of
    the best ``route`` sections whose cosine reaches ``threshold`` (among the first
    ``citing_per_section`` citations of each), nearest question first, each
    with its cited sections (``citations.candidate_laterals_sql``: ``cited_sql`` and ``recalls.exemplars_sql``).
    Exact over a small tenant's chunks, through the chunks' HNSW index with iterative scan for a
    large one (``chunk_route``; ``chunk_route_as`` forces ``"exact"`` or ``"hnsw"``). A section
    the recall's scope may not see never counts: what it holds must not shape another scope's
    answer. Its rows: the best sections' ids and
    cosines, the pending count and the best sections' best sentence cosines (every row), then a
    citing trail's candidate columns, its
    exemplars and one of its cited sections (``recall_snapshot.candidates_from_rows``)."""
    tenant = caller.tenant
    model = get_embedder().version
    # Placeholders in the order the SQL spells them: tenant-wide first, then the scope.
    visible = entries_admit_scope_sql("s.scopes", "%s::text", "%s::boolean")
    own = "ch.tenant_id = %s AND ch.embedding_model = %s"
    current = f"JOIN cachecore_section s ON s.id = c.section_id AND s.sha256 = c.sha256 WHERE {visible}"
    distance = f"ch.embedding <=> {QUERY_VECTOR}"
    exact = (chunk_route_as or chunk_route(caller)) == "exact"
    if exact:
        # The fenced subquery (OFFSET 0) keeps the planner off the HNSW index: a small tenant's
        # chunks through the (tenant, model) index, every distance computed once.
        settings_sql, order = "", "OFFSET 0"
    else:
        # The nearest chunks of the tenant through the HNSW index (iterative scan: the tenant's
        # filter applies inside the scan), then their sections' current hash and scopes. The
        # limit is in the SQL, so a plan made without the values still orders by the index.
        settings_sql = f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {_HNSW_EF_SEARCH}; "
        order = f"ORDER BY {distance} LIMIT {int(RIVAL_CHUNKS)}"
    # A section is its (namespace, id): two of one id in two namespaces are two sections.
    best = (
        "best AS MATERIALIZED (SELECT external_id, namespace, section_pk, sha256, 1 - min(distance) AS cos FROM "
        "(SELECT s.external_id, s.namespace, s.id AS section_pk, s.sha256, c.distance FROM "
        f"(SELECT ch.section_id, ch.sha256, {distance} AS distance "
        f"FROM cachecore_sectionchunk ch WHERE {own} {order}) c {current}) b "
        f"GROUP BY external_id, namespace, section_pk, sha256 ORDER BY cos DESC LIMIT {int(limit)})"
    )
    chosen = (f"route AS (SELECT external_id, namespace FROM best WHERE cos >= %s ORDER BY cos DESC "
              f"LIMIT {int(route)})")
    # The trails citing the route's sections, found through the citations' section index (at
    # most ``citing_per_section`` citations of each: a section that thousands of trails cite would
    # otherwise make this read a scan of them all), then each trail by its key. The fence
    # (OFFSET 0) keeps the planner from walking the trails' HNSW index in distance order and
    # filtering it, and the lateral read by key from scanning the whole scope to hash it (a
    # plan made without the values cannot tell a scope of 64,000 trails from one of 200).
    citing = (
        "citing AS MATERIALIZED (SELECT * FROM (SELECT t.* "
        "FROM (SELECT DISTINCT c.trail_id FROM route r CROSS JOIN LATERAL (SELECT c.trail_id FROM cachecore_citation c "
        "WHERE c.tenant_id = %s AND c.section_id = r.external_id AND c.section_namespace = r.namespace "
        f"LIMIT {int(citing_per_section)}) c) ids "
        f"CROSS JOIN LATERAL (SELECT t.id, t.embedding <=> {QUERY_VECTOR} AS distance, t.query_normalised, t.steps, "
        "t.prefetch_boundary, t.has_positives FROM cachecore_trail t "
        "WHERE t.tenant_id = %s AND t.id = ids.trail_id AND t.scope = %s "
        "AND t.status = 'active' AND (t.expires_at > %s) IS TRUE AND t.embedding_model = %s "
        "AND NOT (t.id = ANY(%s::uuid[])) OFFSET 0) t OFFSET 0) f "
        f"ORDER BY distance LIMIT {int(route)})"
    )
    exemplars, cited, lateral_params = candidate_laterals_sql(caller=caller, scope=scope, terms=terms,
                                                              trail="citing")
    statement = (
        f"WITH {QUERY_VECTOR_CTE}, {best}, {chosen}, {citing} "
        f"SELECT (SELECT array_agg(external_id ORDER BY {BEST_ORDER}) FROM best), "
        f"(SELECT array_agg(cos ORDER BY {BEST_ORDER}) FROM best), "
        "(SELECT count(*) FROM (SELECT 1 FROM cachecore_section p WHERE p.tenant_id = %s AND NOT p.chunks_ready "
        f"AND p.text IS NOT NULL LIMIT {int(PENDING_COUNT_CAP)}) p), "
        # Each best section's best sentence, in the same order (NULL: its sentences wait).
        f"(SELECT array_agg(sen.query ORDER BY {BEST_ORDER}) FROM best LEFT JOIN LATERAL "
        f"({sentence_coverage_sql(section='best.section_pk', sha256='best.sha256')}) sen ON true), "
        "citing.id, citing.distance, citing.query_normalised, citing.steps, citing.prefetch_boundary, "
        "citing.has_positives, ex.cosines, ex.bars, ex.cited, ex.over_polarity, cit.* "
        "FROM (SELECT 1) one LEFT JOIN citing ON true "
        f"LEFT JOIN LATERAL ({exemplars}) ex ON true LEFT JOIN LATERAL ({cited}) cit ON true "
        "ORDER BY citing.distance, citing.id, cit.position"
    )
    params: list[object] = [
        tenant.pk, model, not caller.scope_limited, scope, threshold,
        tenant.pk, tenant.pk, scope, timezone.now(), model, [str(t) for t in exclude],
        tenant.pk, model, *lateral_params,
    ]
    return settings_sql, statement, params

