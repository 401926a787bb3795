"""The calibrated match scorer: P(the trail answers the same need as the query) from the
evidence vector (``engine/evidence.py``), a logistic regression over standardised features.

Weights, the feature order and the cuts the defaults use are in ``match_scorer.json``, written
by the calibration study (``python -m research.match_calibration``) from the calibration split
only; the file records the data it was fitted on and the held-out figures.

Two regimes, one rule (``scorer_for``): a candidate whose cited text restates the trail's own
question (the question covered at cosine ≥ ``RESTATES_QUESTION``: an FAQ entry, a list of
questions) is scored by ``question_scorer.json``, on the question evidence alone, since the
section evidence (coverage, the rival margin) then only measures the question match again; every
other candidate by ``match_scorer.json``. Each file carries the cuts it was calibrated at; the
question scorer is mapped onto the document scorer's (``MatchScorer.aligned_to``: a linear map of
its logit that sends its hint and prefetch cuts to the document scorer's), so that the tenant's one
pair of cuts means the same for both regimes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from cachecore.engine.evidence import FEATURES, UNKNOWN_UNLESS
from cachecore.engine.pairfeatures import sigmoid

SCORER_PATH = Path(__file__).resolve().parent / "match_scorer.json"
QUESTION_SCORER_PATH = Path(__file__).resolve().parent / "question_scorer.json"
# The trail's question covered by its cited text at least this well: the text restates it.
RESTATES_QUESTION = 0.9


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
        unknown = [f for f in features if f not in FEATURES]
        if unknown or len(set(features)) != len(features):
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

    def aligned_to(self, other: MatchScorer) -> MatchScorer:
        """This scorer with its logit mapped linearly so that its own hint and prefetch cuts land
        on ``other``'s: the same ranking, and ``other``'s cuts mean for it what its own meant."""
        if (self.hint_confidence, self.prefetch_confidence) == (other.hint_confidence, other.prefetch_confidence):
            return self
        lo, hi = _logit(self.hint_confidence), _logit(self.prefetch_confidence)
        if hi <= lo:
            raise ValueError("a scorer's prefetch cut must be above its hint cut")
        a = (_logit(other.prefetch_confidence) - _logit(other.hint_confidence)) / (hi - lo)
        b = _logit(other.prefetch_confidence) - a * hi
        return MatchScorer(
            weights=tuple(a * w for w in self.weights), bias=a * self.bias + b, means=self.means,
            scales=self.scales, features=self.features, prefetch_confidence=other.prefetch_confidence,
            hint_confidence=other.hint_confidence, similarity_threshold=self.similarity_threshold,
            version=f"{self.version}@{other.version}", meta=self.meta)

    def score(self, features: Sequence[float]) -> float:
        """P(same need) from the evidence vector in ``FEATURES`` order (a scorer of fewer
        features reads its own; evidence its flag marks unknown, ``UNKNOWN_UNLESS``, at its
        mean)."""
        values = features if self.features == FEATURES else [features[FEATURES.index(f)] for f in self.features]
        z = self.bias
        for w, x, m, s, flag in zip(self.weights, values, self.means, self.scales, self._flags):
            # Unknown evidence (its flag 0) is read at its mean: neither for nor against.
            if flag is not None and not features[flag]:
                x = m
            z += w * (x - m) / s
        return sigmoid(z)

    @cached_property
    def _flags(self) -> tuple[int | None, ...]:
        """For each of this scorer's features, the position in ``FEATURES`` of the flag that
        says whether it is known (``UNKNOWN_UNLESS``), else None."""
        return tuple(FEATURES.index(UNKNOWN_UNLESS[f]) if f in UNKNOWN_UNLESS else None for f in self.features)


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


@lru_cache(maxsize=1)
def default_match_scorer() -> MatchScorer:
    """The shipped scorer, loaded once per process."""
    return MatchScorer.load()


@lru_cache(maxsize=1)
def default_question_scorer() -> MatchScorer:
    """The shipped scorer of candidates whose cited text restates their question, aligned to the
    shipped document scorer's cuts."""
    return MatchScorer.load(QUESTION_SCORER_PATH).aligned_to(default_match_scorer())


def scorer_for(trail_coverage: float | None, *, document: MatchScorer, question: MatchScorer | None,
               rivals_known: bool = True) -> MatchScorer:
    """The scorer of a candidate: ``question`` when its cited text restates the trail's question
    (``trail_coverage`` ≥ ``RESTATES_QUESTION``) or when no rival is known to weigh its cited
    text against (``rivals_known`` false: its chunks pending, a large upsert still being
    embedded, or its sections' coverage unknown, as for a resolver's sections), and there is
    one, else ``document``. The document scorer leans on the section
    evidence; without it, the question evidence is all there is, and the question scorer is the
    one fitted on that alone."""
    if question is not None and (not rivals_known
                                 or (trail_coverage is not None and trail_coverage >= RESTATES_QUESTION)):
        return question
    return document
