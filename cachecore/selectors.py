"""Every read of the engine's tables, always scoped by tenant. The nearest-neighbour query
lives here too."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Count, Func, Q, QuerySet, Sum

from cachecore.errors import NotFound
from cachecore.models import Citation, MissReason, RecallEvent, RecallOutcome, Section, Trail, TrailStatus
from tenants.models import Tenant


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


# ---- single objects -------------------------------------------------------------------------

def trail_get(*, tenant: Tenant, trail_id: object) -> Trail:
    try:
        return Trail.objects.get(tenant=tenant, pk=trail_id)
    except (Trail.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound("trail not found") from exc


def section_get(*, tenant: Tenant, section_id: str) -> Section:
    try:
        return Section.objects.get(tenant=tenant, external_id=section_id)
    except Section.DoesNotExist as exc:
        raise NotFound("section not found") from exc


def recall_event_get(*, tenant: Tenant, recall_id: object) -> RecallEvent:
    try:
        return RecallEvent.objects.get(tenant=tenant, pk=recall_id)
    except (RecallEvent.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound("recall not found") from exc


def sections_current_hashes(*, tenant: Tenant, section_ids: list[str]) -> dict[str, str]:
    rows = Section.objects.filter(tenant=tenant, external_id__in=section_ids).values_list("external_id", "sha256")
    return dict(rows)


# ---- nearest neighbours ---------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    trail_id: str
    similarity: float
    query_normalised: str


_scope_sizes: dict[tuple[str, str], tuple[int, float]] = {}
_SCOPE_SIZE_TTL_S = 60.0


def active_scope_size(*, tenant: Tenant, scope: str) -> int:
    """Active trails in a scope, counted up to the exact-search limit + 1, cached per
    process for a minute (the size only routes the query; either path is correct)."""
    key = (str(tenant.pk), scope)
    now = time.monotonic()
    cached = _scope_sizes.get(key)
    if cached and cached[1] > now:
        return cached[0]
    limit = settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM (SELECT 1 FROM cachecore_trail WHERE tenant_id = %s AND scope = %s "
            "AND status = 'active' LIMIT %s) s",
            [tenant.pk, scope, limit + 1],
        )
        size = cur.fetchone()[0]
    _scope_sizes[key] = (size, now + _SCOPE_SIZE_TTL_S)
    return size


def nearest_trails(*, tenant: Tenant, scope: str, embedding: np.ndarray, limit: int = 5) -> list[Candidate]:
    """The ``limit`` nearest active, unexpired trails of the tenant's scope by cosine,
    best first. Small scopes are searched exactly through the (tenant, scope, status) btree;
    large ones through HNSW with iterative scan, re-ranked exactly. Call inside a transaction
    (``SET LOCAL``)."""
    vector = _vector_literal(embedding)
    exact = active_scope_size(tenant=tenant, scope=scope) <= settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS
    # "+ 0" keeps the planner off the HNSW index for the exact path.
    order = "(embedding <=> %s::vector) + 0" if exact else "embedding <=> %s::vector"
    sql = (
        "SELECT id, embedding <=> %s::vector AS distance, query_normalised FROM cachecore_trail "
        "WHERE tenant_id = %s AND scope = %s AND status = 'active' AND expires_at > now() "
        f"ORDER BY {order} LIMIT %s"
    )
    with connection.cursor() as cur:
        if not exact:
            cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute("SET LOCAL hnsw.ef_search = 100")
        cur.execute(sql, [vector, tenant.pk, scope, vector, limit])
        rows = cur.fetchall()
    candidates = [Candidate(str(r[0]), 1.0 - float(r[1]), r[2]) for r in rows]
    candidates.sort(key=lambda c: c.similarity, reverse=True)
    return candidates


@dataclass(frozen=True)
class CitedSection:
    section_id: str
    recorded_hash: str
    current_hash: str | None
    text: str | None
    token_count: int
    pk: int | None


def cited_sections_now(*, trail_id: str) -> list[CitedSection]:
    """The trail's citations with each section's current hash and text, in citation order,
    from one statement (one snapshot): the text served always belongs to the hash checked."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.section_id, c.recorded_hash, s.sha256, s.text, s.token_count, s.id "
            "FROM cachecore_citation c LEFT JOIN cachecore_section s "
            "ON s.tenant_id = c.tenant_id AND s.external_id = c.section_id "
            "WHERE c.trail_id = %s ORDER BY c.position",
            [trail_id],
        )
        return [CitedSection(r[0], r[1], r[2], r[3], r[4] or 0, r[5]) for r in cur.fetchall()]


def coverage_by_section(*, section_hashes: dict[int, str], embedding: np.ndarray) -> dict[int, float]:
    """Best cosine between the query and the chunks of each section (pk → score), using only
    chunks computed from the given hash. Sections without ready chunks are absent."""
    if not section_hashes:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            "SELECT ch.section_id, max(1 - (ch.embedding <=> %s::vector)) FROM cachecore_sectionchunk ch "
            "JOIN unnest(%s::bigint[], %s::text[]) AS v(pk, sha) ON ch.section_id = v.pk AND ch.sha256 = v.sha "
            "GROUP BY ch.section_id",
            [_vector_literal(embedding), list(section_hashes), list(section_hashes.values())],
        )
        return {row[0]: float(row[1]) for row in cur.fetchall()}


# ---- lists ----------------------------------------------------------------------------------

def trails_for_tenant(*, tenant: Tenant) -> QuerySet[Trail]:
    return Trail.objects.filter(tenant=tenant)


def trails_citing(*, tenant: Tenant, section_id: str) -> QuerySet[Trail]:
    return Trail.objects.filter(tenant=tenant, citations__section_id=section_id).distinct()


def citations_for_trail(*, trail: Trail) -> list[Citation]:
    return list(trail.citations.all())


# ---- stats ----------------------------------------------------------------------------------

def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def stats_for_tenant(
    *, tenant: Tenant, scope: str | None = None, scope_prefixes: list[str] | None = None,
    since: datetime | None = None, until: datetime | None = None,
) -> dict[str, object]:
    """Recall counts and rates, and trails by status, for a tenant (optionally limited to
    scope prefixes and a time window)."""
    events = RecallEvent.objects.filter(tenant=tenant)
    trails = Trail.objects.filter(tenant=tenant)
    if scope_prefixes:
        scope_q = Q()
        for prefix in scope_prefixes:
            scope_q |= Q(scope__startswith=prefix)
        events = events.filter(scope_q)
        trails = trails.filter(scope_q)
    if scope:
        events = events.filter(scope=scope)
        trails = trails.filter(scope=scope)
    if since:
        events = events.filter(created_at__gte=since)
    if until:
        events = events.filter(created_at__lt=until)
    agg = events.aggregate(
        recalls=Count("id"),
        prefetch=Count("id", filter=Q(outcome=RecallOutcome.PREFETCH)),
        hint=Count("id", filter=Q(outcome=RecallOutcome.HINT)),
        miss=Count("id", filter=Q(outcome=RecallOutcome.MISS)),
        stale=Count("id", filter=Q(miss_reason=MissReason.STALE)),
        escalated=Count("id", filter=Q(escalated=True)),
        feedback_positive=Count("id", filter=Q(feedback=True)),
        feedback_negative=Count("id", filter=Q(feedback=False)),
        served_cited_sum=Sum("served_cited", filter=Q(served_cited__isnull=False)),
        served_total=Sum(Func("served_ids", function="cardinality"), filter=Q(served_cited__isnull=False)),
    )
    by_status = dict(trails.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    recalls = agg["recalls"]
    return {
        "recalls": recalls,
        "prefetch": agg["prefetch"],
        "hint": agg["hint"],
        "miss": agg["miss"],
        "hit_rate": _rate(agg["prefetch"] + agg["hint"], recalls),
        "prefetch_rate": _rate(agg["prefetch"], recalls),
        "stale_rate": _rate(agg["stale"], recalls),
        "escalation_rate": _rate(agg["escalated"], recalls),
        "served_cited_rate": _rate(agg["served_cited_sum"] or 0, agg["served_total"] or 0),
        "feedback": {"positive": agg["feedback_positive"], "negative": agg["feedback_negative"]},
        "trails": {status: by_status.get(status, 0) for status in TrailStatus.values},
    }
