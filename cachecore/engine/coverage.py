"""Coverage: how well the cited sections cover this query — the best cosine between the
query and any chunk (sentence / short passage) of the valid cited sections."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cosine(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    va = np.asarray(a, dtype=np.float32)
    vb = np.asarray(b, dtype=np.float32)
    denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb) / denom if denom else 0.0


def max_cosine(query: Sequence[float] | np.ndarray, chunks: Sequence[Sequence[float]] | np.ndarray) -> float | None:
    """Max cosine of ``query`` against ``chunks``; None when there are no chunks (unknown)."""
    matrix = np.asarray(chunks, dtype=np.float32)
    if matrix.size == 0:
        return None
    q = np.asarray(query, dtype=np.float32)
    q = q / (np.linalg.norm(q) or 1.0)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    return float(np.max((matrix @ q) / norms))
