"""The built-in, offline answer verifier (no LLM).

Rule 1 — non-answers: an answer that says or implies the sources do not answer the question
("the documents I found don't cover this", "I couldn't find…", "not mentioned") is
unsupported, even when it lists true facts. Detected by patterns *and* by similarity of each
sentence to non-answer exemplars, so rewordings the patterns miss are still caught.
Rule 2 — support: most answer sentences must be supported by the cited sections: the
sentence's best cosine against the cited chunks is at or above a calibrated floor.

Pure: the caller passes an ``embed`` function and the cited chunks' vectors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

# Calibrated on tests/data/verifier_answers.jsonl (tests/cachecore/test_verifier.py pins them).
SUPPORT_FLOOR = 0.55
MIN_SUPPORTED_RATIO = 0.6
NON_ANSWER_SIMILARITY = 0.70

NON_ANSWER_PATTERNS = [
    r"\b(?:couldn'?t|could not|can'?t|cannot|was(?:n'?t| not) able to|unable to|did(?:n'?t| not)|failed to)"
    r" (?:find|locate|see|determine|identify|confirm)\b",
    r"\b(?:no|not any) (?:information|mention|details?|documentation|answer|reference)s?\b"
    r"(?: (?:about|on|regarding|for|of|to))?",
    r"\bnot (?:mentioned|covered|addressed|described|documented|discussed|specified|stated|explained)\b",
    r"\b(?:does|do|did)(?:n'?t| not) (?:cover|mention|address|say|describe|discuss|explain|specify|contain|answer"
    r"|include|provide|document)\b",
    r"\b(?:is|are|was|were)(?:n'?t| not) (?:covered|mentioned|addressed|documented|described|available|included)\b",
    r"\bnothing (?:in|about|on|regarding)\b.*\b(?:documents?|sources?|sections?|docs|documentation|context)\b",
    r"\b(?:beyond|outside) (?:the )?(?:scope|provided|given|available)\b",
    r"\bi (?:don'?t|do not) (?:know|have (?:enough )?information)\b",
    r"\b(?:insufficient|not enough) (?:information|context|detail)\b",
    r"\bunclear from the (?:documents?|sources?|sections?|docs|documentation|context)\b",
    r"\bno (?:relevant|matching) (?:results?|sections?|documents?|sources?)\b",
]
_PATTERNS = [re.compile(p, re.IGNORECASE) for p in NON_ANSWER_PATTERNS]

NON_ANSWER_EXEMPLARS = [
    "The documents I found don't cover this.",
    "I couldn't find anything about this in the documentation.",
    "The provided sources do not answer this question.",
    "This is not mentioned in the sections I read.",
    "I was unable to locate information on that topic.",
    "The documentation doesn't say.",
    "There is no information about this in the available context.",
    "I don't know based on the given documents.",
    "None of the search results address this question.",
    "The sources are silent on this point.",
    "Sorry, I could not determine the answer from the docs.",
    "That question is outside the scope of the documents provided.",
]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Answer sentences worth checking (at least three words)."""
    return [s.strip() for s in _SENTENCE.split(text) if len(s.split()) >= 3]


def non_answer_pattern(text: str) -> str | None:
    for pattern in _PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reasons: list[str] = field(default_factory=list)
    non_answer: bool = False
    supported_ratio: float | None = None
    sentence_scores: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


class Verifier:
    """Holds the exemplar vectors; ``check`` runs both rules on one answer."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], np.ndarray],
        *,
        support_floor: float = SUPPORT_FLOOR,
        min_supported_ratio: float = MIN_SUPPORTED_RATIO,
        non_answer_similarity: float = NON_ANSWER_SIMILARITY,
    ) -> None:
        self._embed = embed
        self.support_floor = support_floor
        self.min_supported_ratio = min_supported_ratio
        self.non_answer_similarity = non_answer_similarity
        self._exemplars = np.asarray(embed(NON_ANSWER_EXEMPLARS), dtype=np.float32)

    def check(self, answer: str, chunk_vectors: np.ndarray | Sequence[Sequence[float]]) -> Verdict:
        sentences = split_sentences(answer) or ([answer.strip()] if answer.strip() else [])
        if not sentences:
            return Verdict(False, ["empty answer"])
        vectors = np.asarray(self._embed(sentences), dtype=np.float32)
        reasons: list[str] = []
        pattern = non_answer_pattern(answer)
        exemplar_scores = vectors @ self._exemplars.T
        closest = float(exemplar_scores.max())
        non_answer = pattern is not None or closest >= self.non_answer_similarity
        if pattern is not None:
            reasons.append(f"says the sources do not answer: {pattern!r}")
        elif non_answer:
            worst = sentences[int(exemplar_scores.max(axis=1).argmax())]
            reasons.append(f"reads like a non-answer ({closest:.2f}): {worst!r}")
        chunks = np.asarray(chunk_vectors, dtype=np.float32)
        if chunks.size == 0:
            scores = [0.0] * len(sentences)
        else:
            scores = [float(s) for s in (vectors @ chunks.T).max(axis=1)]
        supported = sum(1 for s in scores if s >= self.support_floor)
        ratio = supported / len(scores)
        if ratio < self.min_supported_ratio:
            reasons.append(
                f"{len(scores) - supported} of {len(scores)} sentences not supported by the cited sections"
            )
        passed = not non_answer and ratio >= self.min_supported_ratio
        return Verdict(passed, reasons, non_answer, round(ratio, 4), [round(s, 4) for s in scores])
