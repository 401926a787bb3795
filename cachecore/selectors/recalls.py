"""Reads of recall events: one recall, a trail's recalls, recalls per day."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import QuerySet, Sum
from django.utils import timezone

from cachecore.embedding import get_embedder
from cachecore.engine.boundary import cited_over_polarity, exemplar_bars
from cachecore.engine.decide import Reason
from cachecore.errors import NotFound
from cachecore.models import RecallEvent, Trail
from cachecore.selectors.nearest import QUERY_VECTOR, vector_literal
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
    where = ("WHERE tenant_id = %s AND exemplar_for = %s AND exemplar_embedding_model = %s "
             "AND exemplar_cited IS NOT TRUE")
    with connection.cursor() as cur:
        if query_embedding is None:
            cur.execute(f"SELECT id, exemplar_bar, NULL FROM cachecore_recallevent {where}",
                        [tenant.pk, str(trail_id), model])
        else:
            cur.execute(f"SELECT id, exemplar_bar, 1 - (exemplar_embedding <=> %s::vector) FROM cachecore_recallevent "
                        f"{where}", [vector_literal(query_embedding), tenant.pk, str(trail_id), model])
        return [Negative(r[0], float(r[1]), None if r[2] is None else float(r[2])) for r in cur.fetchall()]


# Columns of an exemplars_sql row.
EXEMPLAR_COLUMNS = 4


def exemplars_sql(*, tenant: Tenant, trail: str, only_if: str = "true") -> tuple[str, list[object]]:
    """A trail's exemplars (negatives and positives) as a SELECT of one row of three arrays
    (each exemplar's cosine to the query, its bar, whether it was cited; NULL when it has none)
    for a statement that defines ``QUERY_VECTOR_CTE``: ``trail`` is the SQL of the trail's id;
    the index is not read at all unless the SQL condition ``only_if`` holds. A recall log entry
    is the trail's exemplar (``exemplar_for``) or its chosen one (``chosen_for``, a positive that
    shares the entry's embedding); on the two partial indexes."""
    chosen = f"chosen_for = {trail}"
    return ("SELECT array_agg(1 - (exemplar_embedding <=> " + QUERY_VECTOR + ")) AS cosines, "
            f"array_agg(CASE WHEN {chosen} THEN chosen_bar ELSE exemplar_bar END) AS bars, "
            f"array_agg(({chosen}) IS TRUE OR exemplar_cited IS TRUE) AS cited, "
            # Cited over a polarity conflict: the recall answered this trail with reason polarity.
            f"array_agg(exemplar_cited IS TRUE AND exemplar_for = {trail} AND trail_id = {trail} "
            f"AND reason = '{Reason.POLARITY.value}') AS over_polarity FROM cachecore_recallevent "
            f"WHERE ({only_if}) AND tenant_id = %s AND (exemplar_for = {trail} OR {chosen}) "
            "AND exemplar_embedding_model = %s"), [tenant.pk, get_embedder().version]


def bars_from_exemplars(row: Sequence[Any], *, boundary: float | None) -> tuple[float | None, float | None, bool]:
    """A trail's (boundary, cited bar, cited over a polarity conflict) for the query from an
    exemplars_sql row (engine.boundary.exemplar_bars, cited_over_polarity): the trail-wide
    ``boundary``, no cited bar and no such positive when the row holds none."""
    cosines, bars, cited, over_polarity = row
    if not cosines or not bars:
        return boundary, None, False
    boundary, cited_bar = exemplar_bars(zip(cosines, bars, cited), boundary=boundary)
    return boundary, cited_bar, cited_over_polarity(zip(cosines, over_polarity or []))
