"""Daily roll-up of the recall log per tenant, scope and UTC day, so charts over 90 days
read a few hundred rows instead of raw events (which retention deletes)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from django.db import connection
from django.db.models import Max, Min
from django.utils import timezone

from cachecore.engine.recall_counts import sql_count
from cachecore.models import DailyStat, RecallEvent
from tenants.models import Tenant

# The daily counts (cachecore.engine.recall_counts: the same definitions the stats and the
# dashboard count raw events with) and sums, each a column of cachecore_dailystat.
_COUNTS = ("recalls", "prefetch", "hint", "miss", "stale", "escalated", "feedback_positive", "feedback_negative",
           "cited_prefetches", "shadow_recalls", "shadow_prefetch", "shadow_prefetch_labelled",
           "shadow_prefetch_uncited")
_SUMS = {
    "served_cited": "coalesce(sum(served_cited) FILTER (WHERE served_cited IS NOT NULL), 0)",
    "served_total": "coalesce(sum(cardinality(served_ids)) FILTER (WHERE served_cited IS NOT NULL), 0)",
    "latency_ms_sum": "coalesce(sum(latency_ms), 0)",
}
_COLUMNS = (*_COUNTS, *_SUMS)
_AGGREGATES = ",\n       ".join([*(sql_count(name) for name in _COUNTS), *_SUMS.values()])

_ROLLUP_SQL = """
INSERT INTO cachecore_dailystat (tenant_id, scope, day, {columns}, updated_at)
SELECT tenant_id, scope, (created_at AT TIME ZONE 'UTC')::date AS day,
       {aggregates},
       now()
FROM cachecore_recallevent
WHERE tenant_id = %s AND created_at >= %s AND created_at < %s
GROUP BY tenant_id, scope, day
ON CONFLICT (tenant_id, scope, day) DO {conflict}
"""


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _rollup(*, tenant: Tenant, first: date, end: date, overwrite: bool) -> int:
    if first >= end:
        return 0
    conflict = ("UPDATE SET " + ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS) + ", updated_at = now()"
                if overwrite else "NOTHING")
    with connection.cursor() as cur:
        cur.execute(_ROLLUP_SQL.format(columns=", ".join(_COLUMNS), aggregates=_AGGREGATES, conflict=conflict),
                    [tenant.pk, _day_start(first), _day_start(end)])
        return cur.rowcount


def stats_rollup_tenant(*, tenant: Tenant, now: datetime | None = None) -> int:
    """Roll up the tenant's complete days (UTC) not rolled yet, and re-roll the last two
    (late feedback), never overwriting a day whose raw events retention has begun to delete.
    Idempotent. Returns rows written."""
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    last = DailyStat.objects.filter(tenant=tenant).aggregate(last=Max("day"))["last"]
    if last is not None:
        first = last - timedelta(days=1)
    else:
        earliest = RecallEvent.objects.filter(tenant=tenant).aggregate(first=Min("created_at"))["first"]
        if earliest is None:
            return 0
        first = earliest.astimezone(UTC).date()
    cutoff = now - timedelta(days=tenant.recall_log_retention_days)
    cutoff_day = cutoff.astimezone(UTC).date()
    # The first day all of whose events are still kept.
    complete_from = cutoff_day if _day_start(cutoff_day) >= cutoff else cutoff_day + timedelta(days=1)
    split = min(max(first, complete_from), today)
    written = _rollup(tenant=tenant, first=first, end=split, overwrite=False)
    written += _rollup(tenant=tenant, first=split, end=today, overwrite=True)
    return written


def stats_rollup(*, now: datetime | None = None) -> int:
    """Every tenant's roll-up."""
    return sum(stats_rollup_tenant(tenant=t, now=now) for t in Tenant.objects.order_by("pk").iterator())
