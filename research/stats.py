"""Small pure statistics helpers for the research commands (no Django, no numpy), and the
timing loop the studies share (per-call milliseconds)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

Z95 = 1.959963984540054   # two-sided 95 % normal quantile


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (no continuity correction) for ``k`` successes in ``n`` trials.

    ``n == 0`` → ``(0.0, 1.0)`` (nothing is known)."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n; got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def proportion(k: int, n: int, digits: int = 4) -> dict[str, float | int | list[float] | None]:
    """``{"k", "n", "rate", "ci95": [lo, hi]}`` for a count out of ``n`` (rate ``None`` when n = 0)."""
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": round(k / n, digits) if n else None, "ci95": [round(lo, digits), round(hi, digits)]}


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolation percentile (numpy's default), ``q`` in [0, 100]; ``None`` if empty."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def time_calls(call: Callable[[int], object], *, n: int | None = None, seconds: float | None = None) -> list[float]:
    """Milliseconds (``time.perf_counter``) of each of ``call(0)``, ``call(1)``, …: ``n`` calls, or
    as many as start within ``seconds`` (whichever ends first when both are given)."""
    if n is None and seconds is None:
        raise ValueError("time_calls needs n or seconds")
    deadline = None if seconds is None else time.perf_counter() + seconds
    samples: list[float] = []
    i = 0
    while (n is None or i < n) and (deadline is None or time.perf_counter() < deadline):
        t0 = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - t0) * 1000)
        i += 1
    return samples
