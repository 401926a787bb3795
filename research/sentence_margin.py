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
``python -m research.match_calibration fit … --extra s_margin`` (and ``--loco`` by hand, see
docs/evaluation.md). The product computes neither feature: this measures what they would add.
Research only: product code never imports this module."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.sentence_margin")
    parser.add_argument("corpus", choices=("celery", "faq"))
    parser.add_argument("--words", type=int, default=1, help="piece size in words (1: a sentence each)")
    parser.add_argument("--rows", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    print(f"rows written to {augment(args.corpus, words=args.words, rows_path=args.rows, out=args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
