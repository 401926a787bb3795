"""The recall counts: one definition (cachecore.engine.recall_counts), evaluated in Python and
rendered as SQL without a database."""

from __future__ import annotations

import pytest

from cachecore.engine.outcome import Outcome
from cachecore.engine.recall_counts import (
    OUTCOME_COUNTS,
    RECALL_COUNTS,
    STALE,
    count_events,
    counted,
    sql_condition,
    sql_count,
)

EVENTS = [
    {"outcome": "prefetch", "served_cited": 2, "escalated": False, "feedback": True, "shadow_outcome": ""},
    {"outcome": "prefetch", "served_cited": 0, "escalated": False, "feedback": None, "shadow_outcome": ""},
    {"outcome": "prefetch", "served_cited": None, "escalated": False, "feedback": False, "shadow_outcome": ""},
    {"outcome": "hint", "escalated": True, "feedback": None, "shadow_outcome": ""},
    {"outcome": "miss", "miss_reason": "stale", "escalated": False, "shadow_outcome": "prefetch",
     "offered_cited": False},
    {"outcome": "miss", "miss_reason": "no_candidate", "escalated": False, "shadow_outcome": "prefetch",
     "offered_cited": None},
    {"outcome": "miss", "miss_reason": "", "escalated": False, "shadow_outcome": "hint", "offered_cited": True},
]


def test_counts_over_a_handful_of_events():
    assert count_events(EVENTS) == {
        "recalls": 7, "prefetch": 3, "hint": 1, "miss": 3, "stale": 1, "escalated": 1,
        "feedback_positive": 1, "feedback_negative": 1, "cited_prefetches": 1,
        "shadow_recalls": 3, "shadow_prefetch": 2, "shadow_hint": 1, "shadow_prefetch_labelled": 1,
        "shadow_prefetch_uncited": 1,
    }


def test_null_is_never_equal_greater_or_different():
    assert not counted("cited_prefetches", {"outcome": "prefetch", "served_cited": None})
    assert not counted("shadow_recalls", {"shadow_outcome": None})
    assert not counted("feedback_negative", {"feedback": None})  # unanswered is not negative


def test_outcome_counts_are_the_outcomes_plus_stale_and_escalated():
    assert OUTCOME_COUNTS == ("recalls", *(o.value for o in Outcome), "stale", "escalated")
    assert set(OUTCOME_COUNTS) <= set(RECALL_COUNTS)


def test_sql_spelling():
    assert sql_count("recalls") == "count(*)"
    assert sql_condition("cited_prefetches") == "outcome = 'prefetch' AND served_cited > 0"
    assert sql_condition("shadow_prefetch_labelled") == "shadow_outcome = 'prefetch' AND offered_cited IS NOT NULL"
    assert sql_condition("escalated") == "escalated IS TRUE"
    assert sql_condition("shadow_recalls") == "shadow_outcome <> ''"
    assert sql_condition("stale") == f"miss_reason = '{STALE}'"


def test_an_unknown_count_is_named():
    with pytest.raises(KeyError, match="not a recall count: 'hits'"):
        counted("hits", {})
