"""A tenant's operating point from its own labels: the prefetch cut that meets a target
false-prefetch rate with 95 % confidence, and the hits it keeps. Pure functions, no Django.

A label is (confidence, cited) for a recall whose (would-be) trail offered sections and whose
following record said whether it cited them: an uncited one at a confidence the cut lets
through is a false prefetch. The suggested cut is the lowest one on the grid whose Wilson upper
bound of the false rate stays under the target; the hit rate is the share of cited labels it
still serves. Labels are noisy (an agent that cites something else for its own reasons): when
no cut meets the target, the suggestion is the lowest cut within one point of the lowest upper
bound any cut reaches, and never above the first cut whose measured rate, less the label noise
(the uncited share of the most confident fifth of the labels), is under the target
(``meets_target`` False), so noise is not chased with the hits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_LABELS = 30
# Best effort when no cut meets the target: cuts serving at least this many labels, within this
# much of the lowest false-rate upper bound.
MIN_SERVED = 10
NOISE_TOLERANCE = 0.01
GRID = tuple(round(0.5 + 0.01 * i, 2) for i in range(50))  # 0.50 … 0.99


def wilson_upper(k: int, n: int, z: float = 1.96) -> float:
    """Upper end of the Wilson 95 % interval of k/n (1 when n is 0)."""
    if n == 0:
        return 1.0
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return min(1.0, centre + half)


@dataclass(frozen=True)
class CutFigures:
    cut: float
    served: int           # labels at or above the cut
    false: int            # of those, uncited
    false_rate: float
    false_rate_upper: float
    hit_rate: float       # cited labels at or above the cut / all cited labels


@dataclass(frozen=True)
class Suggestion:
    labels: int
    cited: int
    target_false: float
    current: CutFigures
    suggested: CutFigures | None     # None: no cut serves anything labelled
    curve: tuple[CutFigures, ...]
    meets_target: bool = True
    # The uncited share among the most confident labels: the label noise (an agent citing
    # something else for its own reasons) that no cut can remove.
    noise_floor: float = 0.0

    @property
    def changes(self) -> bool:
        return self.suggested is not None and abs(self.suggested.cut - self.current.cut) >= 0.005


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
    )


def suggest(labels: Sequence[tuple[float, bool]], *, current_cut: float, target_false: float = 0.05,
            grid: Sequence[float] = GRID) -> Suggestion | None:
    """The operating point for ``labels`` (None while fewer than ``MIN_LABELS``)."""
    if len(labels) < MIN_LABELS:
        return None
    curve = tuple(figures_at(labels, c) for c in grid)
    feasible = [f for f in curve if f.served and f.false_rate_upper <= target_false]
    meets = bool(feasible)
    floor = noise_floor(labels)
    if not feasible:
        served = [f for f in curve if f.served >= MIN_SERVED]
        # Where the measured rate, less the label noise, is already under the target, only the
        # bound's width or the noise keeps it out: tightening further trades hits for noise.
        enough = next((f.cut for f in served if f.false_rate - floor <= target_false), None)
        if enough is not None:
            served = [f for f in served if f.cut <= enough]
        best = min((f.false_rate_upper for f in served), default=None)
        feasible = [f for f in served if best is not None and f.false_rate_upper <= best + NOISE_TOLERANCE]
    return Suggestion(
        labels=len(labels), cited=sum(1 for _, c in labels if c), target_false=target_false,
        current=figures_at(labels, current_cut), suggested=feasible[0] if feasible else None, curve=curve,
        meets_target=meets, noise_floor=floor,
    )
