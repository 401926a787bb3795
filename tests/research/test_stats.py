"""research.stats: the Wilson interval against published values (Newcombe 1998, table I)."""

from __future__ import annotations

import pytest

from research.stats import percentile, proportion, wilson


@pytest.mark.parametrize(("k", "n", "lo", "hi"), [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (0, 10, 0.0, 0.2775),
    (5, 10, 0.2366, 0.7634),
    (10, 10, 0.7225, 1.0),
])
def test_wilson_known_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_wilson_edges() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    lo, hi = wilson(3, 7)
    assert 0 <= lo < 3 / 7 < hi <= 1
    # Symmetric in successes and failures.
    assert wilson(3, 7) == pytest.approx(tuple(1 - x for x in reversed(wilson(4, 7))))
    for bad in ((-1, 5), (6, 5), (0, -1)):
        with pytest.raises(ValueError):
            wilson(*bad)


def test_proportion_and_percentile() -> None:
    p = proportion(5, 10)
    assert p["k"] == 5 and p["n"] == 10 and p["rate"] == 0.5 and p["ci95"] == [0.2366, 0.7634]
    assert proportion(0, 0)["rate"] is None
    assert percentile([], 50) is None
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 99) == 5
    assert percentile(list(range(101)), 99) == 99
