"""The tenant operating point from labels (no database)."""

import random

from cachecore.engine.operating_point import MIN_LABELS, figures_at, suggest, wilson_upper


def test_wilson_upper_bound():
    assert wilson_upper(0, 0) == 1.0
    assert round(wilson_upper(0, 100), 4) == 0.037
    assert round(wilson_upper(5, 100), 3) == 0.112


def test_no_suggestion_before_enough_labels():
    assert suggest([(0.9, True)] * (MIN_LABELS - 1), current_cut=0.8) is None


def test_the_suggested_cut_is_the_lowest_that_meets_the_target_with_confidence():
    rng = random.Random(0)
    # Confidence is informative: uncited labels sit low, cited ones high.
    labels = [(rng.uniform(0.5, 0.8), False) for _ in range(200)] + [(rng.uniform(0.7, 1.0), True) for _ in range(400)]
    s = suggest(labels, current_cut=0.6, target_false=0.05)
    assert s is not None and s.suggested is not None and s.changes
    assert s.suggested.false_rate_upper <= 0.05
    lower = figures_at(labels, round(s.suggested.cut - 0.01, 2))
    assert lower.false_rate_upper > 0.05  # one step lower would not meet the target
    assert s.current.false_rate > s.suggested.false_rate and 0 < s.suggested.hit_rate < 1


def test_when_no_cut_meets_the_target_nothing_is_suggested():
    labels = [(0.95, False)] * 40 + [(0.95, True)] * 40
    s = suggest(labels, current_cut=0.8)
    assert s is not None and s.suggested is None and not s.changes
