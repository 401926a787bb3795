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


def test_when_no_cut_meets_the_target_the_least_bad_cut_is_suggested_without_chasing_noise():
    # 10 % of the high-confidence labels are noise: no cut gets under 5 %, but dropping the
    # mostly-uncited band below 0.8 is still worth it; going higher buys nothing.
    labels = ([(0.9, True)] * 90 + [(0.9, False)] * 10 + [(0.7, False)] * 40 + [(0.7, True)] * 10)
    s = suggest(labels, current_cut=0.6, target_false=0.05)
    assert s is not None and not s.meets_target and s.suggested is not None
    assert 0.7 < s.suggested.cut <= 0.9 and s.suggested.hit_rate == 0.9 and s.changes


def test_nothing_is_suggested_when_no_cut_serves_enough():
    labels = [(0.45, False)] * 40  # under every cut of the grid
    s = suggest(labels, current_cut=0.8)
    assert s is not None and s.suggested is None and not s.changes


def test_noise_alone_does_not_push_the_cut_up_once_the_measured_rate_is_under_the_target():
    # 4 % of the labels at every confidence are noise: the measured rate is under 5 % from
    # 0.7 up, but the bound is not; the suggestion stops at 0.7 instead of climbing for nothing.
    labels = ([(0.65, False)] * 30 + [(0.75, True)] * 96 + [(0.75, False)] * 4
              + [(0.95, True)] * 96 + [(0.95, False)] * 4)
    s = suggest(labels, current_cut=0.6, target_false=0.05)
    assert s is not None and not s.meets_target and s.suggested.cut <= 0.75 and s.suggested.hit_rate == 1.0


def test_label_noise_is_estimated_from_the_most_confident_labels_and_not_chased():
    from cachecore.engine.operating_point import noise_floor

    # 10 % noise everywhere; twins (really uncited) only under 0.8.
    labels = ([(0.98, True)] * 90 + [(0.98, False)] * 10 + [(0.85, True)] * 90 + [(0.85, False)] * 10
              + [(0.7, False)] * 60)
    assert noise_floor(labels) == 0.1
    s = suggest(labels, current_cut=0.6, target_false=0.05)
    assert s is not None and s.suggested is not None and 0.7 < s.suggested.cut <= 0.85
    assert s.suggested.hit_rate == 1.0 and s.noise_floor == 0.1
