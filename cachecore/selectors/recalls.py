"""Reads of recall events: one recall, a trail's recalls, recalls per day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import QuerySet, Sum
from django.utils import timezone

from cachecore.embedding import get_embedder
from cachecore.engine.boundary import local_bar
from cachecore.errors import NotFound
from cachecore.models import RecallEvent, Trail
from cachecore.selectors.nearest import QUERY_VECTOR, QUERY_VECTOR_CTE, vector_literal
from cachecore.selectors.stats import recall_counts
from tenants.caller import Caller, require_superuser
from tenants.models import Tenant


def recall_event_lock(*, caller: Caller, recall_id: object) -> RecallEvent:
    """A recall the caller sees (its tenant, its scopes), locked for an update (inside the
    writer's transaction), else NotFound."""
    try:
        return RecallEvent.objects.visible_to(caller).select_for_update().get(pk=recall_id)
    except (RecallEvent.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
        raise NotFound("recall not found") from exc


def recalls_for_trail(*, caller: Caller, trail: Trail, limit: int = 50) -> list[RecallEvent]:
    """A trail's recalls, newest first, with each one's reason and confidence."""
    return list(
        RecallEvent.objects.visible_to(caller).filter(trail=trail)
        .only("id", "created_at", "outcome", "reason", "confidence", "similarity", "coverage", "escalated",
              "feedback", "scope", "query", "latency_ms", "miss_reason")
        .order_by("-created_at")[:limit]
    )


def console_window_start(*, days: int) -> datetime:
    """Start (UTC midnight) of a window of ``days`` whole days ending today: the dashboard's
    totals (stats_for_tenant since=) and its per-day bars cover exactly the same events."""
    today = timezone.now().astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    return datetime.combine(first, datetime.min.time(), tzinfo=UTC)


def recall_daily_counts(*, caller: Caller, days: int) -> list[dict[str, object]]:
    """Recalls per day of the caller's tenant (and scopes): see ``_daily_counts``."""
    from cachecore.models import DailyStat

    return _daily_counts(DailyStat.objects.visible_to(caller), RecallEvent.objects.visible_to(caller), days)


def recall_daily_counts_all_tenants(*, caller: Caller, days: int) -> list[dict[str, object]]:
    """Recalls per day summed over every tenant: superusers only (SuperuserRequired otherwise)."""
    from cachecore.models import DailyStat

    require_superuser(caller)
    return _daily_counts(DailyStat.objects.all(), RecallEvent.objects.all(), days)


# The per-day bars: these counts (cachecore.engine.recall_counts), rolled up or raw.
_DAILY_COUNTS = ("prefetch", "hint", "miss", "cited_prefetches")


def _daily_counts(stats: QuerySet, events: QuerySet[RecallEvent], days: int) -> list[dict[str, object]]:
    """Recalls per UTC day by outcome for the last ``days`` days (today included), oldest
    first, empty days as zeros: ``[{"day", "prefetch", "hint", "miss", "cited_prefetches"}]``. Complete days come
    from the daily roll-up (cachecore.services.rollups); only the days after the last rolled-up
    one (normally just today) are counted from raw events."""
    from django.db.models.functions import TruncDate

    start = console_window_start(days=days)
    first = start.date()
    today = timezone.now().astimezone(UTC).date()
    stats = stats.filter(day__gte=first, day__lt=today)
    by_day: dict[object, dict[str, int]] = {
        r["day"]: r for r in stats.values("day").annotate(**{name: Sum(name) for name in _DAILY_COUNTS})
    }
    raw_from = datetime.combine(max(by_day) + timedelta(days=1), datetime.min.time(), tzinfo=UTC) if by_day else start
    events = events.filter(created_at__gte=raw_from)
    rows = (
        events.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(**recall_counts(*_DAILY_COUNTS))
        .order_by("day")
    )
    by_day.update({r["day"]: r for r in rows})
    out: list[dict[str, object]] = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        row = by_day.get(day, {})
        out.append({"day": day, **{name: row.get(name) or 0 for name in _DAILY_COUNTS}})
    return out


@dataclass(frozen=True)
class Negative:
    """A recall whose offer of a trail went uncited (engine/boundary.py), with the cosine of its
    query to a given one (None when none was given)."""

    recall_id: object
    bar: float
    cosine: float | None


def trail_negatives(*, tenant: Tenant, trail_id: object, query_embedding: Any = None) -> list[Negative]:
    """A trail's negatives, each with its query's cosine to ``query_embedding``."""
    model = get_embedder().version
    with connection.cursor() as cur:
        if query_embedding is None:
            cur.execute("SELECT id, negative_bar, NULL FROM cachecore_recallevent "
                        "WHERE tenant_id = %s AND negative_for = %s AND negative_embedding_model = %s",
                        [tenant.pk, str(trail_id), model])
        else:
            cur.execute("SELECT id, negative_bar, 1 - (negative_embedding <=> %s::vector) FROM cachecore_recallevent "
                        "WHERE tenant_id = %s AND negative_for = %s AND negative_embedding_model = %s",
                        [vector_literal(query_embedding), tenant.pk, str(trail_id), model])
        return [Negative(r[0], float(r[1]), None if r[2] is None else float(r[2])) for r in cur.fetchall()]


def negatives_sql(*, tenant: Tenant, trail: str, only_if: str = "true") -> tuple[str, list[object]]:
    """A trail's negatives as a SELECT of one row (each negative's cosine to the query, and
    its bar, as two arrays; NULL when it has none) for a statement that defines
    ``QUERY_VECTOR_CTE``: ``trail`` is the SQL of the trail's id; the index is not read at all
    unless the SQL condition ``only_if`` holds. On the partial index."""
    return ("SELECT array_agg(1 - (negative_embedding <=> " + QUERY_VECTOR + ")) AS cosines, "
            "array_agg(negative_bar) AS bars FROM cachecore_recallevent "
            f"WHERE ({only_if}) AND tenant_id = %s AND negative_for = {trail} "
            "AND negative_embedding_model = %s"), [tenant.pk, get_embedder().version]


def bar_from_negatives(cosines: list[float] | None, bars: list[float] | None, *,
                       boundary: float | None) -> float | None:
    """The bar a trail with ``boundary`` sets for the query, from its negatives (a
    negatives_sql row): the trail-wide boundary when it has none, else ``local_bar``."""
    if not cosines or not bars:
        return boundary
    return local_bar(zip(cosines, bars))


def negative_bars(*, tenant: Tenant, trail_ids: list[str], embedding: Any) -> dict[str, float | None]:
    """For trails with a boundary: the bar their negatives set for a query with ``embedding``
    (engine.boundary.local_bar), None when no negative is like it. Trails without any negative
    are left out (their boundary is trail-wide). One statement, on the partial index."""
    if not trail_ids:
        return {}
    select, params = negatives_sql(tenant=tenant, trail="t.id")
    with connection.cursor() as cur:
        cur.execute(
            f"WITH {QUERY_VECTOR_CTE} SELECT t.id, n.cosines, n.bars FROM unnest(%s::uuid[]) AS t(id) "
            f"CROSS JOIN LATERAL ({select}) n WHERE n.cosines IS NOT NULL",
            [vector_literal(embedding), [str(t) for t in trail_ids], *params])
        return {str(r[0]): local_bar(zip(r[1], r[2])) for r in cur.fetchall()}
