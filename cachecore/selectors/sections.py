"""Reads of sections: what an id means for a caller (``sections_resolved``), one section,
current hashes, search, who else cites them, term frequencies, chunk coverage."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.db import connection
from django.db.models import BooleanField, Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from cachecore.access import require_unrestricted
from cachecore.embedding import get_embedder
from cachecore.engine.evidence import SECTION_COUNT_TERM
from cachecore.errors import NotFound
from cachecore.models import Citation, Section
from cachecore.selectors.nearest import QUERY_VECTOR, vector_literal
from tenants.caller import Caller
from tenants.models import Tenant
from tenants.scopes import SHARED_NAMESPACE, entries_admit_scope_sql, entries_visible


def sentence_coverage_sql(*, section: str = "s.id", sha256: str = "s.sha256") -> str:
    """The best cosine of the query (``nearest.QUERY_VECTOR_CTE``) to a sentence of the section
    whose key and current hash the SQL expressions ``section`` and ``sha256`` give, of the
    current model (one placeholder: the model), as a SELECT for a lateral join: the
    sentence-level evidence of which section answers (``engine/evidence.py``). NULL: no
    sentences."""
    return (f"SELECT max(1 - (se.embedding <=> {QUERY_VECTOR})) AS query FROM cachecore_sectionsentence se "
            f"WHERE se.section_id = {section} AND se.sha256 = {sha256} AND se.embedding_model = %s")


def namespace_asked(caller: Caller, namespace: str | None) -> str | None:
    """The namespace a caller addresses explicitly (``?namespace=``; None: not given). Only a
    tenant-wide caller may name one: a limited caller's ids resolve by the rule alone
    (ScopeForbidden, whatever the value and whatever exists)."""
    if namespace is None:
        return None
    require_unrestricted(caller, "naming a section namespace")
    return namespace


def section_rows(*, caller: Caller, section_ids: Sequence[str], namespace: str | None = None,
                 lock: str | None = None, fields: Sequence[str] = ()) -> list[Section]:
    """Every row an id of ``section_ids`` could mean for the caller, before the rule picks one
    (``sections_resolve``): a tenant-wide caller's in ``namespace`` (default ``""``), a limited
    caller's in its own namespace and in ``""`` whatever their scopes (the rule needs to know
    that an id is taken; never answer from these rows directly). ``lock``: ``"update"`` or
    ``"share"``, the rows locked in (id, namespace) order inside the caller's transaction (an
    upsert, a delete and a record lock alike: they never deadlock). ``fields``: only these."""
    namespaces = [namespace or SHARED_NAMESPACE] if not caller.scope_limited else [caller.namespace,
                                                                                    SHARED_NAMESPACE]
    rows = (Section.objects.filter(tenant=caller.tenant, external_id__in=list(section_ids),
                                   namespace__in=namespaces).order_by("external_id", "namespace"))
    if fields:
        rows = rows.only(*{"external_id", "namespace", "scopes", *fields})
    if lock is None:
        return list(rows)
    if not connection.in_atomic_block:
        raise RuntimeError("locked section rows belong inside the writing transaction")
    if lock == "update":
        return list(rows.select_for_update())
    # One statement: the rows read are the rows locked (Django spells FOR UPDATE only).
    sql, params = rows.query.sql_with_params()
    return list(Section.objects.raw(f"{sql} FOR SHARE", params))


def sections_resolve(*, caller: Caller, rows: Sequence[Section]) -> dict[str, Section]:
    """The rule of docs/scopes.md ("Id namespaces"): the section each id means for the caller,
    from ``section_rows``' rows. A tenant-wide caller: the row of the namespace it addressed. A
    limited one: its own namespace's section when there is one, else the shared one when its
    scopes overlap the caller's prefixes (``tenants.scopes.entries_visible``), else none —
    absent, exactly as an id that does not exist."""
    if not caller.scope_limited:
        return {row.external_id: row for row in rows}
    own = caller.namespace
    found: dict[str, Section] = {}
    for row in rows:
        if row.namespace == own:
            found[row.external_id] = row
        elif row.namespace == SHARED_NAMESPACE and row.external_id not in found and entries_visible(
                row.scopes, caller.scope_prefixes):
            found[row.external_id] = row
    return found


def sections_resolved(*, caller: Caller, section_ids: Sequence[str], namespace: str | None = None,
                      lock: str | None = None, fields: Sequence[str] = ()) -> dict[str, Section]:
    """Each of ``section_ids`` → the section it means for the caller (``sections_resolve`` on
    ``section_rows``); ids it means nothing for are absent. Every read, cite, delete and write
    of a section by id goes through this."""
    return sections_resolve(caller=caller, rows=section_rows(caller=caller, section_ids=section_ids,
                                                             namespace=namespace, lock=lock, fields=fields))


def section_get(*, caller: Caller, section_id: str, namespace: str | None = None) -> Section:
    """The section ``section_id`` means for the caller (``sections_resolved``; a tenant-wide
    caller may name a ``namespace``), else NotFound, as for an id that does not exist."""
    section = sections_resolved(caller=caller, section_ids=[section_id],
                                namespace=namespace_asked(caller, namespace)).get(section_id)
    if section is None:
        raise NotFound("section not found")
    return section


def sections_current_hashes(*, caller: Caller, section_ids: list[str], lock: bool = False) -> dict[str, str]:
    """The current hash of each of ``section_ids`` as the caller resolves it (the others are
    absent, as ids that do not exist). ``lock``: the rows are read ``FOR SHARE`` (in id order),
    inside the caller's transaction: until it ends no upsert, rescope or delete changes them,
    and one that committed while this waited is seen (a row deleted, or rescoped out of the
    caller's sight, is absent)."""
    resolved = sections_resolved(caller=caller, section_ids=section_ids, lock="share" if lock else None,
                                 fields=("sha256",))
    return {sid: section.sha256 for sid, section in resolved.items()}


def sections_search(*, caller: Caller, q: str = "", scope: str = "", cited_by: bool = False) -> QuerySet[Section]:
    """Sections whose id or text contains ``q`` (text through the pg_trgm GIN index); with
    ``scope``, those served in that scope (an entry admits it: ``tenants.scopes``), ``-`` for
    those of tenant-wide callers only (no scopes). ``cited_by``: annotated with how many trails
    the caller sees cite each (a correlated count through the (tenant, section_id, namespace)
    citation index, evaluated only for the rows fetched)."""
    sections = Section.objects.visible_to(caller)
    if cited_by:
        citations = (Citation.objects.visible_to(caller).filter(section_id=OuterRef("external_id"),
                                                                section_namespace=OuterRef("namespace"))
                     .order_by().values("section_id").annotate(n=Count("pk")).values("n"))
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
    return sections.order_by("external_id", "namespace")


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
