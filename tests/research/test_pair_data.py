"""The pair model's in-domain pairs (``research.pairmodel.data.hard_set``): built from a
corpus's items on one side, every two same-need questions of an item a positive, a same-need
question against a close question its gold section does not answer a negative, and nothing
across items or sides."""

from __future__ import annotations

import pytest

from research.corpora import CORPORA
from research.pairmodel.data import hard_set
from research.splits import CALIBRATION, HELD_OUT


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_hard_set_pairs_follow_the_items(corpus: str) -> None:
    items = CORPORA[corpus].items()
    for side in (CALIBRATION, HELD_OUT):
        on_side = [i for i in items if i.side == side]
        pairs = hard_set(corpus, side)
        same = {}
        unanswered = {}
        for i in on_side:
            questions = (i.question, *i.same_need)
            for q in questions:
                same.setdefault(q, set()).update(questions)
            for c in i.close:
                if not c.answered_by_source:
                    unanswered.setdefault(c.question, set()).update(questions)
        expected_pos = sum(len(q) * (len(q) - 1) // 2 for q in ((i.question, *i.same_need) for i in on_side))
        expected_neg = sum(
            (1 + len(i.same_need)) * sum(not c.answered_by_source for c in i.close) for i in on_side)
        assert sum(p.label for p in pairs) == expected_pos
        assert sum(1 - p.label for p in pairs) == expected_neg
        for p in pairs:
            if p.label:
                assert p.b in same[p.a]
            else:
                # the close question the gold section does not answer, against its own item's
                # same-need questions only
                assert p.a in unanswered[p.b]
    every = hard_set(corpus)
    assert len(every) == len(hard_set(corpus, CALIBRATION)) + len(hard_set(corpus, HELD_OUT))


def test_section_pairs_pair_each_question_with_the_section_that_answers_it_or_the_trap() -> None:
    from research.pairmodel.sections import section_pairs, section_texts

    texts = section_texts("flask")
    items = [i for i in CORPORA["flask"].items() if i.side == HELD_OUT]
    pairs = {(p.a, p.b): p.label for p in section_pairs("flask", HELD_OUT)}
    checked = 0
    for item in items:
        gold = texts[item.gold[0]]
        for q in (item.question, *item.same_need):
            assert pairs[(q, gold)] == 1
        for close in item.close:
            if not close.answered_by_source:
                # the trap: the section the close question's neighbour cites
                assert pairs[(close.question, gold)] == 0
            answer = next(a for a in close.answer if a in texts) if close.answer else None
            if answer is not None:
                assert pairs[(close.question, texts[answer])] == 1
                if answer not in item.gold:
                    assert pairs[(item.question, texts[answer])] == 0
                checked += 1
    assert checked > 20
