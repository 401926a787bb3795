"""Pure computations of the report: rates, means, the threshold sweep, gate accounting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import mean, median

THRESHOLDS = tuple(round(0.30 + 0.01 * i, 2) for i in range(66))  # 0.30 … 0.95


def rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def summary(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None, "total": 0}
    return {"mean": round(mean(values), 2), "median": round(float(median(values)), 2), "total": round(sum(values), 2)}


def threshold_sweep(
    positives: Iterable[float | None], negatives: Iterable[float | None], thresholds: Sequence[float] = THRESHOLDS,
) -> list[dict[str, float | None]]:
    """Hit rate of ``positives`` (paraphrases) and false-hit rate of ``negatives`` (distinct
    questions) if the threshold were t: a query hits when its best candidate's similarity is
    ≥ t (None: no candidate at all, never a hit)."""
    pos = [p for p in positives]
    neg = [n for n in negatives]
    rows = []
    for t in thresholds:
        hits = sum(1 for s in pos if s is not None and s >= t - 1e-9)
        false = sum(1 for s in neg if s is not None and s >= t - 1e-9)
        rows.append({"threshold": t, "hit_rate": rate(hits, len(pos)), "false_hit_rate": rate(false, len(neg))})
    return rows


def sweep_point(sweep: Sequence[dict[str, float | None]], threshold: float) -> dict[str, float | None] | None:
    """The sweep row nearest ``threshold`` (where the tenant's default sits)."""
    if not sweep:
        return None
    return min(sweep, key=lambda r: abs(float(r["threshold"] or 0) - threshold))


def gate_accounting(trails: Iterable[tuple[bool, bool]]) -> dict[str, int | float | None]:
    """``trails``: (admitted, correct) per recorded trail, correct = it cites a gold section.
    Wrong trails admitted and correct trails rejected, as counts and rates."""
    rows = list(trails)
    admitted = sum(1 for a, _ in rows if a)
    wrong = sum(1 for _, c in rows if not c)
    correct = len(rows) - wrong
    wrong_admitted = sum(1 for a, c in rows if a and not c)
    correct_rejected = sum(1 for a, c in rows if not a and c)
    return {
        "recorded": len(rows), "admitted": admitted, "correct": correct, "wrong": wrong,
        "wrong_admitted": wrong_admitted, "correct_rejected": correct_rejected,
        "wrong_admitted_rate": rate(wrong_admitted, wrong), "correct_rejected_rate": rate(correct_rejected, correct),
        "admitted_precision": rate(admitted - wrong_admitted, admitted),
    }


def edit_sample_size(n: int, fraction: float) -> int:
    """Sections edited at ``fraction`` of ``n`` cited sections: rounded, at least one when n > 0."""
    if n <= 0 or fraction <= 0:
        return 0
    return min(n, max(1, round(n * fraction)))
