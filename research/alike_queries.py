"""How alike two queries must be to ask the same question again: the constant
``engine.boundary.POSITIVE_SIMILARITY``, chosen on the calibration sides of both documentation
hard sets.

``python -m research.alike_queries [--side calibration|held_out]``

For each corpus and cosine threshold (the shipped embedding, normalised queries as recall embeds
them), it prints how many close-but-different questions (those the item's gold section does not
answer) sit at least that close to a same-need question of their own item (a positive of that
item's trail would serve them its text), how many same-need questions sit that close to a
question of another item with other gold sections, and how many pairs of one item's same-need
rewordings do (what a positive would carry over to a rewording). Research only."""

from __future__ import annotations

import argparse
import os

THRESHOLDS = (0.8, 0.85, 0.9, 0.93, 0.95)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.alike_queries", description=__doc__.split("\n\n")[1])
    parser.add_argument("--side", default="calibration", choices=("calibration", "held_out"))
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("TRAILCACHE_DEV", "true")
    import django

    django.setup()
    import numpy as np

    from cachecore.embedding import get_embedder
    from cachecore.engine.text import normalise_query
    from research.corpora import celery_items, faq_items

    embedder = get_embedder()
    for name, items in (("celery", celery_items()), ("faq", faq_items())):
        questions: list[str] = []
        owner: list[tuple[int, frozenset[str]]] = []
        same: list[bool] = []
        for n, item in enumerate(i for i in items if i.side == args.side):
            for q in (item.question, *item.same_need):
                questions.append(q)
                owner.append((n, frozenset(item.gold)))
                same.append(True)
            for c in item.close:
                if not c.answered_by_source:
                    questions.append(c.question)
                    owner.append((n, frozenset(c.answer)))
                    same.append(False)
        vectors = embedder.embed([normalise_query(q) for q in questions])
        cos = vectors @ vectors.T
        size = len(questions)
        same_idx = [i for i in range(size) if same[i]]
        close_idx = [i for i in range(size) if not same[i]]
        pairs = [cos[i, j] for i in same_idx for j in same_idx if i < j and owner[i][0] == owner[j][0]]
        print(f"{name} {args.side}: {len(close_idx)} close questions, {len(same_idx)} same-need, "
              f"{len(pairs)} same-need pairs (cosine quartiles {np.round(np.quantile(pairs, [.25, .5, .75]), 2)})")
        for tau in THRESHOLDS:
            close = sum(1 for i in close_idx
                        if any(cos[i, j] >= tau for j in same_idx if owner[j][0] == owner[i][0]))
            other = sum(1 for i in same_idx
                        if any(cos[i, j] >= tau for j in same_idx
                               if owner[j][0] != owner[i][0] and not owner[j][1] & owner[i][1]))
            carried = sum(1 for p in pairs if p >= tau)
            print(f"  {tau:.2f}: close alike to their item's same-need {close}/{len(close_idx)}; "
                  f"same-need alike to another gold's {other}/{len(same_idx)}; "
                  f"same-need pairs alike {carried}/{len(pairs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
