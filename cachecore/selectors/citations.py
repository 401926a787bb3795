"""Reads of citations: each trail's cited sections as they are now (one snapshot), and the
trails citing a section with their citation state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Q

from cachecore.embedding import get_embedder
from cachecore.engine.decide import Cited
from cachecore.engine.outcome import section_state
from cachecore.models import Citation, Section, Trail
from cachecore.selectors.nearest import QUERY_VECTOR, QUERY_VECTOR_CTE, vector_literal
from cachecore.selectors.recalls import exemplars_sql
from cachecore.selectors.sections import sentence_coverage_sql
from tenants.caller import Caller
from tenants.scopes import entries_admit_scope_sql, entries_visible_sql

# The section a citation binds to: the same tenant, namespace and id (the sections' unique key;
# the citations' reverse index holds the same three columns).
SECTION_OF_CITATION = ("s.tenant_id = c.tenant_id AND s.external_id = c.section_id "
                       "AND s.namespace = c.section_namespace")


def _visibility_sql(caller: Caller, scope: str | None) -> tuple[str, list[object]]:
    """Whether the row's section ``s`` may be shown to this read: in ``scope`` (a recall: served
    only when the section's scopes admit it at serving time), else to the caller."""
    if scope is not None:
        # Placeholders in the order the SQL spells them: tenant-wide first, then the scope.
        return entries_admit_scope_sql("s.scopes", "%s::text", "%s::boolean"), [not caller.scope_limited, scope]
    if caller.scope_limited:
        return entries_visible_sql("s.scopes", "%s::text[]"), [list(caller.scope_prefixes)]
    return "true", []


def candidate_laterals_sql(*, caller: Caller, scope: str, terms: list[str],
                           trail: str) -> tuple[str, str, list[object]]:
    """What each candidate row of a recall read joins laterally, for the candidate aliased
    ``trail``: its exemplars (``recalls.exemplars_sql``, read only when it has a boundary or
    positives) and
    its cited sections with their coverage (``cited_sql``), with their parameters in that order
    (``recall_snapshot.candidates_from_rows`` reads the rows)."""
    exemplars, exemplar_params = exemplars_sql(
        tenant=caller.tenant, trail=f"{trail}.id",
        only_if=f"{trail}.prefetch_boundary IS NOT NULL OR {trail}.has_positives")
    cited, cited_params = cited_sql(caller=caller, scope=scope, query_terms=terms, with_coverage=True,
                                    trails=f"c.trail_id = {trail}.id")
    # The fence (OFFSET 0) keeps each lateral read a per-candidate read by key: without it the
    # planner may flatten it and, with statistics taken while the tenant's tables were still
    # empty (a new tenant's first minute), join every citation of the tenant with its coverage
    # before matching the candidates (25 ms instead of 1 on 378 sections, docs/performance.md).
    return f"{exemplars} OFFSET 0", f"{cited} OFFSET 0", [*exemplar_params, *cited_params]


def cited_sql(*, caller: Caller, scope: str | None, query_terms: list[str], with_coverage: bool,
              trails: str) -> tuple[str, list[object]]:
    """The citations read as a SELECT (``cited_from_row`` reads its rows: ``CITED_COLUMNS``
    columns, the trail id first, the citation's position last) and its parameters: the
    caller's tenant's citations of the trails that the SQL condition ``trails`` names (on
    ``c.trail_id``; its parameters, if any, follow these). ``with_coverage``: the statement
    defines ``QUERY_VECTOR_CTE``."""
    coverage = (
        "cov.query, cov.trail, sen.query, c.position FROM cachecore_citation c "
        "JOIN cachecore_trail tr ON tr.tenant_id = c.tenant_id AND tr.id = c.trail_id "
        f"LEFT JOIN cachecore_section s ON {SECTION_OF_CITATION} "
        f"LEFT JOIN LATERAL (SELECT max(1 - (ch.embedding <=> {QUERY_VECTOR})) AS query, "
        "max(1 - (ch.embedding <=> tr.embedding)) AS trail FROM cachecore_sectionchunk ch "
        "WHERE ch.section_id = s.id AND ch.sha256 = s.sha256 AND ch.embedding_model = %s) cov ON true "
        f"LEFT JOIN LATERAL ({sentence_coverage_sql()}) sen ON true"
        if with_coverage else
        "NULL::float8, NULL::float8, NULL::float8, c.position FROM cachecore_citation c "
        f"LEFT JOIN cachecore_section s ON {SECTION_OF_CITATION}"
    )
    visible, visible_params = _visibility_sql(caller, scope)
    params: list[object] = [query_terms, query_terms, query_terms, *visible_params]
    if with_coverage:
        params += [get_embedder().version] * 2
    sql = (
        "SELECT c.trail_id, c.section_id, c.recorded_hash, s.sha256, s.text, s.token_count, s.id, "
        "CASE WHEN cardinality(%s::text[]) > 0 AND s.terms && %s::text[] "
        "THEN ARRAY(SELECT unnest(%s::text[]) INTERSECT SELECT unnest(s.terms)) END, "
        # Shown: a section the read may see, or none at all (missing) of the shared namespace; a
        # limited key's own section that is gone is hidden (missing, never the resolver's).
        f"CASE WHEN s.id IS NULL THEN c.section_namespace = '' ELSE {visible} END, "
        f"{coverage} "
        f"WHERE c.tenant_id = %s AND {trails}"
    )
    return sql, [*params, caller.tenant.pk]


# Columns of a cited_sql row (the last one: the citation's position in its trail).
CITED_COLUMNS = 13


def cited_from_row(row: Sequence[Any], *, with_coverage: bool) -> Cited:
    """The engine's Cited from a cited_sql row (``row[0]``, the trail id, aside)."""
    if not row[8]:
        return Cited(row[1], row[2], None, None, 0, None, hidden=True)
    return Cited(
        row[1], row[2], row[3], row[4], row[5] or 0, row[6], query_terms=frozenset(row[7] or ()),
        coverage=float(row[9]) if row[9] is not None else None,
        trail_coverage=float(row[10]) if row[10] is not None else None,
        sentence_coverage=float(row[11]) if row[11] is not None else None,
        # Read with the query's embedding, a mirrored section with text and no coverage
        # has no chunks for its current hash yet (a resolver's sections never have any).
        chunks_pending=with_coverage and row[6] is not None and row[4] is not None and row[9] is None,
    )


def cited_sections_for_trails(
    *, caller: Caller, trail_ids: list[str], scope: str | None = None, query_terms: list[str] | None = None,
    embedding: np.ndarray | str | None = None,
) -> dict[str, list[Cited]]:
    """Each trail's citations with each section's current hash and text, in citation order,
    from one statement (one snapshot): the text served always belongs to the hash checked.
    A section whose scopes hide it (from ``scope``, the recall's, when given; else from the
    caller) is ``hidden``: no hash, no text, as if missing. With ``query_terms``, also which of
    them each section's text holds; with the query's ``embedding``, its coverage by each
    section's chunks (``embedding``: a vector or its pgvector literal). Returns what the engine
    takes (``engine.decide.Cited``). Trails of another tenant have none (the statement reads
    the caller's tenant's partition only)."""
    by_trail: dict[str, list[Cited]] = {str(t): [] for t in trail_ids}
    if not trail_ids:
        return by_trail
    with_coverage = embedding is not None
    select, params = cited_sql(caller=caller, scope=scope, query_terms=query_terms or [],
                               with_coverage=with_coverage, trails="c.trail_id = ANY(%s::uuid[])")
    sql = f"{select} ORDER BY c.trail_id, c.position"
    params.append([str(t) for t in trail_ids])
    if with_coverage:
        sql = f"WITH {QUERY_VECTOR_CTE} {sql}"
        params.insert(0, vector_literal(embedding))  # type: ignore[arg-type]
    with connection.cursor() as cur:
        cur.execute(sql, params)
        for r in cur.fetchall():
            by_trail[str(r[0])].append(cited_from_row(r, with_coverage=with_coverage))
    return by_trail


def cited_sections_now(*, caller: Caller, trail_id: str) -> list[Cited]:
    """One trail's citations with the sections' current state as the caller may see them (see
    cited_sections_for_trails)."""
    return cited_sections_for_trails(caller=caller, trail_ids=[str(trail_id)])[str(trail_id)]


def trail_cited_as_seen(*, caller: Caller, trail: Trail) -> list[dict[str, str | None]]:
    """A trail's citations as the caller may see them: each cited id with the hash recorded, or
    None for a caller with scope limits when the section it binds to is not visible to it now
    (as for an id that does not exist). A tenant-wide caller also gets the ``namespace`` of a
    citation bound to a limited key's section."""
    citations = list(trail.citations.all())
    if not caller.scope_limited:
        return [{"id": c.section_id, "hash": c.recorded_hash,
                 **({"namespace": c.section_namespace} if c.section_namespace else {})} for c in citations]
    bound = Q()
    for c in citations:
        bound |= Q(external_id=c.section_id, namespace=c.section_namespace)
    visible = set(Section.objects.visible_to(caller).filter(bound, external_id__in=[c.section_id for c in citations])
                  .values_list("namespace", "external_id")) if citations else set()
    return [{"id": c.section_id, "hash": c.recorded_hash if (c.section_namespace, c.section_id) in visible else None}
            for c in citations]


def trails_citing_with_state(*, caller: Caller, section: Section | None, section_id: str, namespace: str = "",
                             limit: int = 100) -> list[dict[str, object]]:
    """Trails citing a section (``section_id`` in ``namespace``), newest first, each with the
    hash it recorded and whether that still matches the section now (valid / changed /
    missing). One query."""
    rows = (
        # The trail's tenant too: the join then reads one trail partition.
        Citation.objects.visible_to(caller).filter(section_id=section_id, section_namespace=namespace,
                                                   trail__tenant=caller.tenant)
        .select_related("trail")
        .only("recorded_hash", "trail__id", "trail__scope", "trail__query", "trail__status", "trail__hits",
              "trail__created_at")
        .order_by("-trail__created_at")[:limit]
    )
    current = section.sha256 if section is not None else None
    return [
        {"trail": c.trail, "recorded_hash": c.recorded_hash,
         "state": section_state(recorded_hash=c.recorded_hash, current_hash=current).value}
        for c in rows
    ]
