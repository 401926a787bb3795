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
