"""Reads of sections: one section, current hashes, search, who else cites them, term
frequencies, chunk coverage."""

from __future__ import annotations

import numpy as np
from django.db import connection
from django.db.models import BooleanField, Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from cachecore.embedding import get_embedder
from cachecore.engine.evidence import SECTION_COUNT_TERM
from cachecore.errors import NotFound
from cachecore.models import Citation, Section
from cachecore.selectors.nearest import vector_literal
from tenants.caller import Caller
from tenants.models import Tenant
from tenants.scopes import entries_admit_scope_sql


def section_get(*, caller: Caller, section_id: str) -> Section:
    """A section the caller sees (for a scope-limited caller: one whose scopes overlap its
    prefixes), else NotFound, as for an id that does not exist."""
    try:
        return Section.objects.visible_to(caller).get(external_id=section_id)
    except Section.DoesNotExist as exc:
        raise NotFound("section not found") from exc


def sections_current_hashes(*, caller: Caller, section_ids: list[str], lock: bool = False) -> dict[str, str]:
    """The current hash of each of ``section_ids`` the caller sees (the others are absent, as
    ids that do not exist). ``lock``: the rows are read ``FOR SHARE`` (in id order), inside the
    caller's transaction: until it ends no upsert, rescope or delete changes them, and one that
    committed while this waited is seen (a row deleted, or rescoped out of the caller's sight,
    is absent)."""
    rows = (Section.objects.visible_to(caller).filter(external_id__in=section_ids).order_by("external_id")
            .values_list("external_id", "sha256"))
    if not lock:
        return dict(rows)
    if not connection.in_atomic_block:
        raise RuntimeError("sections_current_hashes(lock=True) belongs inside the writing transaction")
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute(f"{sql} FOR SHARE", params)
        return dict(cur.fetchall())


def sections_search(*, caller: Caller, q: str = "", scope: str = "", cited_by: bool = False) -> QuerySet[Section]:
    """Sections whose id or text contains ``q`` (text through the pg_trgm GIN index); with
    ``scope``, those served in that scope (an entry admits it: ``tenants.scopes``), ``-`` for
    those of tenant-wide callers only (no scopes). ``cited_by``: annotated with how many trails
    the caller sees cite each (a correlated count through the (tenant, section_id) citation
    index, evaluated only for the rows fetched)."""
    sections = Section.objects.visible_to(caller)
    if cited_by:
        citations = (Citation.objects.visible_to(caller).filter(section_id=OuterRef("external_id")).order_by()
                     .values("section_id").annotate(n=Count("pk")).values("n"))
        sections = sections.annotate(cited_by=Coalesce(Subquery(citations), 0))
    q = q.strip()
    if q:
        sections = sections.filter(Q(external_id__icontains=q) | Q(text__icontains=q))
    scope = scope.strip()
    if scope == "-":
        sections = sections.filter(scopes=[])
    elif scope:
        admitted = RawSQL(entries_admit_scope_sql('"cachecore_section"."scopes"', "%s::text", "false"), [scope],
                          output_field=BooleanField())
        sections = sections.filter(admitted)
    return sections.order_by("external_id")


def term_frequencies_sql(*, tenant: Tenant, terms: list[str]) -> tuple[str, list[object]]:
    """The term frequencies read as a SELECT of one row (the terms found and their section
    counts as two arrays, the tenant's section count among them) and its parameters."""
    return ("SELECT array_agg(term) AS terms, array_agg(sections) AS sections FROM cachecore_termfrequency "
            "WHERE tenant_id = %s AND term = ANY(%s::text[])"), [tenant.pk, [SECTION_COUNT_TERM, *terms]]


def term_frequencies_from_row(terms: list[str] | None, counts: list[int] | None) -> tuple[int, dict[str, int]]:
    """``term_frequencies``' answer from a term_frequencies_sql row."""
    rows = dict(zip(terms or [], counts or []))
    total = int(rows.pop(SECTION_COUNT_TERM, 0))
    return total, {k: int(v) for k, v in rows.items()}


def term_frequencies(*, tenant: Tenant, terms: list[str]) -> tuple[int, dict[str, int]]:
    """How many sections the tenant has, and how many hold each of ``terms`` (absent: none)."""
    select, params = term_frequencies_sql(tenant=tenant, terms=terms)
    with connection.cursor() as cur:
        cur.execute(select, params)
        return term_frequencies_from_row(*cur.fetchone())


def coverage_by_section(*, section_hashes: dict[int, str], embedding: np.ndarray) -> dict[int, float]:
    """Best cosine between the query and the chunks of each section (pk → score), using only
    chunks computed from the given hash. Sections without ready chunks are absent."""
    if not section_hashes:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            "SELECT ch.section_id, max(1 - (ch.embedding <=> %s::vector)) FROM cachecore_sectionchunk ch "
            "JOIN unnest(%s::bigint[], %s::text[]) AS v(pk, sha) ON ch.section_id = v.pk AND ch.sha256 = v.sha "
            "WHERE ch.embedding_model = %s GROUP BY ch.section_id",
            [vector_literal(embedding), list(section_hashes), list(section_hashes.values()), get_embedder().version],
        )
        return {row[0]: float(row[1]) for row in cur.fetchall()}
