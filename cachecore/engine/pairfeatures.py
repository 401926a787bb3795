"""Pair features and the learned second-stage matcher: pure functions, no Django.

Recall's first stage finds the nearest trails by cosine of the normalised questions. Cosine of
all-MiniLM-L6-v2 alone cannot separate a reworded paraphrase from a near miss about something
else in the same documentation (both score 0.6-0.9). The second stage scores each first-stage
candidate from features of the two *normalised* questions (what recall has for a candidate:
``Candidate.query_normalised``) plus their cosine, with a small logistic regression trained
on labelled pairs (``python -m research.matcher_study``; weights in ``matcher_weights.json``).

``trigram_similarity`` reproduces PostgreSQL pg_trgm's ``similarity()`` so that lexical and
hybrid matching need no extra SQL.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cachecore.engine.polarity import negation_count, polarity_conflict, stem

WEIGHTS_PATH = Path(__file__).resolve().parent / "matcher_weights.json"

# Hybrid matching: this share of the cosine plus the rest of the trigram similarity, compared
# with the tenant's similarity_threshold. Chosen by the matcher study on the train split (best
# F0.5 over 0.5..0.9; the study writes it to matcher_weights.json as hybrid.cosine_weight).
HYBRID_COSINE_WEIGHT = 0.9

FEATURES = (
    "cosine",
    "trigram",
    "content_jaccard",
    "content_containment",
    "unshared_content",
    "negation_differs",
    "polarity_conflict",
    "numbers_differ",
    "identifiers_differ",
    "length_ratio",
)

# pg_trgm: a word is a run of alphanumeric characters; anything else separates words.
_TRGM_WORD = re.compile(r"[^\W_]+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUMBER = re.compile(r"(?<![a-z])\d+(?:\.\d+)*")
# Code-ish tokens: dotted names (os.path), calls (len()), snake_case, dunders, flags (--user),
# backticked spans, and words mixing letters and digits (utf8, py3).
# Linear time: a word alternative starts only where its word starts (the lookbehinds), and its
# quantifiers never give back (possessive), so no position of a long word is tried again; tried
# from every position, ``aaaa…`` took time quadratic in its length.
_IDENTIFIER = re.compile(
    r"`[^`]+`"
    r"|--?[a-z][a-z0-9-]*+"
    r"|(?<![a-z0-9_])[a-z_][a-z0-9_]*+(?:\.[a-z_][a-z0-9_]*+)++(?:\(\))?"
    r"|(?<![a-z0-9_])[a-z_][a-z0-9_]*+\(\)"
    r"|(?<![a-z0-9_])[a-z0-9]*+_[a-z0-9_]++"
    r"|(?<![a-z])[a-z]++\d++[a-z0-9]*+"
)
_NEGATIONS = {"not", "never", "cannot", "no"}
_STOPWORDS = frozenset(
    "a an the i my me to of in on for and or is are be do does did how what why when where which can could "
    "should would will with it its this that these those there you your we our from by as at if so use using "
    "get way any some about into than then there's what's it's i'm am was were been has have had just only "
    "python".split()
)


def trigrams(text: str) -> set[str]:
    """pg_trgm's trigram set: lower case, each word padded with two spaces in front and one
    behind, every 3-character window."""
    grams: set[str] = set()
    for word in _TRGM_WORD.findall(text.lower()):
        grams |= _word_trigrams(word)
    return grams


@lru_cache(maxsize=8192)
def _word_trigrams(word: str) -> frozenset[str]:
    """One word's trigrams (words recur from question to question: read each once, as ``stem``).
    An entry holds about 1.2 KB: 8,192 words about 10 MB a process."""
    padded = f"  {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def trigram_similarity(a: str, b: str) -> float:
    """Like PostgreSQL ``similarity(a, b)``: |A ∩ B| / |A ∪ B| of the trigram sets (0 when
    both are empty)."""
    return trigram_overlap(trigrams(a), trigrams(b))


def trigram_overlap(ta: set[str] | frozenset[str], tb: set[str] | frozenset[str]) -> float:
    """``trigram_similarity`` of two texts' trigram sets."""
    union = len(ta | tb)
    return len(ta & tb) / union if union else 0.0


def content_words(text: str) -> set[str]:
    """Stemmed words of ``text`` less stop words and negations."""
    return set(content_sequence(text))


def content_sequence(text: str) -> tuple[str, ...]:
    """``content_words`` in the order they first appear."""
    return tuple(dict.fromkeys(
        stem(t)
        for t in _WORD.findall(text.lower().replace("\u2019", "'"))
        if t not in _STOPWORDS and t not in _NEGATIONS and not t.endswith("n't")
    ))


def numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text.lower()))


def identifiers(text: str) -> set[str]:
    """Code-ish tokens (``os.path.join``, ``len()``, ``__init__``, ``--user``, ``utf8``),
    backticks and call parentheses stripped."""
    found = set()
    for token in _IDENTIFIER.findall(text.lower()):
        token = token.strip("`").removesuffix("()").strip()
        if token:
            found.add(token)
    return found


def sets_differ(x: AbstractSet[str], y: AbstractSet[str]) -> float:
    """1 when both mention some and the sets differ, 0.5 when only one mentions any, else 0."""
    if x and y:
        return 0.0 if x == y else 1.0
    return 0.5 if (x or y) else 0.0


def pair_features(a: str, b: str, cosine: float) -> list[float]:
    """The features of two normalised questions, in ``FEATURES`` order. Symmetric in a, b."""
    ca, cb = content_words(a), content_words(b)
    shared = len(ca & cb)
    union = len(ca | cb)
    la, lb = len(_WORD.findall(a.lower())), len(_WORD.findall(b.lower()))
    return [
        float(cosine),
        trigram_similarity(a, b),
        shared / union if union else 0.0,
        shared / min(len(ca), len(cb)) if ca and cb else 0.0,
        # Content words only one side has, saturating: a near miss usually adds its own topic.
        1.0 - math.exp(-(union - shared) / 4.0),
        1.0 if negation_count(a) % 2 != negation_count(b) % 2 else 0.0,
        1.0 if polarity_conflict(a, b) is not None else 0.0,
        sets_differ(numbers(a), numbers(b)),
        sets_differ(identifiers(a), identifiers(b)),
        min(la, lb) / max(la, lb) if la and lb else 0.0,
    ]


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True)
class PairScorer:
    """A logistic regression over ``pair_features``: P(same information need)."""

    weights: tuple[float, ...]
    bias: float
    threshold: float
    first_stage_threshold: float
    features: tuple[str, ...] = FEATURES
    version: str = ""

    @classmethod
    def from_dict(cls, data: dict) -> PairScorer:
        features = tuple(data["features"])
        if features != FEATURES:
            raise ValueError(f"matcher weights are for features {features}, this code computes {FEATURES}")
        weights = tuple(float(w) for w in data["weights"])
        if len(weights) != len(features):
            raise ValueError("matcher weights and features differ in length")
        return cls(
            weights=weights,
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
            first_stage_threshold=float(data["first_stage_threshold"]),
            features=features,
            version=str(data.get("version", "")),
        )

    @classmethod
    def load(cls, path: str | Path = WEIGHTS_PATH) -> PairScorer:
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))

    def score_features(self, features: list[float]) -> float:
        return sigmoid(self.bias + sum(w * x for w, x in zip(self.weights, features)))

    def score(self, query_a: str, query_b: str, cosine: float) -> float:
        """P(same need) of two normalised questions whose embeddings have this cosine."""
        return self.score_features(pair_features(query_a, query_b, cosine))

    def matches(self, query_a: str, query_b: str, cosine: float) -> bool:
        """The full two-stage decision: cosine at or above the first-stage threshold and a
        score at or above the decision threshold."""
        return cosine >= self.first_stage_threshold and self.score(query_a, query_b, cosine) >= self.threshold


_default: PairScorer | None = None


def default_scorer() -> PairScorer:
    """The scorer from the shipped ``matcher_weights.json``, loaded once per process."""
    global _default
    if _default is None:
        _default = PairScorer.load()
    return _default
