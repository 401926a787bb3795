"""The embedding probe's pure parts: the AUC, the positives kept at a share of negatives, the
fit, and the figures of one side on a hand-made corpus (no model, no database)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from research.embedding_probe import all_texts, kept_at, logistic_fit, roc_auc, side_figures


def _pairwise_auc(pos: list[float], neg: list[float]) -> float:
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_roc_auc_is_the_share_of_ordered_pairs_ties_counting_half() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        pos = list(rng.integers(0, 6, size=rng.integers(1, 12)).astype(float))
        neg = list(rng.integers(0, 6, size=rng.integers(1, 12)).astype(float))
        assert roc_auc(pos, neg) == pytest.approx(_pairwise_auc(pos, neg))
    assert roc_auc([3.0], [1.0, 2.0]) == 1.0
    assert roc_auc([1.0], [1.0]) == 0.5
    with pytest.raises(ValueError):
        roc_auc([], [1.0])


def test_kept_at_passes_at_most_the_share_of_negatives() -> None:
    negatives = [float(i) for i in range(40)]   # 5 % of 40: two may pass (38, 39)
    assert kept_at([36.5, 37.5, 38.5, 40.0], negatives) == 3   # strictly above 37
    assert kept_at([37.0], negatives) == 0
    # Fewer than 20 negatives: none may pass, the cut is the highest one.
    assert kept_at([5.0, 9.0, 9.5], [1.0, 9.0], share=0.05) == 1
    # A share that lets every negative pass keeps every positive.
    assert kept_at([-100.0], [1.0, 2.0], share=1.0) == 1


def test_logistic_fit_orders_a_separable_feature() -> None:
    x = np.array([[-2.0], [-1.0], [-0.5], [0.5], [1.0], [2.0]])
    y = np.array([0, 0, 0, 1, 1, 1], dtype=float)
    w = logistic_fit(x, y)
    assert w[1] > 0
    scores = np.c_[np.ones(len(x)), x] @ w
    assert roc_auc(scores[y == 1], scores[y == 0]) == 1.0


def _unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=float)
    return v / np.linalg.norm(v)


def test_side_figures_on_a_hand_made_corpus() -> None:
    corpus = {
        "items": [
            {"id": "a", "side": "held_out", "question": "q", "same_need": ["r"],
             "close": [{"question": "c", "answered": False}, {"question": "d", "answered": True}],
             "gold": ["s1"]},
            {"id": "b", "side": "calibration", "question": "x", "same_need": [], "close": [], "gold": ["s2"]},
        ],
        "sections": {"s1": ["k1", "k2"], "s2": ["k3"]},
    }
    vectors = {"q": _unit(1, 0, 0), "r": _unit(1, 1, 0), "c": _unit(0, 1, 0), "d": _unit(1, 0, 0),
               "x": _unit(0, 0, 1), "k1": _unit(1, 0, 0), "k2": _unit(0, 1, 1), "k3": _unit(0, 1, 0.2)}
    assert set(all_texts({"one": corpus})) == set(vectors)
    f = side_figures(vectors, corpus, "held_out")
    # One same-need pair (q, r); the answered close question "d" is left out.
    assert f.pair_pos == pytest.approx([float(vectors["q"] @ vectors["r"])])
    assert f.pair_neg == pytest.approx([float(vectors["q"] @ vectors["c"]), float(vectors["r"] @ vectors["c"])])
    covered_r = max(float(vectors["r"] @ vectors["k1"]), float(vectors["r"] @ vectors["k2"]))
    rival_r = float(vectors["r"] @ vectors["k3"])
    assert f.section_pos == pytest.approx([covered_r])
    assert f.rows[0] == pytest.approx([1, float(vectors["r"] @ vectors["q"]), covered_r, covered_r - rival_r])
    # "c" is covered better by s2 (k3 = c) than by its own gold section.
    assert f.rows[1][0] == 0 and f.rows[1][3] < 0
    assert (f.first, f.rewordings) == (1, 1)
    assert len(side_figures(vectors, corpus, None).rows) == 2
