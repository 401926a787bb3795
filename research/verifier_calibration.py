"""Calibrating the built-in verifier on a hand-labelled answer set.

Each item of ``tests/data/verifier_answers.jsonl`` is a question, the documentation sections
an agent cited, the agent's answer and a label: ``good`` (grounded in the sections, should be
admitted), ``non_answer`` (says or implies the sections do not answer) or ``unsupported``
(confident, but its sentences are not backed by the sections). Sections are chunked and
embedded as admission does (``split_chunks`` of each cited section's text).

The positive class is "should be admitted" (label good): precision = good among passed /
passed, recall = good passed / good. Precision matters more: a wrong trail admitted is served
to every later agent asking the same question, a good one rejected only costs a re-search.

To guard against overfitting, items are split deterministically into a calibration and a
held-out half by the first byte of the sha256 of the answer; the grid is searched on the
calibration half only and both halves are reported.

Pure functions plus ``main()``; no Django. Run ``python -m research.verifier_calibration [path] [--chunk-words N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cachecore.engine import verifier as verifier_module
from cachecore.engine.text import split_chunks
from cachecore.engine.verifier import Evidence, Verdict, Verifier

if TYPE_CHECKING:
    from cachecore.embedding import Embedder

GOOD = "good"
NON_ANSWER = "non_answer"
UNSUPPORTED = "unsupported"
LABELS = (GOOD, NON_ANSWER, UNSUPPORTED)
CALIBRATION = "calibration"
HELD_OUT = "held_out"

DEFAULT_ANSWERS_PATH = Path(__file__).resolve().parent.parent / "tests" / "data" / "verifier_answers.jsonl"

# Rule 2's constants, searched on the calibration half (5 * 3 * 7 = 105 points) with rule 1's
# constants as they are: the best point has the highest F-beta.
SUPPORT_GRID: dict[str, tuple[float, ...]] = {
    "support_floor": (0.35, 0.40, 0.45, 0.50, 0.55),
    "min_supported_ratio": (0.5, 0.6, 0.75),
    "answer_support_floor": (0.0, 0.60, 0.64, 0.66, 0.68, 0.70, 0.72),
}
# Rule 1's similarity constants, searched on the calibration half by what similarity alone
# (patterns aside) does: most non-answers caught with no good answer flagged, even at a
# threshold SIMILARITY_SAFETY lower (6 * 4 = 24 points).
SIMILARITY_GRID: dict[str, tuple[float, ...]] = {
    "non_answer_similarity": (0.55, 0.60, 0.65, 0.70, 0.75, 0.80),
    "non_answer_margin": (0.0, 0.05, 0.10, 0.15),
}
SIMILARITY_SAFETY = 0.05
# F-beta with beta < 1 weighs precision over recall.
BETA = 0.5


@dataclass(frozen=True)
class Item:
    question: str
    sections: tuple[str, ...]
    answer: str
    label: str

    @property
    def half(self) -> str:
        """Deterministic split by the answer text: calibration or held_out."""
        return CALIBRATION if hashlib.sha256(self.answer.encode("utf-8")).digest()[0] % 2 == 0 else HELD_OUT


def load_items(path: str | Path = DEFAULT_ANSWERS_PATH) -> list[Item]:
    """Items from a JSONL file, one ``{"question", "sections", "answer", "label"}`` object a
    line (blank lines skipped). Raises ValueError on a missing field, an unknown label, or
    an item without sections."""
    items: list[Item] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            try:
                item = Item(row["question"], tuple(row["sections"]), row["answer"], row["label"])
            except KeyError as exc:
                raise ValueError(f"{path}:{lineno}: missing field {exc}")
            if item.label not in LABELS:
                raise ValueError(f"{path}:{lineno}: unknown label {item.label!r}")
            if not item.sections or not all(s.strip() for s in item.sections):
                raise ValueError(f"{path}:{lineno}: an item needs non-empty sections")
            items.append(item)
    return items


class CachedEmbed:
    """An ``embed`` function that embeds each distinct text once (calibration embeds the
    same sections and answers again and again)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self._embedder.embed(missing)):
                self._cache[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack([self._cache[t] for t in texts])


# Admission's chunking (split_chunks' default of at most 60 words a chunk).
CHUNK_WORDS = 60


def chunk_vectors(item: Item, embed: CachedEmbed, max_words: int = CHUNK_WORDS) -> np.ndarray:
    """The cited sections' chunk vectors, as admission computes them from section text
    (``max_words=1`` gives one chunk per sentence, to see what finer chunks would do)."""
    return embed([chunk for section in item.sections for chunk in split_chunks(section, max_words=max_words)])


@dataclass(frozen=True)
class Measured:
    item: Item
    evidence: Evidence | None


def measure_items(
    items: Sequence[Item], verifier: Verifier, embed: CachedEmbed, max_words: int = CHUNK_WORDS
) -> list[Measured]:
    return [Measured(item, verifier.measure(item.answer, chunk_vectors(item, embed, max_words))) for item in items]


@dataclass(frozen=True)
class Metrics:
    n: int
    counts: dict[str, int]  # items per label
    passed: dict[str, int]  # passed per label
    verdicts: list[Verdict] = field(repr=False, default_factory=list)

    @property
    def n_passed(self) -> int:
        return sum(self.passed.values())

    @property
    def precision(self) -> float:
        """Good among passed (1.0 when nothing passed)."""
        return self.passed[GOOD] / self.n_passed if self.n_passed else 1.0

    @property
    def recall(self) -> float:
        return self.passed[GOOD] / self.counts[GOOD] if self.counts[GOOD] else 0.0

    @property
    def f_beta(self) -> float:
        p, r, b2 = self.precision, self.recall, BETA * BETA
        return (1 + b2) * p * r / (b2 * p + r) if p + r else 0.0

    def rejection_rate(self, label: str) -> float:
        return 1 - self.passed[label] / self.counts[label] if self.counts[label] else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "counts": dict(self.counts),
            "passed": dict(self.passed),
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f_beta": round(self.f_beta, 4),
            "rejection_rate": {label: round(self.rejection_rate(label), 4) for label in LABELS},
        }


def evaluate(measured: Sequence[Measured], verifier: Verifier) -> Metrics:
    """Verdicts of ``verifier`` (its current thresholds) on already measured items."""
    counts = dict.fromkeys(LABELS, 0)
    passed = dict.fromkeys(LABELS, 0)
    verdicts: list[Verdict] = []
    for m in measured:
        verdict = verifier.decide(m.evidence)
        verdicts.append(verdict)
        counts[m.item.label] += 1
        passed[m.item.label] += int(verdict.passed)
    return Metrics(len(measured), counts, passed, verdicts)


def halves(measured: Sequence[Measured]) -> dict[str, list[Measured]]:
    return {
        CALIBRATION: [m for m in measured if m.item.half == CALIBRATION],
        HELD_OUT: [m for m in measured if m.item.half == HELD_OUT],
        "all": list(measured),
    }


def current_constants() -> dict[str, float]:
    return {
        "support_floor": verifier_module.SUPPORT_FLOOR,
        "min_supported_ratio": verifier_module.MIN_SUPPORTED_RATIO,
        "answer_support_floor": verifier_module.ANSWER_SUPPORT_FLOOR,
        "non_answer_similarity": verifier_module.NON_ANSWER_SIMILARITY,
        "non_answer_margin": verifier_module.NON_ANSWER_MARGIN,
    }


def with_constants(verifier: Verifier, constants: dict[str, float]) -> Verifier:
    for name, value in constants.items():
        setattr(verifier, name, value)
    return verifier


def _points(grid: dict[str, Iterable[float]]) -> list[dict[str, float]]:
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(tuple(grid[n]) for n in names))]


def support_grid(
    measured: Sequence[Measured], verifier: Verifier, grid: dict[str, Iterable[float]] = SUPPORT_GRID
) -> list[tuple[dict[str, float], Metrics]]:
    """Every grid point's metrics on ``measured``, best first: higher F-beta, then higher
    precision, then higher recall (ties keep grid order). Leaves ``verifier`` as it was."""
    saved = {name: getattr(verifier, name) for name in grid}
    try:
        results = [(point, evaluate(measured, with_constants(verifier, point))) for point in _points(grid)]
    finally:
        with_constants(verifier, saved)
    return sorted(
        results,
        key=lambda e: (round(e[1].f_beta, 6), round(e[1].precision, 6), round(e[1].recall, 6)),
        reverse=True,
    )


def similarity_flags(evidence: Evidence | None, threshold: float, margin: float) -> bool:
    """Whether the exemplar similarity alone (patterns aside) calls the answer a non-answer,
    as ``Verifier.decide`` does."""
    if evidence is None:
        return False
    eligible = evidence.to_non_answer - evidence.to_answer >= margin
    return bool((evidence.to_non_answer[eligible] >= threshold).any())


@dataclass(frozen=True)
class SimilarityResult:
    constants: dict[str, float]
    flagged: dict[str, int]  # per label: answers flagged by similarity alone
    counts: dict[str, int]
    good_flagged_below: int  # good answers flagged at the threshold minus SIMILARITY_SAFETY

    def rate(self, label: str) -> float:
        return self.flagged[label] / self.counts[label] if self.counts[label] else 0.0


def similarity_result(measured: Sequence[Measured], constants: dict[str, float]) -> SimilarityResult:
    threshold, margin = constants["non_answer_similarity"], constants["non_answer_margin"]
    counts = dict.fromkeys(LABELS, 0)
    flagged = dict.fromkeys(LABELS, 0)
    below = 0
    for m in measured:
        counts[m.item.label] += 1
        flagged[m.item.label] += int(similarity_flags(m.evidence, threshold, margin))
        if m.item.label == GOOD:
            below += int(similarity_flags(m.evidence, threshold - SIMILARITY_SAFETY, margin))
    return SimilarityResult(constants, flagged, counts, below)


def similarity_grid(
    measured: Sequence[Measured], grid: dict[str, Iterable[float]] = SIMILARITY_GRID
) -> list[SimilarityResult]:
    """Every point's similarity-alone flags, best first: points that flag no good answer even
    SIMILARITY_SAFETY below their threshold, then most non-answers flagged, then fewest good
    answers flagged, then the higher threshold."""
    results = [similarity_result(measured, point) for point in _points(grid)]
    return sorted(
        results,
        key=lambda r: (
            r.good_flagged_below == 0,
            r.flagged[NON_ANSWER],
            -r.flagged[GOOD],
            r.constants["non_answer_similarity"],
        ),
        reverse=True,
    )


def _pattern(m: Measured) -> bool:
    return m.evidence is not None and m.evidence.pattern is not None


def _line(name: str, metrics: Metrics) -> str:
    rej = "  ".join(f"{label} {metrics.rejection_rate(label):.3f}" for label in LABELS)
    return (
        f"  {name:<12} n={metrics.n:<4} precision {metrics.precision:.3f}  recall {metrics.recall:.3f}  "
        f"F0.5 {metrics.f_beta:.3f}  passed {metrics.n_passed:<3} | rejected: {rej}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    from cachecore.embedding import Embedder

    parser = argparse.ArgumentParser(
        prog="python -m research.verifier_calibration", description="Calibrate the built-in verifier."
    )
    parser.add_argument("path", nargs="?", default=str(DEFAULT_ANSWERS_PATH), help="the labelled answer set (JSONL)")
    parser.add_argument(
        "--chunk-words", type=int, default=CHUNK_WORDS,
        help=f"chunk the sections into at most this many words (admission uses {CHUNK_WORDS}; 1 = per sentence)",
    )
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    items = load_items(args.path)
    embed = CachedEmbed(Embedder())
    verifier = Verifier(embed)
    measured = measure_items(items, verifier, embed, args.chunk_words)
    parts = halves(measured)

    print(f"{len(items)} items from {args.path}; sections chunked at {args.chunk_words} words")
    for name, part in parts.items():
        counts = {label: sum(1 for m in part if m.item.label == label) for label in LABELS}
        print(f"  {name:<12} {counts}")

    print("\nCurrent constants:", current_constants())
    for name, part in parts.items():
        print(_line(name, evaluate(part, verifier)))

    print("\nNon-answers caught by the patterns / by similarity alone (patterns aside) / by neither;"
          " good and unsupported answers flagged by either")
    threshold, margin = verifier.non_answer_similarity, verifier.non_answer_margin
    for name, part in parts.items():
        nons = [m for m in part if m.item.label == NON_ANSWER]
        by_pattern = sum(1 for m in nons if _pattern(m))
        by_similarity = sum(1 for m in nons if similarity_flags(m.evidence, threshold, margin))
        neither = sum(1 for m in nons if not _pattern(m) and not similarity_flags(m.evidence, threshold, margin))
        others = {
            label: sum(
                1 for m in part
                if m.item.label == label and (_pattern(m) or similarity_flags(m.evidence, threshold, margin))
            )
            for label in (GOOD, UNSUPPORTED)
        }
        print(f"  {name:<12} {by_pattern}/{len(nons)}  {by_similarity}/{len(nons)}  {neither}/{len(nons)}; "
              f"good flagged {others[GOOD]}, unsupported flagged {others[UNSUPPORTED]}")

    print(f"\nRule 2 grid on the calibration half ({len(_points(SUPPORT_GRID))} points), best 10 by F{BETA}:")
    for constants, metrics in support_grid(parts[CALIBRATION], verifier)[:10]:
        held = evaluate(parts[HELD_OUT], with_constants(verifier, constants))
        print(
            "  " + " ".join(f"{k}={v:g}" for k, v in constants.items())
            + f" | cal P {metrics.precision:.3f} R {metrics.recall:.3f} F0.5 {metrics.f_beta:.3f}"
            + f" | held P {held.precision:.3f} R {held.recall:.3f}"
        )
    with_constants(verifier, current_constants())

    print(f"\nRule 1 similarity grid on the calibration half ({len(_points(SIMILARITY_GRID))} points), best 5"
          f" (no good answer flagged {SIMILARITY_SAFETY} below the threshold):")
    for result in similarity_grid(parts[CALIBRATION])[:5]:
        held = similarity_result(parts[HELD_OUT], result.constants)
        print(
            "  " + " ".join(f"{k}={v:g}" for k, v in result.constants.items())
            + f" | cal non-answers {result.flagged[NON_ANSWER]}/{result.counts[NON_ANSWER]}"
            + f" good {result.flagged[GOOD]} (below: {result.good_flagged_below})"
            + f" | held non-answers {held.flagged[NON_ANSWER]}/{held.counts[NON_ANSWER]} good {held.flagged[GOOD]}"
        )

    print("\nItems the current constants get wrong (all halves):")
    for m in measured:
        verdict = verifier.decide(m.evidence)
        if verdict.passed != (m.item.label == GOOD):
            what = "passed" if verdict.passed else "rejected"
            print(f"  [{m.item.half[:4]}] {m.item.label:<11} {what}: {m.item.answer[:100]!r}")
            if not verdict.passed:
                print(f"      {'; '.join(verdict.reasons)[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
