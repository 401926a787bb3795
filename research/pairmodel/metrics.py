"""ROC AUC and TPR at a fixed FPR, in numpy (no sklearn)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """Mann-Whitney AUC with ties counted half."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    # average ranks for ties
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return float((ranks[y].sum() - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg)))


def tpr_at_fpr(labels: ArrayLike, scores: ArrayLike, fpr: float) -> float:
    """Largest TPR whose threshold keeps the false-positive rate at or below ``fpr``.

    Threshold t: predict positive when score > t; t is chosen among negative scores so that
    at most floor(fpr * n_neg) negatives score above it.
    """
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    neg = np.sort(s[~y])[::-1]
    pos = s[y]
    k = int(np.floor(fpr * len(neg)))  # negatives allowed above the threshold
    threshold = neg[k] if k < len(neg) else -np.inf
    return float((pos > threshold).mean())
