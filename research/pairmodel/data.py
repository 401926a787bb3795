"""Labelled question pairs for the pair scorer, by side (see ``research/splits.py``).

Label 1 = same need (duplicate / paraphrase), 0 = different need.

- QQP: ``qqp_pairs()`` with their side.
- Python FAQ (``tests/data/eval/python_faq.jsonl``): positives (question, paraphrase),
  negatives (question, distinct). If ``python_faq_hard.jsonl`` exists: positives also
  (question, paraphrases_extra); negatives (question, twin) for twins with
  ``answered_by_source: false`` (twins the source does answer are left out: ambiguous).
  For the held-out report, an entry that has such twins uses them as its negatives instead
  of its ``distinct`` questions (the brief's definition); for training both are used.
- Hand-written pairs (``tests/data/paraphrase_pairs.jsonl``, ``tests/data/matcher_pairs.jsonl``):
  no split exists for them, so they are used for training only and never reported on.
- A documentation corpus's items (``research.corpora``: ``faq``, ``celery``, ``flask``), by
  ``hard_set()``: every two of an item's same-need questions (its question and its rewordings)
  are a positive; each of them against each close-but-different question that its gold section
  does not answer is a negative (close questions the gold section answers are left out).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from research.splits import CALIBRATION, HELD_OUT, REPO_ROOT, faq_side, qqp_pairs

FAQ = REPO_ROOT / "tests" / "data" / "eval" / "python_faq.jsonl"
FAQ_HARD = REPO_ROOT / "tests" / "data" / "eval" / "python_faq_hard.jsonl"
HANDWRITTEN = [
    REPO_ROOT / "tests" / "data" / "paraphrase_pairs.jsonl",
    REPO_ROOT / "tests" / "data" / "matcher_pairs.jsonl",
]


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    label: int
    source: str


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _dev_bucket(group: str) -> bool:
    """A fixed ~8 % of QQP *calibration* groups kept out of training to monitor it / pick the head."""
    return int(hashlib.sha256(("dev:" + group).encode()).hexdigest()[:8], 16) % 100 < 8


def qqp(side: str, *, dev: bool | None = None) -> list[Pair]:
    """QQP pairs on ``side``; for calibration, ``dev`` True/False selects the dev slice / the rest."""
    out = []
    for p in qqp_pairs():
        if p.side != side:
            continue
        if side == CALIBRATION and dev is not None and _dev_bucket(p.group) != dev:
            continue
        out.append(Pair(p.a, p.b, int(p.duplicate), "qqp"))
    return out


def faq(side: str, *, report: bool = False) -> list[Pair]:
    hard = {r["id"]: r for r in _jsonl(FAQ_HARD)} if FAQ_HARD.is_file() else {}
    out = []
    for entry in _jsonl(FAQ):
        if faq_side(entry["id"]) != side:
            continue
        q = entry["question"]
        h = hard.get(entry["id"], {})
        for p in entry.get("paraphrases", []):
            out.append(Pair(q, p, 1, "faq:paraphrase"))
        for p in h.get("paraphrases_extra", []):
            out.append(Pair(q, p, 1, "faq_hard:paraphrase_extra"))
        twins = [t["question"] for t in h.get("twins", []) if t.get("answered_by_source") is False]
        for t in twins:
            out.append(Pair(q, t, 0, "faq_hard:twin"))
        if not (report and twins):
            for d in entry.get("distinct", []):
                out.append(Pair(q, d, 0, "faq:distinct"))
    return out


def handwritten() -> list[Pair]:
    out = []
    for path in HANDWRITTEN:
        for r in _jsonl(path):
            out.append(Pair(r["a"], r["b"], int(r["label"] == "paraphrase"), f"handwritten:{path.name}:{r['label']}"))
    return out


def hard_set(corpus: str, side: str | None = None) -> list[Pair]:
    """Same-need / close-but-different question pairs of ``corpus``'s items on ``side`` (all
    items when ``side`` is None)."""
    from research.corpora import CORPORA

    out = []
    for item in CORPORA[corpus].items():
        if side is not None and item.side != side:
            continue
        same = [item.question, *item.same_need]
        for i, a in enumerate(same):
            for b in same[i + 1:]:
                out.append(Pair(a, b, 1, f"{corpus}:same_need"))
        for close in item.close:
            if close.answered_by_source:
                continue
            for a in same:
                out.append(Pair(a, close.question, 0, f"{corpus}:close:{close.kind}"))
    return out


def counts(pairs: list[Pair]) -> dict:
    by: dict[str, dict[str, int]] = {}
    for p in pairs:
        src = p.source.split(":")[0] if not p.source.startswith("handwritten") else "handwritten"
        d = by.setdefault(src, {"pos": 0, "neg": 0})
        d["pos" if p.label else "neg"] += 1
    return by


__all__ = ["CALIBRATION", "HELD_OUT", "Pair", "qqp", "faq", "handwritten", "hard_set", "counts"]
