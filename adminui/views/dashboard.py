"""Dashboard: recalls per day by outcome, rates and trails by status over 7 / 30 / 90 days,
for one tenant, or every tenant for superusers (``?tenant=*``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from adminui import charts
from adminui.access import console_view
from adminui.rendering import console_render
from cachecore.models import TrailStatus
from cachecore.selectors.recalls import console_window_start, recall_daily_counts, recall_daily_counts_all_tenants
from cachecore.selectors.stats import stats_all_tenants, stats_for_tenant
from cachecore.selectors.trails import top_trails_by_hits, top_trails_by_hits_all_tenants

WINDOWS = (7, 30, 90)


@console_view("dashboard.view", all_tenants=True)
def dashboard(request: HttpRequest) -> HttpResponse:
    try:
        days = int(request.GET.get("days", "30"))
    except ValueError:
        days = 30
    if days not in WINDOWS:
        days = 30
    since = console_window_start(days=days)
    caller = request.caller
    if request.all_tenants:  # superusers only (console_view checked; the selectors check again)
        stats = stats_all_tenants(caller=caller, since=since)
        daily = recall_daily_counts_all_tenants(caller=caller, days=days)
        top = top_trails_by_hits_all_tenants(caller=caller, limit=10)
    else:
        stats = stats_for_tenant(caller=caller, since=since)
        daily = recall_daily_counts(caller=caller, days=days)
        top = top_trails_by_hits(caller=caller, limit=10)
    for d in daily:  # for the chart's table: the rate in words, not only as a line
        total = d["prefetch"] + d["hint"] + d["miss"]
        d["hit_rate"] = (d["prefetch"] + d["hint"]) / total if total else None
    savings_chart = None
    if not request.all_tenants and stats["savings"]["baseline_records"]:
        per_call = stats["savings"]["baseline_calls"]
        savings_chart = charts.bars_per_day([(d["day"], d["cited_prefetches"] * per_call) for d in daily],
                                            label="Tool calls saved per day", unit=" calls")
    status_rows = [(TrailStatus(s).label, n, charts.STATUS_COLOURS[s]) for s, n in stats["trails"].items()]
    max_hits = max((t.hits for t in top), default=0) or 1
    context = {
        "days": days,
        "windows": WINDOWS,
        "stats": stats,
        "trail_total": sum(stats["trails"].values()),
        "daily": daily,
        "recalls_chart": charts.recalls_per_day(daily),
        "hit_rate_chart": charts.hit_rate_per_day(daily),
        "status_chart": charts.horizontal_bars(status_rows, label="Trails by status"),
        "top_trails": [{"trail": t, "width": round(100 * t.hits / max_hits)} for t in top],
        "outcome_colours": charts.OUTCOME_COLOURS,
        "savings_chart": savings_chart,
    }
    return console_render(request, "adminui/dashboard/index.html", context, partial="body")
