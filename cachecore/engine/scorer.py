"""The calibrated match scorer: P(the trail answers the same need as the query) from the
evidence vector (``engine/evidence.py``), a logistic regression over standardised features.

Weights, the feature order and the cuts the defaults use are in ``match_scorer.json``, written
by the calibration study (``python -m research.match_calibration``) from the calibration split
only; the file records the data it was fitted on and the held-out figures.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from cachecore.engine.evidence import FEATURES
from cachecore.engine.pairfeatures import sigmoid

SCORER_PATH = Path(__file__).resolve().parent / "match_scorer.json"


@dataclass(frozen=True)
class MatchScorer:
    weights: tuple[float, ...]
    bias: float
    means: tuple[float, ...]
    scales: tuple[float, ...]
    features: tuple[str, ...] = FEATURES
    # Cuts chosen on the calibration split (the tenant defaults read them).
    prefetch_confidence: float = 0.8
    hint_confidence: float = 0.2
    # The first-stage cosine floor the bands were chosen with (the tenant default).
    similarity_threshold: float = 0.5
    version: str = ""
    meta: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: dict) -> MatchScorer:
        features = tuple(data["features"])
        if features != FEATURES:
            raise ValueError(f"match scorer is for features {features}, this code computes {FEATURES}")
        n = len(features)
        weights = tuple(float(w) for w in data["weights"])
        means = tuple(float(m) for m in data.get("means", [0.0] * n))
        scales = tuple(float(s) or 1.0 for s in data.get("scales", [1.0] * n))
        if not (len(weights) == len(means) == len(scales) == n):
            raise ValueError("match scorer weights, means and scales must each have one value per feature")
        return cls(weights=weights, bias=float(data["bias"]), means=means, scales=scales, features=features,
                   prefetch_confidence=float(data["prefetch_confidence"]),
                   hint_confidence=float(data["hint_confidence"]),
                   similarity_threshold=float(data.get("similarity_threshold", 0.5)),
                   version=str(data.get("version", "")), meta=dict(data.get("meta", {})))

    @classmethod
    def load(cls, path: str | Path = SCORER_PATH) -> MatchScorer:
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))

    def score(self, features: Sequence[float]) -> float:
        z = self.bias + sum(w * (x - m) / s for w, x, m, s in zip(self.weights, features, self.means, self.scales))
        return sigmoid(z)


@lru_cache(maxsize=1)
def default_match_scorer() -> MatchScorer:
    """The shipped scorer, loaded once per process."""
    return MatchScorer.load()
