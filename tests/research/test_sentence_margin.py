"""``research.sentence_margin``'s arithmetic: each section's best piece, and a trail's margin
over the best section it does not cite."""

from __future__ import annotations

import numpy as np

from research.sentence_margin import margins, section_maxima


def test_each_section_keeps_its_best_piece_and_a_section_without_pieces_scores_minus_one() -> None:
    # Pieces grouped by section: section 0 has two, section 2 three, section 1 none.
    cosines = np.array([0.2, 0.7, 0.1, 0.9, 0.4])
    starts = np.array([0, 2])
    best = section_maxima(cosines, starts, sections=3, section_of=np.array([0, 2]))
    assert best.tolist() == [0.7, -1.0, 0.9]


def test_the_margin_is_the_cited_sections_best_less_the_best_other_section() -> None:
    best = np.array([0.7, 0.5, 0.9, 0.6])
    assert margins(best, [2]) == (0.9, 0.9 - 0.7)
    # Citing the best two: the rival is the third.
    s_cov, s_margin = margins(best, [0, 2])
    assert s_cov == 0.9 and abs(s_margin - 0.3) < 1e-12
    # A neighbouring section covers the query better: the margin is negative.
    s_cov, s_margin = margins(best, [1])
    assert s_cov == 0.5 and abs(s_margin + 0.4) < 1e-12
    assert margins(best, []) == (0.0, 0.0)


def test_round_one_counts_the_first_questions_and_judges_a_close_prefetch_by_the_answering_sections() -> None:
    from research.corpora import Close, Item
    from research.sentence_margin import round_one_counts

    items = [
        Item(id="a", group="g", side="held_out", question="qa", gold=("s/a",), same_need=("a1", "a2"),
             close=(Close("ac1", "parameter", False, ("s/b",)), Close("ac2", "version", False, ()))),
        Item(id="b", group="g", side="calibration", question="qb", gold=("s/b",), same_need=("b1",), close=()),
    ]

    def cand(entry: str, score: float, source: bool) -> dict:
        return {"entry": entry, "is_source": source, "similarity": 0.8, "coverage": 0.8, "score": score}

    rows = [
        # The first rewording, its own trail over the cut: counted.
        {"kind": "paraphrase", "query": "a1", "answered_by_source": True,
         "candidates": [cand("a", 0.95, True), cand("b", 0.5, False)]},
        # The second rewording is round 2's: not counted.
        {"kind": "paraphrase", "query": "a2", "answered_by_source": True, "candidates": [cand("a", 0.99, True)]},
        # The first close question, served b's trail, whose gold is the section that answers it:
        # a prefetch, not a wrong one (b is a calibration item: its gold still counts).
        {"kind": "twin", "query": "ac1", "answered_by_source": False,
         "candidates": [cand("b", 0.93, False), cand("a", 0.90, True)]},
        # The second close question is round 2's.
        {"kind": "twin", "query": "ac2", "answered_by_source": False, "candidates": [cand("a", 0.99, True)]},
    ]
    counts = round_one_counts(rows, lambda c: c["score"], cut=0.9, floor=0.3, items=items)
    assert counts == {"same_need": 1, "own_prefetch": 1, "close": 1, "close_prefetch": 1, "close_wrong": 0}
    # Served the trail it differs from instead: wrong.
    rows[2]["candidates"][1]["score"] = 0.97
    counts = round_one_counts(rows, lambda c: c["score"], cut=0.9, floor=0.3, items=items)
    assert counts["close_prefetch"] == 1 and counts["close_wrong"] == 1
    # Under the cut: nothing served.
    counts = round_one_counts(rows, lambda c: c["score"], cut=0.98, floor=0.3, items=items)
    assert counts["own_prefetch"] == 0 and counts["close_prefetch"] == 0
