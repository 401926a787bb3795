"""The rival margin at sentence level, offline: does weighing the query against each section's
*sentences* (rather than its 60-word chunks) tell same-need questions from close-but-different
ones better, and does it carry over to a corpus left out of the fit?

``python -m research.sentence_margin celery|faq [--words N]`` reads the rows of
``python -m research.match_calibration collect --corpus celery|faq``
(``reports/calibration/<corpus>-rows.jsonl``), splits every section of the corpus into pieces of
at most ``N`` words (1: one sentence each, as ``cachecore.engine.text.split_chunks`` splits),
embeds them with the shipped model, and adds two features to every candidate:

* ``s_cov``: the best cosine of the query to a sentence of the trail's cited sections;
* ``s_margin``: that, less the best cosine to a sentence of any other section of the corpus.

It writes ``reports/calibration/<corpus>-sent<N>.jsonl`` in the rows' shape, for
``python -m research.match_calibration fit … --extra s_margin`` (and ``--loco``), and
``python -m research.sentence_margin emulate`` emulates round 1 of the replay on them (see
docs/evaluation.md). This is the study that led the product to compute its own
``sentence_margin`` (``cachecore/engine/evidence.py``), with the rival taken among the sections
the covering read returns rather than the whole corpus; ``collect`` rows carry that one.
Research only: product code never imports this module."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from research.splits import REPO_ROOT

ROWS = REPO_ROOT / "reports" / "calibration"


def section_maxima(cosines: np.ndarray, starts: np.ndarray, sections: int, section_of: np.ndarray) -> np.ndarray:
    """The best cosine per section from the cosines of its pieces (pieces grouped by section,
    ``starts`` the first piece of each group, ``section_of`` the group's section); -1 for a
    section without pieces."""
    best = np.full(sections, -1.0)
    best[section_of] = np.maximum.reduceat(cosines, starts)
    return best


def margins(best: np.ndarray, cited: Sequence[int]) -> tuple[float, float]:
    """(``s_cov``, ``s_margin``) of a trail citing the sections ``cited`` (indexes into ``best``);
    (0, 0) when none of them is known."""
    if not cited:
        return 0.0, 0.0
    own = float(best[list(cited)].max())
    others = np.ones(len(best), dtype=bool)
    others[list(cited)] = False
    rival = float(best[others].max()) if others.any() else -1.0
    return own, own - rival


def _sections_and_gold(corpus: str) -> tuple[list[Any], dict[str, list[str]]]:
    from docingest.ingest import collect_sections

    if corpus == "celery":
        from research.corpora import CORPORA

        spec = CORPORA["celery"]
        return collect_sections(spec.docs, spec.subtrees), {i.id: list(i.gold) for i in spec.items()}
    from research.match_calibration import DOCS, load_probes

    entries, _ = load_probes()
    return collect_sections(DOCS), {e["id"]: list(e["gold"]) for e in entries}


def augment(corpus: str, *, words: int = 1, rows_path: Path | None = None, out: Path | None = None) -> Path:
    from cachecore.embedding import get_embedder
    from cachecore.engine.text import normalise_query, split_chunks

    rows_path = rows_path or ROWS / f"{corpus}-rows.jsonl"
    out = out or ROWS / f"{corpus}-sent{words}.jsonl"
    sections, gold = _sections_and_gold(corpus)
    index = {s.id: i for i, s in enumerate(sections)}
    pieces, owner = [], []
    for i, s in enumerate(sections):
        for piece in split_chunks(s.text, max_words=words):
            pieces.append(piece)
            owner.append(i)
    print(f"{len(sections)} sections, {len(pieces)} pieces of at most {words} words", file=sys.stderr)
    embedder = get_embedder()
    vectors = np.vstack([embedder.embed(pieces[i:i + 256]) for i in range(0, len(pieces), 256)])
    owners = np.array(owner)
    starts = np.r_[0, np.flatnonzero(np.diff(owners)) + 1]
    rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = embedder.embed([normalise_query(r["query"]) for r in rows])
    with open(out, "w", encoding="utf-8") as fh:
        for row, query in zip(rows, queries):
            best = section_maxima(vectors @ query, starts, len(sections), owners[starts])
            for cand in row["candidates"]:
                cited = [index[g] for g in gold.get(cand.get("entry") or "", []) if g in index]
                s_cov, s_margin = margins(best, cited)
                cand["features"].update(s_cov=s_cov, s_margin=s_margin)
            fh.write(json.dumps(row) + "\n")
    return out


def round_one_counts(rows: list[dict[str, Any]], score: Callable[[dict[str, Any]], float], *, cut: float, floor: float,
                     items: Sequence[Any]) -> dict[str, int]:
    """Round 1 of the replay (``research.calibration_replay``) emulated on ``collect`` rows of the
    Celery set (``items``: all of them, for the gold of any trail served): each row's item's first
    same-need rewording and first close-but-different question,
    decided by the best candidate over the first stage (``floor``) and the ``cut``. A close
    question's prefetch is *wrong* when the served trail's gold is not among the sections the set
    names as answering it (its ``answer``)."""
    from research.match_calibration import qualifies

    first = {i.same_need[0] for i in items if i.same_need}
    close = {i.close[0].question: i.close[0] for i in items if i.close}
    gold = {i.id: set(i.gold) for i in items}
    out = {"same_need": 0, "own_prefetch": 0, "close": 0, "close_prefetch": 0, "close_wrong": 0}
    for row in rows:
        cands = [c for c in row["candidates"] if qualifies(c, floor)]
        best = max(cands, key=score) if cands else None
        served = best is not None and score(best) >= cut
        if row["kind"] == "paraphrase" and row["query"] in first:
            out["same_need"] += 1
            out["own_prefetch"] += bool(served and best.get("is_source"))
        elif row["kind"] == "twin" and row["query"] in close and not row["answered_by_source"]:
            out["close"] += 1
            if served:
                out["close_prefetch"] += 1
                out["close_wrong"] += not (gold.get(best.get("entry") or "", set()) & set(close[row["query"]].answer))
    return out


def emulate(paths: Sequence[Path], *, celery: Path, extra: Sequence[str], target_false: float = 0.04) -> dict[str, Any]:
    """The scorer fitted on ``paths`` (as ``match_calibration fit``, with ``extra`` features), and
    round 1 emulated at its cut on the held-out side of ``celery`` (the Celery set's rows)."""
    from research.corpora import CORPORA
    from research.match_calibration import HELD_OUT, fit, load_rows, score_with

    report = fit(paths, write=False, target_false=target_false, extra=extra)
    rows = [r for r in load_rows([celery]) if r["side"] == HELD_OUT]
    # Every item: a held-out question may be served a calibration item's trail.
    counts = round_one_counts(rows, score_with(report), cut=report["prefetch_confidence"],
                              floor=report["similarity_threshold"], items=CORPORA["celery"].items())
    return {"extra": list(extra), "cut": report["prefetch_confidence"], "round_1": counts}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.sentence_margin")
    parser.add_argument("corpus", choices=("celery", "faq", "emulate"),
                        help="celery | faq: add the features to that corpus's rows; emulate: round 1 of the "
                             "replay offline, fitted on both corpora's sentence rows, without and with s_margin")
    parser.add_argument("--words", type=int, default=1, help="piece size in words (1: a sentence each)")
    parser.add_argument("--rows", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    if args.corpus == "emulate":
        celery = ROWS / f"celery-sent{args.words}.jsonl"
        for extra in ((), ("s_margin",)):
            print(json.dumps(emulate([ROWS / f"faq-sent{args.words}.jsonl", celery], celery=celery, extra=extra)))
        return 0
    print(f"rows written to {augment(args.corpus, words=args.words, rows_path=args.rows, out=args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
