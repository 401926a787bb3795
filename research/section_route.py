"""A trail found only through its sections, whose question is unrelated to the query: how far
the section evidence may vouch for it (``decide.section_route_confidence``).

``python -m research.section_route anchor [--questions 4000] [--pairs 20000]``
    The cosine, under the shipped model, of random pairs of questions from the QQP slice's
    calibration side: two questions drawn at random are unrelated, so their upper percentiles
    say how close an unrelated question comes. The product's floor
    (``decide.SECTION_ROUTE_MIN_SIMILARITY``) is their 95th percentile, rounded to two decimals:
    a property of the model, not of any corpus's targets.

What the floor changes, per corpus and side:
``python -m research.decision_sweep --corpus faq|celery|flask --field section_route_min_similarity
--values 0,0.18,0.25``.

Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence

import numpy as np

from research.splits import CALIBRATION


def random_pair_cosines(vectors: np.ndarray, *, pairs: int, seed: int = 7) -> np.ndarray:
    """The cosines of ``pairs`` random pairs of distinct rows of ``vectors`` (unit rows)."""
    if len(vectors) < 2:
        raise ValueError("need at least two vectors")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(vectors), size=pairs)
    j = rng.integers(0, len(vectors) - 1, size=pairs)
    j = j + (j >= i)  # a random other row
    return np.einsum("ij,ij->i", vectors[i], vectors[j])


def anchor(*, questions: int = 4000, pairs: int = 20000, seed: int = 7) -> dict[str, float | int]:
    """Percentiles of the cosine of random QQP calibration question pairs (the shipped model)."""
    from cachecore.embedding import get_embedder
    from cachecore.engine.text import normalise_query
    from research.splits import qqp_side

    texts = sorted({q for p in qqp_side(CALIBRATION) for q in (p.a, p.b)})
    texts = random.Random(seed).sample(texts, min(questions, len(texts)))
    vectors = np.asarray(get_embedder().embed([normalise_query(t) for t in texts]), dtype=np.float64)
    cosines = random_pair_cosines(vectors, pairs=pairs, seed=seed)
    return {f"p{q}": round(float(np.percentile(cosines, q)), 4) for q in (50, 90, 95, 99)} | {
        "questions": len(texts), "pairs": pairs}


def main(argv: Sequence[str] | None = None) -> int:
    import django

    parser = argparse.ArgumentParser(prog="python -m research.section_route", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("anchor")
    a.add_argument("--questions", type=int, default=4000)
    a.add_argument("--pairs", type=int, default=20000)
    args = parser.parse_args(argv)
    django.setup()
    print(anchor(questions=args.questions, pairs=args.pairs))
    return 0


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(main())
