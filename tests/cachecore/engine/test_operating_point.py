"""The tenant operating point from labels (no database): an upper bound, moves only on evidence,
hints only when no cut meets the target, and a replay of rounds that converges."""

import bisect
import itertools
import random

import pytest

from cachecore.engine.operating_point import (
    HYSTERESIS,
    MIN_EVIDENCE,
    MIN_LABELS,
    Z99,
    Move,
    figures_at,
    judge_labels,
    noise_floor,
    suggest,
    wilson_lower,
    wilson_upper,
)


def test_wilson_bounds():
    assert wilson_upper(0, 0) == 1.0 and wilson_lower(0, 0) == 0.0
    assert round(wilson_upper(0, 100), 4) == 0.037
    assert round(wilson_upper(5, 100), 3) == 0.112
    assert round(wilson_lower(5, 100), 3) == 0.022
    assert wilson_lower(27, 65) > 0.25  # the round 1: 27 of 65 uncited at >= 0.87


def test_no_suggestion_before_enough_labels():
    assert suggest([(0.9, True)] * (MIN_LABELS - 1), current_cut=0.8) is None


def test_judge_labels_is_what_a_clean_record_needs_to_pass():
    n = judge_labels(0.05)
    assert wilson_upper(0, n, Z99) <= 0.05 * (1 - HYSTERESIS) < wilson_upper(0, n - 1, Z99)
    assert judge_labels(0.05, noise_allowance=0.1) < n


def test_a_cut_that_misses_the_target_is_raised_at_once_to_the_lowest_that_meets_it():
    # The round 1: many uncited labels at the default cut, clean ones higher up.
    labels = [(0.9, False)] * 27 + [(0.9, True)] * 38 + [(0.97, True)] * 200
    s = suggest(labels, current_cut=0.87, target_false=0.05)
    assert s is not None and s.move is Move.RAISE and s.suggested is not None
    assert s.suggested.cut == 0.91 and s.meets_target and s.suggested.false_rate == 0.0
    assert s.current.false_rate_upper > 0.05 and not s.hint_only and s.changes


def test_the_noise_floor_is_never_subtracted_unless_the_tenant_allows_it():
    # 10 % uncited everywhere (noise or not: the labels cannot tell): no cut meets 5 %.
    labels = [(0.95, True)] * 270 + [(0.95, False)] * 30 + [(0.75, True)] * 90 + [(0.75, False)] * 10
    s = suggest(labels, current_cut=0.87, target_false=0.05)
    assert noise_floor(labels) == 0.1
    assert s is not None and s.move is Move.PAUSE and s.hint_only and s.suggested is None
    assert not s.meets_target and s.changes
    # A tenant that says a tenth of right sections go uncited gets a cut again.
    allowed = suggest(labels, current_cut=0.87, target_false=0.05, noise_allowance=0.1)
    assert allowed is not None and not allowed.hint_only
    assert allowed.move in (Move.STAY, Move.LOWER) and allowed.suggested is not None


def test_a_paused_tenant_resumes_only_with_evidence_under_the_target_by_the_margin():
    clean = [(0.96, True)] * 200 + [(0.6, False)] * 50
    s = suggest(clean, current_cut=0.87, target_false=0.05, paused=True)
    assert s is not None and s.move is Move.RESUME and s.suggested is not None and s.suggested.cut == 0.61
    # Not enough clean labels yet: stays paused.
    few = [(0.96, True)] * 40 + [(0.6, False)] * 50
    s = suggest(few, current_cut=0.87, target_false=0.05, paused=True)
    assert s is not None and s.move is Move.STAY and s.hint_only and not s.changes


def test_lowering_needs_the_bound_under_the_target_with_margin_and_enough_labels():
    # At 0.8 the 95 % bound is under the target, but not the 99 % one by the margin: the cut comes
    # down to the clean labels only, not to the band at 0.8.
    base = [(0.95, True)] * 400
    near = base + [(0.8, True)] * 100 + [(0.8, False)] * 14
    f = figures_at(near, 0.8)
    assert f.false_rate_upper <= 0.05 < wilson_upper(f.false, f.served, Z99) + 0.05 * HYSTERESIS
    s = suggest(near, current_cut=0.9, target_false=0.05)
    assert s is not None and s.move is Move.LOWER and s.suggested.cut == 0.81
    assert suggest(near, current_cut=0.81, target_false=0.05).move is Move.STAY
    # With fewer labels than MIN_EVIDENCE served, even a clean lower cut is not taken.
    thin = [(0.95, True)] * (MIN_EVIDENCE - 1) + [(0.3, False)] * 10
    s = suggest(thin, current_cut=0.97, target_false=0.5)
    assert s is not None and s.move is Move.STAY


def test_cuts_with_too_few_labels_just_under_a_high_cut_neither_hold_nor_pull_it():
    """A small tenant applies a cut near 1 (``decide.small_tenant_prefetch_cut``), where few labels
    are: the walk down starts at the first cut with ``MIN_EVIDENCE`` labels, and every cut from
    there down must pass."""
    clean = [(0.999, True)] * 5 + [(0.93, True)] * 300 + [(0.6, True)] * 90 + [(0.6, False)] * 10
    s = suggest(clean, current_cut=0.9962, target_false=0.05)
    assert s is not None and s.move is Move.LOWER and s.suggested.cut == 0.61
    # The few labels at the top are counted by every cut below: uncited, they hold the cut.
    spoiled = [(0.98, False)] * 10 + clean[5:]
    s = suggest(spoiled, current_cut=0.9962, target_false=0.05)
    assert s is not None and s.move is Move.STAY


def test_an_unjudged_cut_stays_where_it_is():
    # 40 clean labels: the bound (8.8 %) is over 5 % only because there are few of them.
    labels = [(0.95, True)] * 40
    assert 40 < judge_labels(0.05)
    s = suggest(labels, current_cut=0.87, target_false=0.05)
    assert s is not None and s.move is Move.STAY and not s.changes and not s.hint_only


# --- a replay: labels drawn from a known confidence → correctness curve ----------------------


def p_correct(confidence: float) -> float:
    """The known curve: how often a recall at this confidence really is the same need."""
    return min(1.0, 0.2 + 0.82 * confidence)


def draw_confidence(rng: random.Random) -> float:
    """Labelled recalls: half spread over the hint band and up, half near-certain matches."""
    if rng.random() < 0.5:
        return round(rng.uniform(0.13, 1.0), 4)
    return round(1.0 - 0.15 * rng.random() ** 2, 4)


_RNG = random.Random(10_000)
_POPULATION = sorted(draw_confidence(_RNG) for _ in range(40_000))
_FALSE_FROM = list(itertools.accumulate(reversed([1 - p_correct(c) for c in _POPULATION])))[::-1]


def true_false_rate(cut: float) -> float:
    """The real false-prefetch rate at ``cut`` (no label noise), from a large draw."""
    first = bisect.bisect_left(_POPULATION, cut)
    return _FALSE_FROM[first] / (len(_POPULATION) - first)


def replay(*, seed: int, noise: float, noise_allowance: float = 0.0, rounds: int = 8, per_round: int = 150,
           start: float = 0.87, target: float = 0.05) -> list[dict]:
    """Rounds of labels → suggest → apply, as a tenant with auto-calibration would get them."""
    rng = random.Random(seed)
    labels: list[tuple[float, bool]] = []
    cut, paused = start, False
    history = []
    for _ in range(rounds):
        for _ in range(per_round):
            c = draw_confidence(rng)
            correct = rng.random() < p_correct(c)
            labels.append((c, correct != (rng.random() < noise)))
        s = suggest(labels, current_cut=cut, target_false=target, noise_allowance=noise_allowance, paused=paused)
        if s is not None and s.changes:
            paused = s.hint_only
            if s.suggested is not None:
                cut = s.suggested.cut
        history.append({"move": s.move if s else Move.STAY, "cut": cut, "paused": paused,
                        "bound": s.suggested.false_rate_upper if s and s.suggested else None,
                        "true": 0.0 if paused else true_false_rate(cut)})
    return history


def _no_swings(history: list[dict]) -> bool:
    """Once the cut has come down on evidence it never goes back up (no lower → raise/pause).
    Coming down in steps after a first raise is convergence from the safe side."""
    lowered = False
    for h in history:
        if h["move"] in (Move.RAISE, Move.PAUSE) and lowered:
            return False
        lowered = lowered or h["move"] in (Move.LOWER, Move.RESUME)
    return True


@pytest.mark.parametrize("start", [0.87, 0.95, 0.5])
def test_replay_without_label_noise_converges_under_the_target(start):
    lowest = min(c / 100 for c in range(50, 100) if true_false_rate(c / 100) <= 0.05)
    for seed in range(20):
        history = replay(seed=seed, noise=0.0, start=start)
        assert _no_swings(history), history
        # A permissive start that the labels show to be wrong may pause first, and only first.
        assert not any(h["paused"] for h in history[1:] if h["move"] is not Move.STAY)
        moved = False
        for h in history:
            moved = moved or h["move"] is not Move.STAY
            # Never above the target once the labels moved it (a permissive start stays put until
            # the labels are enough to judge it): the bound held.
            if moved or start >= 0.87:
                assert h["true"] <= 0.05, (seed, h)
        # It serves: the cut settles near the lowest cut the curve allows, from above.
        assert not history[-1]["paused"] and lowest <= history[-1]["cut"] <= 0.95, history


def test_replay_with_ten_percent_label_noise_serves_hints_only_without_an_allowance():
    for seed in range(20):
        history = replay(seed=seed, noise=0.1)
        assert _no_swings(history), history
        assert history[-1]["paused"], history  # no cut meets 5 % when a tenth of labels are flipped
        assert [h["move"] for h in history].count(Move.PAUSE) == 1
        assert Move.RESUME not in [h["move"] for h in history]


def test_replay_with_ten_percent_label_noise_and_that_allowance_converges():
    served = 0
    for seed in range(20):
        history = replay(seed=seed, noise=0.1, noise_allowance=0.1)
        assert _no_swings(history), history
        for h in history:
            assert h["true"] <= 0.05, (seed, h)
            if h["bound"] is not None:
                assert h["true"] <= h["bound"]
        served += not history[-1]["paused"]
    assert served >= 5  # tenants prefetch again once they allow for the noise
