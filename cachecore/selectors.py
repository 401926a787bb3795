"""Every read of the engine's tables, always scoped by tenant. The nearest-neighbour query
lives here too."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count, Func, Q, QuerySet, Sum
from django.utils import timezone

from cachecore.embedding import get_embedder
from cachecore.engine.evidence import SECTION_COUNT_TERM
from cachecore.errors import NotFound
from cachecore.models import Citation, MissReason, RecallEvent, RecallOutcome, Section, Trail, TrailStatus
from tenants.models import Tenant


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


# ---- single objects -------------------------------------------------------------------------

def trail_get(*, tenant: Tenant, trail_id: object) -> Trail:
    try:
        return Trail.objects.get(tenant=tenant, pk=trail_id)
    except (Trail.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
        raise NotFound("trail not found") from exc


def section_get(*, tenant: Tenant, section_id: str) -> Section:
    try:
        return Section.objects.get(tenant=tenant, external_id=section_id)
    except Section.DoesNotExist as exc:
        raise NotFound("section not found") from exc


def recall_event_get(*, tenant: Tenant, recall_id: object) -> RecallEvent:
    try:
        return RecallEvent.objects.get(tenant=tenant, pk=recall_id)
    except (RecallEvent.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
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
    steps: list[object] = field(default_factory=list, compare=False, repr=False)
    boundary: float | None = None


def _json(value: object) -> list[object]:
    # A raw cursor may hand jsonb back as text, depending on the driver's loaders.
    return json.loads(value) if isinstance(value, str) else (value or [])  # type: ignore[return-value]


_scope_sizes: dict[tuple[str, str], tuple[int, float]] = {}
# Candidate list of the HNSW scan; iterative scan goes past it when the scope filter needs to.
_HNSW_EF_SEARCH = 100
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
    vector = _vector_literal(embedding)
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


@dataclass(frozen=True)
class CitedSection:
    section_id: str
    recorded_hash: str
    current_hash: str | None
    text: str | None
    token_count: int
    pk: int | None
    # Which of the given query terms the section's text holds (empty when none were asked).
    query_terms: frozenset[str] = frozenset()
    # Best cosine of the query against the section's chunks of its current hash (None: no
    # query given, or no chunks ready), and the same for the trail's own question.
    coverage: float | None = None
    trail_coverage: float | None = None


def cited_sections_for_trails(
    *, trail_ids: list[str], query_terms: list[str] | None = None, embedding: np.ndarray | None = None
) -> dict[str, list[CitedSection]]:
    """Each trail's citations with each section's current hash and text, in citation order,
    from one statement (one snapshot): the text served always belongs to the hash checked.
    With ``query_terms``, also which of them each section's text holds; with the query's
    ``embedding``, its coverage by each section's chunks."""
    by_trail: dict[str, list[CitedSection]] = {str(t): [] for t in trail_ids}
    if not trail_ids:
        return by_trail
    terms = query_terms or []
    coverage = (
        "cov.query, cov.trail FROM cachecore_citation c "
        "JOIN cachecore_trail tr ON tr.id = c.trail_id LEFT JOIN cachecore_section s "
        "ON s.tenant_id = c.tenant_id AND s.external_id = c.section_id "
        "LEFT JOIN LATERAL (SELECT max(1 - (ch.embedding <=> %s::vector)) AS query, "
        "max(1 - (ch.embedding <=> tr.embedding)) AS trail FROM cachecore_sectionchunk ch "
        "WHERE ch.section_id = s.id AND ch.sha256 = s.sha256 AND ch.embedding_model = %s) cov ON true"
        if embedding is not None else
        "NULL::float8, NULL::float8 FROM cachecore_citation c LEFT JOIN cachecore_section s "
        "ON s.tenant_id = c.tenant_id AND s.external_id = c.section_id"
    )
    params: list[object] = [terms, terms, terms]
    if embedding is not None:
        params += [_vector_literal(embedding), get_embedder().version]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.trail_id, c.section_id, c.recorded_hash, s.sha256, s.text, s.token_count, s.id, "
            "CASE WHEN cardinality(%s::text[]) > 0 AND s.terms && %s::text[] "
            "THEN ARRAY(SELECT unnest(%s::text[]) INTERSECT SELECT unnest(s.terms)) END, "
            f"{coverage} "
            "WHERE c.trail_id = ANY(%s::uuid[]) ORDER BY c.trail_id, c.position",
            [*params, [str(t) for t in trail_ids]],
        )
        for r in cur.fetchall():
            by_trail[str(r[0])].append(CitedSection(
                r[1], r[2], r[3], r[4], r[5] or 0, r[6], frozenset(r[7] or ()),
                float(r[8]) if r[8] is not None else None, float(r[9]) if r[9] is not None else None,
            ))
    return by_trail


def term_frequencies(*, tenant: Tenant, terms: list[str]) -> tuple[int, dict[str, int]]:
    """How many sections the tenant has, and how many hold each of ``terms`` (absent: none)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT term, sections FROM cachecore_termfrequency WHERE tenant_id = %s AND term = ANY(%s::text[])",
            [tenant.pk, [SECTION_COUNT_TERM, *terms]],
        )
        rows = dict(cur.fetchall())
    total = int(rows.pop(SECTION_COUNT_TERM, 0))
    return total, {k: int(v) for k, v in rows.items()}


def cited_sections_now(*, trail_id: str) -> list[CitedSection]:
    """One trail's citations with the sections' current state (see cited_sections_for_trails)."""
    return cited_sections_for_trails(trail_ids=[str(trail_id)])[str(trail_id)]


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
            [_vector_literal(embedding), list(section_hashes), list(section_hashes.values()), get_embedder().version],
        )
        return {row[0]: float(row[1]) for row in cur.fetchall()}


# ---- lists ----------------------------------------------------------------------------------

def trails_for_tenant(*, tenant: Tenant) -> QuerySet[Trail]:
    return Trail.objects.filter(tenant=tenant)


def _outcome_counts() -> dict[str, Count]:
    """Recall counts by outcome, for one aggregate (a tenant) or one annotation (per tenant)."""
    return {
        "recalls": Count("id"),
        "prefetch": Count("id", filter=Q(outcome=RecallOutcome.PREFETCH)),
        "hint": Count("id", filter=Q(outcome=RecallOutcome.HINT)),
        "miss": Count("id", filter=Q(outcome=RecallOutcome.MISS)),
        "stale": Count("id", filter=Q(miss_reason=MissReason.STALE)),
        "escalated": Count("id", filter=Q(escalated=True)),
    }


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
        **_outcome_counts(),
        feedback_positive=Count("id", filter=Q(feedback=True)),
        feedback_negative=Count("id", filter=Q(feedback=False)),
        served_cited_sum=Sum("served_cited", filter=Q(served_cited__isnull=False)),
        served_total=Sum(Func("served_ids", function="cardinality"), filter=Q(served_cited__isnull=False)),
        shadow_recalls=Count("id", filter=~Q(shadow_outcome="")),
        shadow_prefetch=Count("id", filter=Q(shadow_outcome=RecallOutcome.PREFETCH)),
        shadow_hint=Count("id", filter=Q(shadow_outcome=RecallOutcome.HINT)),
        shadow_prefetch_labelled=Count("id", filter=Q(shadow_outcome=RecallOutcome.PREFETCH,
                                                      offered_cited__isnull=False)),
        shadow_prefetch_uncited=Count("id", filter=Q(shadow_outcome=RecallOutcome.PREFETCH, offered_cited=False)),
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
        "shadow": shadow_estimates(agg),
        "savings": savings(tenant=tenant, events=events),
    }


def miss_path_baseline(*, tenant: Tenant, events: QuerySet[RecallEvent] | None = None) -> dict[str, float | int]:
    """The tenant's own cost of answering without the cache: over records that followed a miss
    (served misses and shadow recalls), the mean number of steps and of tokens in the sections
    they cited (as they are now)."""
    events = RecallEvent.objects.filter(tenant=tenant) if events is None else events
    trail_ids = list(events.filter(outcome=RecallOutcome.MISS, recorded_trail__isnull=False)
                     .values_list("recorded_trail_id", flat=True)[:5000])
    if not trail_ids:
        return {"records": 0, "calls": 0.0, "tokens": 0.0}
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), avg(jsonb_array_length(t.steps)), avg(coalesce(c.tokens, 0)) FROM cachecore_trail t "
            "LEFT JOIN LATERAL (SELECT sum(s.token_count) AS tokens FROM cachecore_citation ci "
            "JOIN cachecore_section s ON s.tenant_id = ci.tenant_id AND s.external_id = ci.section_id "
            "WHERE ci.trail_id = t.id) c ON true WHERE t.id = ANY(%s::uuid[]) AND jsonb_typeof(t.steps) = 'array'",
            [[str(t) for t in trail_ids]],
        )
        n, calls, tokens = cur.fetchone()
    return {"records": int(n or 0), "calls": round(float(calls or 0), 2), "tokens": round(float(tokens or 0), 1)}


def savings(*, tenant: Tenant, events: QuerySet[RecallEvent]) -> dict[str, float | int]:
    """Tool calls and tokens saved: prefetches whose served sections the following record cited,
    each worth the tenant's miss-path baseline (``miss_path_baseline``)."""
    cited_prefetches = events.filter(outcome=RecallOutcome.PREFETCH, served_cited__gt=0).count()
    baseline = miss_path_baseline(tenant=tenant, events=events)
    return {
        "cited_prefetches": cited_prefetches,
        "baseline_records": baseline["records"],
        "baseline_calls": baseline["calls"],
        "baseline_tokens": baseline["tokens"],
        "calls": round(cited_prefetches * baseline["calls"], 1),
        "tokens": round(cited_prefetches * baseline["tokens"]),
    }


def shadow_estimates(agg: dict[str, int]) -> dict[str, object]:
    """What shadow recalls say serving would do: the share that would prefetch or hint, and
    among would-be prefetches followed by a record, the share whose sections went uncited (the
    estimated false-prefetch rate)."""
    n = agg["shadow_recalls"]
    labelled = agg["shadow_prefetch_labelled"]
    return {
        "recalls": n,
        "would_prefetch": agg["shadow_prefetch"],
        "would_hint": agg["shadow_hint"],
        "estimated_hit_rate": _rate(agg["shadow_prefetch"] + agg["shadow_hint"], n),
        "estimated_prefetch_rate": _rate(agg["shadow_prefetch"], n),
        "prefetch_labelled": labelled,
        "estimated_false_prefetch_rate": _rate(agg["shadow_prefetch_uncited"], labelled) if labelled else None,
    }


# ---- console

def recall_daily_counts(*, tenant: Tenant | None, days: int) -> list[dict[str, object]]:
    """Recalls per UTC day by outcome for the last ``days`` days (today included), oldest
    first, empty days as zeros: ``[{"day", "prefetch", "hint", "miss", "cited_prefetches"}]``. Complete days come
    from the daily roll-up (cachecore.services.rollups); only the days after the last rolled-up
    one (normally just today) are counted from raw events. ``tenant=None`` counts every tenant."""
    from django.db.models.functions import TruncDate

    from cachecore.models import DailyStat

    start = console_window_start(days=days)
    first = start.date()
    today = timezone.now().astimezone(UTC).date()
    stats = DailyStat.objects.filter(day__gte=first, day__lt=today)
    if tenant is not None:
        stats = stats.filter(tenant=tenant)
    by_day: dict[object, dict[str, int]] = {
        r["day"]: r for r in stats.values("day").annotate(prefetch=Sum("prefetch"), hint=Sum("hint"), miss=Sum("miss"),
                                                          cited_prefetches=Sum("cited_prefetches"))
    }
    raw_from = datetime.combine(max(by_day) + timedelta(days=1), datetime.min.time(), tzinfo=UTC) if by_day else start
    events = RecallEvent.objects.filter(created_at__gte=raw_from)
    if tenant is not None:
        events = events.filter(tenant=tenant)
    rows = (
        events.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            prefetch=Count("id", filter=Q(outcome=RecallOutcome.PREFETCH)),
            hint=Count("id", filter=Q(outcome=RecallOutcome.HINT)),
            miss=Count("id", filter=Q(outcome=RecallOutcome.MISS)),
            cited_prefetches=Count("id", filter=Q(outcome=RecallOutcome.PREFETCH, served_cited__gt=0)),
        )
        .order_by("day")
    )
    by_day.update({r["day"]: r for r in rows})
    out: list[dict[str, object]] = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        row = by_day.get(day, {})
        out.append({"day": day, "prefetch": row.get("prefetch", 0), "hint": row.get("hint", 0),
                    "miss": row.get("miss", 0), "cited_prefetches": row.get("cited_prefetches", 0) or 0})
    return out


def console_window_start(*, days: int) -> datetime:
    """Start (UTC midnight) of a window of ``days`` whole days ending today: the dashboard's
    totals (stats_for_tenant since=) and its per-day bars cover exactly the same events."""
    today = timezone.now().astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    return datetime.combine(first, datetime.min.time(), tzinfo=UTC)


def stats_all_tenants(*, since: datetime | None = None) -> dict[str, object]:
    """The stats_for_tenant numbers summed over every tenant, plus one row per tenant
    (slug, recalls, hit_rate, trails). Three grouped queries, whatever the tenant count."""
    events = RecallEvent.objects.all()
    if since:
        events = events.filter(created_at__gte=since)
    per_tenant = {
        r["tenant"]: r for r in events.values("tenant").annotate(**_outcome_counts()).order_by()
    }
    trail_counts: dict[object, dict[str, int]] = {}
    for tenant_id, status, n in Trail.objects.values_list("tenant", "status").annotate(n=Count("id")).order_by():
        trail_counts.setdefault(tenant_id, {})[status] = n
    keys = ("recalls", "prefetch", "hint", "miss", "stale", "escalated")
    totals = dict.fromkeys(keys, 0)
    rows = []
    for tenant in Tenant.objects.order_by("slug"):
        r = per_tenant.get(tenant.pk, {})
        for k in keys:
            totals[k] += r.get(k, 0)
        trails = trail_counts.get(tenant.pk, {})
        rows.append({
            "tenant": tenant, "recalls": r.get("recalls", 0),
            "hit_rate": _rate(r.get("prefetch", 0) + r.get("hint", 0), r.get("recalls", 0)),
            "trails": sum(trails.values()), "active": trails.get(TrailStatus.ACTIVE, 0),
        })
    by_status = {s: sum(c.get(s, 0) for c in trail_counts.values()) for s in TrailStatus.values}
    recalls = totals["recalls"]
    return {
        "recalls": recalls, "prefetch": totals["prefetch"], "hint": totals["hint"], "miss": totals["miss"],
        "hit_rate": _rate(totals["prefetch"] + totals["hint"], recalls),
        "stale_rate": _rate(totals["stale"], recalls),
        "escalation_rate": _rate(totals["escalated"], recalls),
        "trails": by_status, "tenants": rows,
    }


def top_trails_by_hits(*, tenant: Tenant | None, limit: int = 10) -> list[Trail]:
    trails = Trail.objects.filter(hits__gt=0)
    if tenant is not None:
        trails = trails.filter(tenant=tenant)
    return list(
        trails.select_related("tenant").only("id", "tenant__slug", "scope", "query", "status", "hits", "last_hit_at")
        .order_by("-hits", "-last_hit_at")[:limit]
    )


def trail_status_counts(*, trails: QuerySet[Trail]) -> dict[str, int]:
    """Trails of an already filtered queryset by status (one GROUP BY)."""
    rows = dict(trails.order_by().values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    return {status: rows.get(status, 0) for status in TrailStatus.values}


def capped_count(*, queryset: QuerySet, cap: int = 10_000) -> tuple[int, bool]:
    """(count, capped): counts at most ``cap`` + 1 rows, so a list of millions stays fast."""
    n = queryset.order_by().values("pk")[: cap + 1].count()
    return (cap, True) if n > cap else (n, False)


def recalls_for_trail(*, tenant: Tenant, trail: Trail, limit: int = 50) -> list[RecallEvent]:
    return list(
        RecallEvent.objects.filter(tenant=tenant, trail=trail)
        .only("id", "created_at", "outcome", "similarity", "coverage", "escalated", "feedback", "scope", "query",
              "latency_ms", "miss_reason")
        .order_by("-created_at")[:limit]
    )


def sections_search(*, tenant: Tenant, q: str = "") -> QuerySet[Section]:
    """Sections whose id or text contains ``q`` (text through the pg_trgm GIN index)."""
    sections = Section.objects.filter(tenant=tenant)
    q = q.strip()
    if q:
        sections = sections.filter(Q(external_id__icontains=q) | Q(text__icontains=q))
    return sections.order_by("external_id")


def trails_citing_with_state(*, tenant: Tenant, section: Section | None, section_id: str,
                             limit: int = 100) -> list[dict[str, object]]:
    """Trails citing a section, newest first, each with the hash it recorded and whether
    that still matches the section now (valid / changed / missing). One query."""
    from cachecore.engine.outcome import section_state

    rows = (
        Citation.objects.filter(tenant=tenant, section_id=section_id)
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
