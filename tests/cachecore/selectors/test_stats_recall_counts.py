"""The recall counts mean the same in the three places that compute them: the stats'
aggregates over raw events, the daily roll-up's SQL and the Python definition
(cachecore.engine.recall_counts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from cachecore.engine.recall_counts import RECALL_COUNTS, count_events
from cachecore.models import DailyStat, MissReason, RecallEvent, RecallOutcome
from cachecore.selectors.stats import recall_counts
from cachecore.services.rollups import stats_rollup_tenant
from tests.factories import make_recall_event

pytestmark = pytest.mark.django_db

EVENTS = [
    {"outcome": "prefetch", "served_cited": 2, "feedback": True},
    {"outcome": "prefetch", "served_cited": 0},
    {"outcome": "prefetch", "feedback": False},
    {"outcome": "hint", "escalated": True},
    {"outcome": "miss", "miss_reason": "stale", "shadow_outcome": "prefetch", "offered_cited": False},
    {"outcome": "miss", "miss_reason": "no_candidate", "shadow_outcome": "prefetch"},
    {"outcome": "miss", "shadow_outcome": "hint", "offered_cited": True},
]


def test_the_definition_names_the_models_values():
    assert {c[2] for conds in RECALL_COUNTS.values() for c in conds if c[0] == "outcome"} == set(RecallOutcome.values)
    assert ("miss_reason", "=", MissReason.STALE) in RECALL_COUNTS["stale"]


def test_stats_aggregates_and_the_rollup_count_what_the_definition_counts(make_tenant):
    tenant = make_tenant()
    yesterday = datetime.combine(timezone.now().astimezone(UTC).date() - timedelta(days=1), datetime.min.time(),
                                 tzinfo=UTC) + timedelta(hours=12)
    with time_machine.travel(yesterday, tick=False):
        for fields in EVENTS:
            make_recall_event(tenant, **fields)
    rows = RecallEvent.objects.filter(tenant=tenant).values(*{c[0] for conds in RECALL_COUNTS.values() for c in conds})
    expected = count_events(rows)
    assert expected["cited_prefetches"] == 1 and expected["shadow_prefetch_uncited"] == 1
    assert RecallEvent.objects.filter(tenant=tenant).aggregate(**recall_counts(*RECALL_COUNTS)) == expected
    stats_rollup_tenant(tenant=tenant)
    rolled = DailyStat.objects.get(tenant=tenant)
    assert {name: getattr(rolled, name) for name in expected if hasattr(rolled, name)} == {
        name: n for name, n in expected.items() if hasattr(rolled, name)}
