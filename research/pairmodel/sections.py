"""(question, section text) pairs of the documentation hard sets: does this section answer this
question? The section-level counterpart of ``data.hard_set``, for a cross-encoder that reads the
cited text, not the trail's question.

For each item of a corpus (``research.corpora``) on one side:
- positives: each same-need question (the item's question and its rewordings) with its gold
  section; each close question with a section that answers it (its ``answer``; for the FAQ, whose
  twins name none, the gold section when the source answers it);
- negatives: each close question the gold section does not answer, with the gold section (the
  trap a cache falls into), and each same-need question with a close question's answer section
  other than the gold (the neighbouring section), when the set names one.

Section texts come from the corpus's docs, split as the product ingests them (``docingest``;
Django is set up for its imports). Research only.
"""

from __future__ import annotations

import os
from functools import cache

from research.corpora import CORPORA
from research.pairmodel.data import Pair


@cache
def section_texts(corpus: str) -> dict[str, str]:
    """Section id → its title and text, for ``corpus``'s docs."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from docingest.ingest import collect_sections

    c = CORPORA[corpus]
    return {s.id: f"{s.title}\n{s.text}" for s in collect_sections(c.docs, c.subtrees)}


def section_pairs(corpus: str, side: str | None = None) -> list[Pair]:
    """The module's pairs for ``corpus``'s items on ``side`` (all items when None)."""
    texts = section_texts(corpus)
    out: list[Pair] = []
    for item in CORPORA[corpus].items():
        if side is not None and item.side != side:
            continue
        gold = [g for g in item.gold if g in texts]
        if not gold:
            continue
        same = [item.question, *item.same_need]
        for q in same:
            out.append(Pair(q, texts[gold[0]], 1, f"{corpus}:same_need"))
        for close in item.close:
            answers = [a for a in close.answer if a in texts] or (gold if close.answered_by_source else [])
            answer = answers[0] if answers else None
            if answer is not None:
                out.append(Pair(close.question, texts[answer], 1, f"{corpus}:close_answer"))
            if not close.answered_by_source:
                out.append(Pair(close.question, texts[gold[0]], 0, f"{corpus}:close_gold"))
            if answer is not None and answer not in item.gold:
                out.extend(Pair(q, texts[answer], 0, f"{corpus}:same_need_neighbour") for q in same)
    return out
