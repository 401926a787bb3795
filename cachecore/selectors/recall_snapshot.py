"""Everything a recall reads, in one statement (one snapshot, one round trip): the nearest
trails of the scope, each one's cited sections as they are now (hash, text, the query's
terms, coverage by their chunks, whether the recall's scope may see them), the bars its
exemplars set for this query, and the tenant's document frequencies of the query's terms.

The statement is composed of each entity's own read (``nearest.candidates_sql``,
``citations.cited_sql``, ``recalls.exemplars_sql``, ``sections.term_frequencies_sql``), so a
rule lives in one place; the query's vector is sent once (``nearest.QUERY_VECTOR_CTE``)."""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import DatabaseError, connection

from cachecore.engine.decide import Candidate, Cited
from cachecore.selectors.citations import CITED_COLUMNS, candidate_laterals_sql, cited_from_row
from cachecore.selectors.nearest import (
    CANDIDATE_COLUMNS,
    HNSW_ORDER_FROM_INDEX,
    QUERY_VECTOR_CTE,
    candidate_from_row,
    candidates_sql,
    last_rows,
)
from cachecore.selectors.recalls import EXEMPLAR_COLUMNS, bars_from_exemplars
from cachecore.selectors.rivals import CITING_PER_SECTION, Covering, covering_sql
from cachecore.selectors.sections import term_frequencies_from_row, term_frequencies_sql
from tenants.caller import Caller


@dataclass(frozen=True)
class RecallSnapshot:
    """The candidates best first, each with its cited sections (in citation order) and, for a
    trail with exemplars, the bars they set for this query; the tenant's section count
    and how many sections hold each of the query's terms (both 0/empty without candidates)."""

    candidates: list[Candidate]
    sections: int = 0
    df: dict[str, int] = field(default_factory=dict)


def snapshot_sql(*, caller: Caller, scope: str, terms: list[str], limit: int) -> tuple[str, str, list[object]]:
    """The first read of a recall as the settings to send before it (HNSW path: ``SET LOCAL``),
    one statement that defines ``QUERY_VECTOR_CTE`` (the query's vector is its first parameter,
    then these parameters) and its parameters; ``recall_snapshot`` runs it and reads its rows."""
    tenant = caller.tenant
    settings_sql, candidates, candidate_params = candidates_sql(tenant=tenant, scope=scope, limit=limit)
    frequencies, frequency_params = term_frequencies_sql(tenant=tenant, terms=terms)
    # Only trails with a boundary or positives have exemplars: the others skip the index.
    exemplars, cited, lateral_params = candidate_laterals_sql(caller=caller, scope=scope, terms=terms, trail="cand")
    statement = (
        f"WITH {QUERY_VECTOR_CTE}, cand AS MATERIALIZED ({candidates}) "
        "SELECT cand.id, cand.distance, cand.query_normalised, cand.steps, cand.prefetch_boundary, "
        "cand.has_positives, ex.cosines, ex.bars, ex.cited, ex.over_polarity, tf.terms, tf.sections, cit.* FROM cand "
        f"CROSS JOIN ({frequencies}) tf "
        f"CROSS JOIN LATERAL ({exemplars}) ex "
        f"LEFT JOIN LATERAL ({cited}) cit ON true "
        "ORDER BY cand.distance, cand.id, cit.position"
    )
    return settings_sql, statement, [*candidate_params, *frequency_params, *lateral_params]


def recall_snapshot(*, caller: Caller, scope: str, vector: str, terms: list[str], limit: int) -> RecallSnapshot:
    """The reads of one recall in the caller's tenant and ``scope`` (``vector``: the query's
    pgvector literal, ``terms``: its content words): one statement (``snapshot_sql``), preceded
    on the HNSW path by its ``SET LOCAL`` settings in the same round trip (outside a transaction,
    PostgreSQL runs them as one implicit transaction). A section the recall's scope may not see
    now is ``hidden``."""
    settings_sql, statement, params = snapshot_sql(caller=caller, scope=scope, terms=terms, limit=limit)
    rows = _execute(settings_sql, statement, [vector, *params])
    if not rows:
        return RecallSnapshot([])
    # Each row: the candidate, its exemplars, the term frequencies, one cited section.
    tf_at = CANDIDATE_COLUMNS + EXEMPLAR_COLUMNS
    found = candidates_from_rows(rows, at=0, cited_at=tf_at + 2)
    sections, df = term_frequencies_from_row(rows[0][tf_at], rows[0][tf_at + 1])
    return RecallSnapshot(found, sections, df)


def candidates_from_rows(rows: list[tuple[Any, ...]], *, at: int, cited_at: int,
                         via_sections: bool = False) -> list[Candidate]:
    """The candidates of a read with one row per citation (a candidate's rows together): from
    column ``at`` the candidate's columns (``nearest.candidate_from_row``; NULL: no candidate in
    this row) and its exemplars' three arrays, from ``cited_at`` one cited section's
    (``citations.cited_from_row``; NULLs for a trail without citations). Best cosine first; a
    trail with exemplars gets the bars they set for this query (``recalls.bars_from_exemplars``)."""
    order: dict[str, Candidate] = {}
    cited_by: dict[str, list[Cited]] = {}
    for row in rows:
        if row[at] is None:
            continue
        trail_id = str(row[at])
        if trail_id not in order:
            candidate = candidate_from_row(row[at:at + CANDIDATE_COLUMNS])
            boundary, cited, over_polarity = bars_from_exemplars(
                row[at + CANDIDATE_COLUMNS:at + CANDIDATE_COLUMNS + EXEMPLAR_COLUMNS], boundary=candidate.boundary)
            order[trail_id] = replace(candidate, boundary=boundary, cited_bar=cited, cited_over_polarity=over_polarity,
                                      via_sections=via_sections)
            cited_by[trail_id] = []
        if row[cited_at] is not None:
            cited_by[trail_id].append(cited_from_row(row[cited_at:cited_at + CITED_COLUMNS], with_coverage=True))
    found = [replace(c, cited=tuple(cited_by[t])) for t, c in order.items()]
    found.sort(key=lambda c: c.similarity, reverse=True)
    return found


def recall_covering(*, caller: Caller, scope: str, vector: str, terms: list[str], threshold: float,
                    exclude: list[str], chunk_route_as: str | None = None,
                    citing_per_section: int = CITING_PER_SECTION) -> Covering:
    """The second read of a recall (``rivals.covering_sql``): the sections covering the query
    best, and the trails citing the best few that the first read did not find (``exclude``),
    with their cited sections and exemplars. One statement, run as the first one is."""
    settings_sql, statement, params = covering_sql(caller=caller, scope=scope, terms=terms, threshold=threshold,
                                                   exclude=exclude, chunk_route_as=chunk_route_as,
                                                   citing_per_section=citing_per_section)
    rows = _execute(settings_sql, statement, [vector, *params])
    if not rows:
        return Covering()
    ids, cosines, pending, sentences = rows[0][0] or [], rows[0][1] or [], int(rows[0][2] or 0), rows[0][3] or []
    # Each row after those four: a citing trail, its exemplars, one of its cited sections.
    found = candidates_from_rows(rows, at=4, cited_at=4 + CANDIDATE_COLUMNS + EXEMPLAR_COLUMNS, via_sections=True)
    # Best first: an id held by sections of two namespaces counts once, at its best.
    best: dict[str, float] = {}
    by_sentence: dict[str, float] = {}
    for section_id, cosine, sentence in zip(ids, cosines, sentences, strict=True):
        best.setdefault(str(section_id), float(cosine))
        if sentence is not None:
            by_sentence[str(section_id)] = max(float(sentence), by_sentence.get(str(section_id), -1.0))
    return Covering(list(best.items()), found, chunks_pending=pending, sentences=list(by_sentence.items()))


# Planning the statement costs about as much as running it (≈ 1 ms each on the bench's data),
# so outside a caller's transaction each database session prepares it once and runs it with a
# generic plan: the tenant's partitions are pruned when it runs, and the path (exact or HNSW)
# is already in the SQL. Inside a caller's transaction it is planned each time, so that no
# planner setting outlives it there.
# What each session (raw connection) has prepared; False: the session's prepared statements are
# not what this process made them (DEALLOCATE or DISCARD ALL, a pooler sharing server
# connections): it plans the statement each time from then on.
_prepared: weakref.WeakKeyDictionary[Any, set[str] | bool] = weakref.WeakKeyDictionary()
_prepared_lock = threading.Lock()
_PLACEHOLDER = re.compile(r"%s")
# The prepared statement does not exist / already exists.
_NOT_OURS = {"26000", "42P05"}


# For the exact path's generic plan: the tenant's rows through its index, never a scan of the
# table. A plan made without the values estimates a tenant's rows as the table's share of an
# average tenant; where one tenant holds most of the rows (a large documentation tenant beside
# small ones) that share is large, and the plan scanned every tenant's chunks: a tenant of 1,712
# chunks beside one of 27,784, covering read 20.6 → 5.6 ms (docs/performance.md). Only ever SET
# LOCAL in a transaction of the statement's own.
EXACT_FROM_INDEX = "SET LOCAL enable_seqscan = off; "


def generic_plan_settings(settings_sql: str) -> str:
    """The planner settings a read's generic plan is made with: on the HNSW path (which sends
    ``settings_sql``) the order from the index, on the exact path (none) the rows from the
    tenant's index (``EXACT_FROM_INDEX``)."""
    return HNSW_ORDER_FROM_INDEX if settings_sql else EXACT_FROM_INDEX


def _execute(settings_sql: str, statement: str, params: list[object]) -> list[tuple[Any, ...]]:
    """Run ``statement`` (``%s`` placeholders) after ``settings_sql`` (``SET LOCAL``s) in one
    round trip: outside a transaction, as this session's prepared statement with a generic
    plan (``PREPARE`` the first time, then ``EXECUTE``; one implicit transaction)."""
    with connection.cursor() as cur:
        raw = connection.connection
        with _prepared_lock:
            names = _prepared.get(raw, set())
        if not connection.in_atomic_block and names is not False:
            numbered = iter(range(1, len(params) + 1))
            body = _PLACEHOLDER.sub(lambda _: f"${next(numbered)}", statement)
            name = "recall_snapshot_" + hashlib.sha256(body.encode()).hexdigest()[:16]
            prepare = "" if name in names else f"PREPARE {name} AS {body}; "
            try:
                cur.execute(f"{settings_sql}{generic_plan_settings(settings_sql)}"
                            f"SET LOCAL plan_cache_mode = force_generic_plan; {prepare}"
                            f"EXECUTE {name}({', '.join(['%s'] * len(params))})", params)
                rows = last_rows(cur)
            except DatabaseError as exc:
                if getattr(exc.__cause__, "sqlstate", None) not in _NOT_OURS:
                    raise
                # Nothing ran (one implicit transaction): plan it, now and from now on.
                names = False
            else:
                names = names | {name}
            with _prepared_lock:
                _prepared[raw] = names
            if names is not False:
                return rows
        cur.execute(f"{settings_sql}{statement}", params)
        return last_rows(cur)


