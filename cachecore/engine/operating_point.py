"""A tenant's operating point from its own labels: the prefetch cut that keeps the false-prefetch
rate under the tenant's target with 95 % confidence, moved only on evidence. Pure functions, no
Django.

A label is (confidence, cited) for a recall whose (would-be) trail offered sections and whose
following record said whether it cited them: an uncited one at a confidence the cut lets through
is a false prefetch. The labels' uncited share is an *upper bound* on the real false rate (an
agent may leave a right section uncited for its own reasons, never the reverse), so it is used as
it is: no label noise is subtracted unless the tenant sets a ``noise_allowance`` itself (0 by
default), and a cut *meets the target* when the Wilson 95 % upper bound of its uncited share,
less that allowance, is at most the target.

The rule (``suggest``), from the current cut ``c``:

- **Raise** as soon as the labels show that ``c`` misses the target: the Wilson *lower* bound at
  ``c`` is over the target (certain whatever the count), or ``c`` serves at least ``judge_labels``
  labels (enough for a clean record to pass) and its upper bound is over the target. The new cut
  is the lowest one above ``c`` that meets the target; when none does, **pause**: prefetch
  nothing, answer hints only, until the labels show a cut that does.
- **Lower** only with margin and enough evidence: to the lowest cut under ``c`` that serves at
  least ``MIN_EVIDENCE`` labels and whose upper bound is under the target by ``HYSTERESIS`` of
  it, every cut between it and ``c`` that serves ``MIN_EVIDENCE`` labels passing too (the same
  test **resumes** a paused tenant at the lowest such cut).
- Otherwise **stay**. Between "under the target by the margin" and "over the target" nothing
  moves: labels that accumulate round after round narrow the bounds, so the cut settles instead
  of swinging.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

MIN_LABELS = 30
# A cut is lowered to (or a paused tenant resumed at) only when it serves at least this many labels.
MIN_EVIDENCE = 30
# Lowering needs the upper bound under the target by this share of the target.
HYSTERESIS = 0.3
# Kept for the evidence shown beside the suggestion: cuts serving fewer labels are not "best effort".
MIN_SERVED = 10
GRID = tuple(round(0.5 + 0.01 * i, 2) for i in range(50))  # 0.50 … 0.99
Z95 = 1.96
# Lowering (and resuming) tests the bound at 99 %: the gap between the two bounds, with the
# margin, is the hysteresis that keeps a cut from swinging as labels accumulate.
Z99 = 2.576


class Move(StrEnum):
    """What the suggestion does to the tenant's operating point."""

    STAY = "stay"
    LOWER = "lower"
    RAISE = "raise"
    PAUSE = "pause"      # no cut meets the target: hints only
    RESUME = "resume"    # a paused tenant prefetches again at the suggested cut


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_upper(k: int, n: int, z: float = Z95) -> float:
    """Upper end of the Wilson 95 % interval of k/n (1 when n is 0)."""
    return 1.0 if n == 0 else _wilson(k, n, z)[1]


def wilson_lower(k: int, n: int, z: float = Z95) -> float:
    """Lower end of the Wilson 95 % interval of k/n (0 when n is 0)."""
    return 0.0 if n == 0 else _wilson(k, n, z)[0]


def judge_labels(target_false: float, noise_allowance: float = 0.0) -> int:
    """The fewest labels with which a clean record (none uncited) passes the lowering test: under
    that many, an upper bound over the target says nothing about the cut."""
    bar = target_false + noise_allowance - HYSTERESIS * target_false
    n = 1
    while wilson_upper(0, n, Z99) > bar and n < 100_000:
        n += 1
    return n


@dataclass(frozen=True)
class CutFigures:
    cut: float
    served: int           # labels at or above the cut
    false: int            # of those, uncited
    false_rate: float
    false_rate_upper: float
    hit_rate: float       # cited labels at or above the cut / all cited labels
    false_rate_lower: float = 0.0


@dataclass(frozen=True)
class Suggestion:
    labels: int
    cited: int
    target_false: float
    current: CutFigures
    # The cut to prefetch at; None when the suggestion is to prefetch nothing (``hint_only``) or
    # to stay paused.
    suggested: CutFigures | None
    curve: tuple[CutFigures, ...]
    # Whether the suggested cut meets the target (False when hint only).
    meets_target: bool = True
    # The uncited share among the most confident labels: shown as evidence of label noise, never
    # subtracted (``noise_allowance`` is the tenant's own choice).
    noise_floor: float = 0.0
    noise_allowance: float = 0.0
    move: Move = Move.STAY
    # The tenant's state before and after the suggestion: hints only, no prefetch.
    paused: bool = False
    hint_only: bool = False

    @property
    def changes(self) -> bool:
        return self.move is not Move.STAY


def noise_floor(labels: Sequence[tuple[float, bool]]) -> float:
    """The uncited share of the most confident fifth of the labels (at least ``MIN_SERVED``):
    what uncited labels look like where the match is as sure as it gets."""
    ranked = sorted(c for c, _ in labels)
    k = max(MIN_SERVED, len(labels) // 5)
    if len(ranked) < k:
        return 0.0
    threshold = ranked[-k]
    top = [cited for c, cited in labels if c >= threshold]  # ties go together
    return round(sum(1 for cited in top if not cited) / len(top), 4)


def figures_at(labels: Sequence[tuple[float, bool]], cut: float) -> CutFigures:
    served = [cited for conf, cited in labels if conf >= cut]
    false = sum(1 for cited in served if not cited)
    all_cited = sum(1 for _, cited in labels if cited)
    return CutFigures(
        cut=cut, served=len(served), false=false,
        false_rate=round(false / len(served), 4) if served else 0.0,
        false_rate_upper=round(wilson_upper(false, len(served)), 4),
        hit_rate=round((len(served) - false) / all_cited, 4) if all_cited else 0.0,
        false_rate_lower=round(wilson_lower(false, len(served)), 4),
    )


def meets(f: CutFigures, *, target_false: float, noise_allowance: float = 0.0) -> bool:
    """The cut serves something and its false-rate upper bound, less the allowance, is within the target."""
    return f.served > 0 and f.false_rate_upper - noise_allowance <= target_false


def lowerable(f: CutFigures, *, target_false: float, noise_allowance: float = 0.0) -> bool:
    """Enough evidence to move down to this cut: ``MIN_EVIDENCE`` labels and the 99 % upper bound
    under the target by the hysteresis margin."""
    return (f.served >= MIN_EVIDENCE
            and wilson_upper(f.false, f.served, Z99) - noise_allowance <= target_false - HYSTERESIS * target_false)


def misses(f: CutFigures, *, target_false: float, noise_allowance: float = 0.0) -> bool:
    """The labels show the cut misses the target: certainly (lower bound over it), or with enough
    labels to judge, its upper bound is over it."""
    bar = target_false + noise_allowance
    if f.served and f.false_rate_lower > bar:
        return True
    return f.served >= judge_labels(target_false, noise_allowance) and f.false_rate_upper > bar


def suggest(labels: Sequence[tuple[float, bool]], *, current_cut: float, target_false: float = 0.05,
            noise_allowance: float = 0.0, paused: bool = False,
            grid: Sequence[float] = GRID) -> Suggestion | None:
    """The operating point for ``labels`` from the tenant's current one (None while fewer than
    ``MIN_LABELS``). See the module's docstring for the rule."""
    if len(labels) < MIN_LABELS:
        return None
    kw = {"target_false": target_false, "noise_allowance": noise_allowance}
    curve = tuple(figures_at(labels, c) for c in grid)
    current = figures_at(labels, current_cut)
    move, chosen = Move.STAY, None if paused else current
    if paused:
        chosen = next((f for f in curve if lowerable(f, **kw)), None)
        move = Move.RESUME if chosen is not None else Move.STAY
    elif misses(current, **kw):
        above = [f for f in curve if f.cut > current_cut + 0.005]
        # Where the lowering test would pass (so the next round does not raise again), else
        # where the target is met at all; none: hints only.
        chosen = next((f for f in above if lowerable(f, **kw)), None) or next(
            (f for f in above if meets(f, **kw)), None)
        move = Move.RAISE if chosen is not None else Move.PAUSE
    else:
        # The lowest cut under the current one from which every cut up to the current passes the
        # lowering test (one lucky cut alone does not pull the operating point down). Cuts just
        # under the current one that serve fewer than MIN_EVIDENCE labels can pass no test and
        # fail none: the walk starts under them (a small tenant's cut sits near 1, where few
        # labels are; the labels they do serve are counted again by every cut below).
        for f in reversed([f for f in curve if f.cut < current_cut - 0.005 and f.served >= MIN_EVIDENCE]):
            if not lowerable(f, **kw):
                break
            move, chosen = Move.LOWER, f
    return Suggestion(
        labels=len(labels), cited=sum(1 for _, c in labels if c), target_false=target_false,
        current=current, suggested=chosen, curve=curve,
        meets_target=chosen is not None and meets(chosen, **kw), noise_floor=noise_floor(labels),
        noise_allowance=noise_allowance, move=move, paused=paused, hint_only=chosen is None,
    )
