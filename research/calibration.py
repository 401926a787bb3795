"""Calibrating ``similarity_threshold`` and ``coverage_floor`` on a hand-labelled pair set.

Each pair is two questions labelled ``paraphrase`` (same information need, reworded),
``near_miss`` (same topic, different need) or ``unrelated`` (another topic of the same
documentation), plus a short passage answering the first question. Both questions are
embedded as recall embeds a query (normalised, then embedded); the passage is chunked and
embedded as sections' chunks are (raw text). For every pair:

* similarity — cosine of the two questions, what recall compares with the threshold;
* coverage — max cosine of the second question against the passage's chunks, what recall
  compares with the coverage floor.

Pure functions plus ``main()``; no Django. Run ``python -m research.calibration [path]``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cachecore.engine.coverage import max_cosine
from cachecore.engine.text import normalise_query, split_chunks

if TYPE_CHECKING:
    from cachecore.embedding import Embedder

PARAPHRASE = "paraphrase"
NEAR_MISS = "near_miss"
UNRELATED = "unrelated"
LABELS = (PARAPHRASE, NEAR_MISS, UNRELATED)

DEFAULT_PAIRS_PATH = Path(__file__).resolve().parent.parent / "tests" / "data" / "paraphrase_pairs.jsonl"

# Thresholds searched by choose_similarity_threshold: 0.50..0.95 step 0.01.
THRESHOLDS = tuple(round(0.50 + i / 100, 2) for i in range(46))
# F-beta with beta < 1 weighs precision over recall: a false hit (serving another question's
# sections) costs more than a miss (the agent just searches).
BETA = 0.5
# Share of paraphrases whose coverage must reach the floor.
COVERAGE_KEEP = 0.95


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    label: str
    passage: str


@dataclass(frozen=True)
class ScoredPair:
    pair: Pair
    similarity: float
    coverage: float | None

    @property
    def label(self) -> str:
        return self.pair.label


def load_pairs(path: str | Path = DEFAULT_PAIRS_PATH) -> list[Pair]:
    """Pairs from a JSONL file, one ``{"a", "b", "label", "passage"}`` object a line
    (blank lines skipped). Raises ValueError on a missing field or an unknown label."""
    pairs: list[Pair] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            try:
                pair = Pair(a=row["a"], b=row["b"], label=row["label"], passage=row["passage"])
            except KeyError as exc:
                raise ValueError(f"{path}:{lineno}: missing field {exc}")
            if pair.label not in LABELS:
                raise ValueError(f"{path}:{lineno}: unknown label {pair.label!r}")
            pairs.append(pair)
    return pairs


def score_pairs(pairs: Sequence[Pair], embedder: Embedder) -> list[ScoredPair]:
    """Similarity and coverage of every pair with the given embedder (see module docstring)."""
    if not pairs:
        return []
    queries = [normalise_query(p.a) for p in pairs] + [normalise_query(p.b) for p in pairs]
    vectors = embedder.embed(queries)
    va, vb = vectors[: len(pairs)], vectors[len(pairs) :]
    chunks = [split_chunks(p.passage) for p in pairs]
    flat = [c for cs in chunks for c in cs]
    chunk_vectors = embedder.embed(flat) if flat else []
    scored: list[ScoredPair] = []
    start = 0
    for i, pair in enumerate(pairs):
        n = len(chunks[i])
        coverage = max_cosine(vb[i], chunk_vectors[start : start + n]) if n else None
        start += n
        similarity = max_cosine(va[i], vb[i][None, :])
        scored.append(ScoredPair(pair=pair, similarity=float(similarity), coverage=coverage))
    return scored


def _f_beta(precision: float, recall: float, beta: float) -> float:
    b2 = beta * beta
    denom = b2 * precision + recall
    return (1 + b2) * precision * recall / denom if denom else 0.0


def sweep(scored: Sequence[ScoredPair], thresholds: Iterable[float] = THRESHOLDS) -> list[dict]:
    """For each threshold, what recall would do with the pairs: a hit is similarity >= threshold
    (as recall compares). Paraphrases are the positives, near misses and unrelated the negatives.

    Keys: threshold, paraphrase_hit_rate (= recall), near_miss_false_hit_rate,
    unrelated_false_hit_rate, precision (1.0 when nothing hits), recall, f1, f_beta (beta=0.5),
    and the raw counts tp, fp_near_miss, fp_unrelated."""
    by_label = {label: [s.similarity for s in scored if s.label == label] for label in LABELS}
    n_pos = len(by_label[PARAPHRASE])
    n_near = len(by_label[NEAR_MISS])
    n_unrel = len(by_label[UNRELATED])
    rows = []
    for threshold in thresholds:
        tp = sum(1 for v in by_label[PARAPHRASE] if v >= threshold)
        fp_near = sum(1 for v in by_label[NEAR_MISS] if v >= threshold)
        fp_unrel = sum(1 for v in by_label[UNRELATED] if v >= threshold)
        hits = tp + fp_near + fp_unrel
        precision = tp / hits if hits else 1.0
        recall = tp / n_pos if n_pos else 0.0
        rows.append({
            "threshold": threshold,
            "paraphrase_hit_rate": recall,
            "near_miss_false_hit_rate": fp_near / n_near if n_near else 0.0,
            "unrelated_false_hit_rate": fp_unrel / n_unrel if n_unrel else 0.0,
            "precision": precision,
            "recall": recall,
            "f1": _f_beta(precision, recall, 1.0),
            "f_beta": _f_beta(precision, recall, BETA),
            "tp": tp,
            "fp_near_miss": fp_near,
            "fp_unrelated": fp_unrel,
        })
    return rows


def choose_similarity_threshold(scored: Sequence[ScoredPair], thresholds: Iterable[float] = THRESHOLDS) -> float:
    """The threshold maximising F-beta (beta=0.5); ties go to the higher threshold."""
    best: tuple[float, float] | None = None
    for row in sweep(scored, thresholds):
        key = (round(row["f_beta"], 12), row["threshold"])
        if best is None or key >= best:
            best = key
    if best is None:
        raise ValueError("no thresholds to choose from")
    return round(best[1], 2)


def _floor_2dp(value: float) -> float:
    # The small epsilon keeps 0.43 (stored as 0.42999...) from flooring to 0.42.
    return math.floor(value * 100 + 1e-9) / 100


def choose_coverage_floor(scored: Sequence[ScoredPair], keep: float = COVERAGE_KEEP) -> float:
    """The highest 2-decimal floor that keeps at least ``keep`` of the paraphrases' coverage at
    or above it (recall downgrades coverage < floor): their 5th percentile, rounded down."""
    values = sorted(s.coverage for s in scored if s.label == PARAPHRASE and s.coverage is not None)
    if not values:
        raise ValueError("no paraphrase pairs with a coverage")
    allowed_below = math.floor(len(values) * (1 - keep) + 1e-9)
    return _floor_2dp(values[allowed_below])


def coverage_floor_effect(scored: Sequence[ScoredPair], floor: float) -> dict[str, dict[str, int]]:
    """Per label: how many pairs' coverage is under ``floor`` (a prefetch would be downgraded
    to a hint) and how many in all."""
    out: dict[str, dict[str, int]] = {}
    for label in LABELS:
        values = [s.coverage for s in scored if s.label == label and s.coverage is not None]
        out[label] = {"below": sum(1 for v in values if v < floor), "total": len(values)}
    return out


def _stats(values: Sequence[float]) -> str:
    if not values:
        return "n=0"
    ordered = sorted(values)
    mean = sum(ordered) / len(ordered)
    return f"n={len(ordered):3d} mean={mean:.3f} min={ordered[0]:.3f} max={ordered[-1]:.3f}"


def format_sweep(rows: Sequence[dict]) -> str:
    lines = [
        "thresh  para_hit  near_fh  unrel_fh  precision     f1  f0.5",
        "------  --------  -------  --------  ---------  -----  -----",
    ]
    for r in rows:
        lines.append(
            f"{r['threshold']:6.2f}  {r['paraphrase_hit_rate']:8.3f}  {r['near_miss_false_hit_rate']:7.3f}  "
            f"{r['unrelated_false_hit_rate']:8.3f}  {r['precision']:9.3f}  {r['f1']:5.3f}  {r['f_beta']:5.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from cachecore.embedding import Embedder

    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(args[0]) if args else DEFAULT_PAIRS_PATH
    pairs = load_pairs(path)
    scored = score_pairs(pairs, Embedder())
    print(f"{len(pairs)} pairs from {path}")
    for label in LABELS:
        print(f"  similarity {label:10s} {_stats([s.similarity for s in scored if s.label == label])}")
    for label in LABELS:
        cov = [s.coverage for s in scored if s.label == label and s.coverage is not None]
        print(f"  coverage   {label:10s} {_stats(cov)}")
    print()
    rows = sweep(scored)
    print(format_sweep(rows))
    threshold = choose_similarity_threshold(scored)
    chosen = next(r for r in rows if r["threshold"] == threshold)
    floor = choose_coverage_floor(scored)
    effect = coverage_floor_effect(scored, floor)
    print()
    print(f"similarity_threshold = {threshold:.2f} (max F{BETA}): paraphrase hit rate "
          f"{chosen['paraphrase_hit_rate']:.3f}, near-miss false hits {chosen['near_miss_false_hit_rate']:.3f}, "
          f"unrelated false hits {chosen['unrelated_false_hit_rate']:.3f}, precision {chosen['precision']:.3f}")
    print(f"coverage_floor = {floor:.2f} ({COVERAGE_KEEP:.0%} of paraphrases at or above): downgrades "
          + ", ".join(f"{label} {e['below']}/{e['total']}" for label, e in effect.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
