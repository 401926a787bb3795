"""Daily roll-up per tenant and scope, and the dashboard's per-day counts read from it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cachecore.models import DailyStat, RecallEvent
from cachecore.selectors.recalls import recall_daily_counts
from cachecore.services.rollups import stats_rollup, stats_rollup_tenant
from tenants.caller import tenant_caller
from tests.factories import make_recall_event

pytestmark = pytest.mark.django_db


def _at(day_offset: int, hour: int = 12) -> datetime:
    today = timezone.now().astimezone(UTC).date()
    return datetime.combine(today + timedelta(days=day_offset), datetime.min.time(), tzinfo=UTC) + timedelta(
        hours=hour)


def test_rollup_counts_complete_days_per_scope_and_is_idempotent(make_tenant):
    tenant = make_tenant()
    for offset, scope, outcome in [(-2, "a", "prefetch"), (-2, "a", "miss"), (-2, "b", "hint"), (-1, "a", "hint"),
                                   (0, "a", "prefetch")]:
        with time_machine.travel(_at(offset), tick=False):
            make_recall_event(tenant, scope=scope, outcome=outcome, escalated=outcome == "hint")
    stats_rollup()
    stats_rollup()
    rows = {(r.day, r.scope): r for r in DailyStat.objects.filter(tenant=tenant)}
    day2, day1 = _at(-2).date(), _at(-1).date()
    assert set(rows) == {(day2, "a"), (day2, "b"), (day1, "a")}  # today is not complete: not rolled up
    assert (rows[(day2, "a")].recalls, rows[(day2, "a")].prefetch, rows[(day2, "a")].miss) == (2, 1, 1)
    assert rows[(day2, "b")].hint == 1 and rows[(day2, "b")].escalated == 1


def test_late_feedback_on_yesterday_is_picked_up_by_the_next_rollup(make_tenant):
    tenant = make_tenant()
    with time_machine.travel(_at(-1), tick=False):
        event = make_recall_event(tenant, outcome="prefetch")
    stats_rollup_tenant(tenant=tenant)
    RecallEvent.objects.filter(pk=event.pk).update(feedback=False)
    stats_rollup_tenant(tenant=tenant)
    assert DailyStat.objects.get(tenant=tenant).feedback_negative == 1


def test_daily_counts_read_the_rollup_plus_todays_raw_events(make_tenant):
    tenant = make_tenant()
    with time_machine.travel(_at(-40), tick=False):
        make_recall_event(tenant, outcome="prefetch")
    with time_machine.travel(_at(-1), tick=False):
        make_recall_event(tenant, outcome="miss")
    make_recall_event(tenant, outcome="hint")
    before = recall_daily_counts(caller=tenant_caller(tenant), days=90)  # nothing rolled up yet: raw events
    stats_rollup_tenant(tenant=tenant)
    RecallEvent.objects.filter(created_at__lt=_at(0, 0)).delete()  # as retention would
    after = recall_daily_counts(caller=tenant_caller(tenant), days=90)
    assert before == after
    assert len(after) == 90 and after[-1]["hint"] == 1 and after[-2]["miss"] == 1 and after[-41]["prefetch"] == 1
    with CaptureQueriesContext(connection) as queries:
        recall_daily_counts(caller=tenant_caller(tenant), days=90)
    assert len(queries) == 2
    assert "created_at\" >= " in queries[1]["sql"] and _at(0, 0).date().isoformat() in queries[1]["sql"]


def test_rollup_keeps_cited_prefetches_and_shadow_estimates(make_tenant):
    tenant = make_tenant()
    with time_machine.travel(_at(-1), tick=False):
        make_recall_event(tenant, scope="a", outcome="prefetch", served_ids=["x"], served_cited=1)
        make_recall_event(tenant, scope="a", outcome="prefetch", served_ids=["x"], served_cited=0)
        make_recall_event(tenant, scope="a", outcome="miss", shadow_outcome="prefetch", offered_cited=False)
        make_recall_event(tenant, scope="a", outcome="miss", shadow_outcome="prefetch", offered_cited=True)
        make_recall_event(tenant, scope="a", outcome="miss", shadow_outcome="hint")
    stats_rollup_tenant(tenant=tenant)
    row = DailyStat.objects.get(tenant=tenant, scope="a")
    assert (row.cited_prefetches, row.shadow_recalls, row.shadow_prefetch) == (1, 3, 2)
    assert (row.shadow_prefetch_labelled, row.shadow_prefetch_uncited) == (2, 1)
