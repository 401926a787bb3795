"""Aggregates for the stats endpoint and the dashboard: outcome counts and rates, savings,
shadow estimates, all-tenant totals, capped counts for long lists."""

from __future__ import annotations

from datetime import datetime

from django.db import connection
from django.db.models import Count, Func, Q, QuerySet, Sum

from cachecore.access import require_scope
from cachecore.engine.recall_counts import OUTCOME_COUNTS, conditions
from cachecore.models import RecallEvent, RecallOutcome, Trail, TrailStatus
from tenants.caller import Caller, require_superuser
from tenants.models import Tenant


def recall_count_q(name: str) -> Q:
    """The recall events a count counts (``cachecore.engine.recall_counts``) as a filter."""
    q = Q()
    for field, op, value in conditions(name):
        if op == "is":
            q &= Q(**{f"{field}__isnull": True}) if value is None else Q(**{field: value})
        elif op == "is not" and value is None:
            q &= Q(**{f"{field}__isnull": False})
        elif op == "=":
            q &= Q(**{field: value})
        elif op == "<>":  # SQL's <>: NULL is not counted
            q &= Q(**{f"{field}__isnull": False}) & ~Q(**{field: value})
        elif op == ">":
            q &= Q(**{f"{field}__gt": value})
        else:
            raise ValueError(f"no ORM spelling for {field} {op} {value!r}")
    return q


def recall_counts(*names: str) -> dict[str, Count]:
    """Recall counts by name (``cachecore.engine.recall_counts``), for one aggregate (a tenant)
    or one annotation (per tenant, per day); every outcome count when no name is given."""
    return {
        name: Count("id", filter=recall_count_q(name)) if conditions(name) else Count("id")
        for name in names or OUTCOME_COUNTS
    }


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def stats_for_tenant(
    *, caller: Caller, scope: str | None = None, since: datetime | None = None, until: datetime | None = None,
) -> dict[str, object]:
    """Recall counts and rates, and trails by status, of what the caller sees (its tenant, its
    scope prefixes; optionally one scope and a time window). A scope outside the caller's
    prefixes: ScopeForbidden."""
    if scope:
        require_scope(caller, scope)
    tenant = caller.tenant
    events = RecallEvent.objects.visible_to(caller)
    trails = Trail.objects.visible_to(caller)
    if scope:
        events = events.filter(scope=scope)
        trails = trails.filter(scope=scope)
    if since:
        events = events.filter(created_at__gte=since)
    if until:
        events = events.filter(created_at__lt=until)
    agg = events.aggregate(
        **recall_counts(*OUTCOME_COUNTS, "feedback_positive", "feedback_negative", "shadow_recalls",
                        "shadow_prefetch", "shadow_hint", "shadow_prefetch_labelled", "shadow_prefetch_uncited"),
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
            "AND s.namespace = ci.section_namespace "
            "WHERE ci.tenant_id = t.tenant_id AND ci.trail_id = t.id) c ON true "
            "WHERE t.tenant_id = %s AND t.id = ANY(%s::uuid[]) AND jsonb_typeof(t.steps) = 'array'",
            [tenant.pk, [str(t) for t in trail_ids]],
        )
        n, calls, tokens = cur.fetchone()
    return {"records": int(n or 0), "calls": round(float(calls or 0), 2), "tokens": round(float(tokens or 0), 1)}


def savings(*, tenant: Tenant, events: QuerySet[RecallEvent]) -> dict[str, float | int]:
    """Tool calls and tokens saved: prefetches whose served sections the following record cited,
    each worth the tenant's miss-path baseline (``miss_path_baseline``)."""
    cited_prefetches = events.filter(recall_count_q("cited_prefetches")).count()
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


def stats_all_tenants(*, caller: Caller, since: datetime | None = None) -> dict[str, object]:
    """The stats_for_tenant numbers summed over every tenant, plus one row per tenant
    (slug, recalls, hit_rate, trails). Three grouped queries, whatever the tenant count.
    Superusers only (SuperuserRequired otherwise)."""
    require_superuser(caller)
    events = RecallEvent.objects.all()
    if since:
        events = events.filter(created_at__gte=since)
    per_tenant = {
        r["tenant"]: r for r in events.values("tenant").annotate(**recall_counts()).order_by()
    }
    trail_counts: dict[object, dict[str, int]] = {}
    for tenant_id, status, n in Trail.objects.values_list("tenant", "status").annotate(n=Count("id")).order_by():
        trail_counts.setdefault(tenant_id, {})[status] = n
    keys = OUTCOME_COUNTS
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


def capped_count(*, queryset: QuerySet, cap: int = 10_000) -> tuple[int, bool]:
    """(count, capped): counts at most ``cap`` + 1 rows, so a list of millions stays fast."""
    n = queryset.order_by().values("pk")[: cap + 1].count()
    return (cap, True) if n > cap else (n, False)
