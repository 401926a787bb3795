"""Reads of sections: one section, current hashes, search, who else cites them, term
frequencies, chunk coverage."""

from __future__ import annotations

import numpy as np
from django.db import connection
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL

from cachecore.embedding import get_embedder
from cachecore.engine.evidence import SECTION_COUNT_TERM
from cachecore.errors import NotFound
from cachecore.models import Section
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


def sections_current_hashes(*, caller: Caller, section_ids: list[str]) -> dict[str, str]:
    """The current hash of each of ``section_ids`` the caller sees (the others are absent, as
    ids that do not exist)."""
    rows = Section.objects.visible_to(caller).filter(external_id__in=section_ids).values_list("external_id", "sha256")
    return dict(rows)


def sections_search(*, caller: Caller, q: str = "", scope: str = "") -> QuerySet[Section]:
    """Sections whose id or text contains ``q`` (text through the pg_trgm GIN index); with
    ``scope``, those served in that scope (an entry admits it: ``tenants.scopes``), ``-`` for
    those of tenant-wide callers only (no scopes)."""
    sections = Section.objects.visible_to(caller)
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
