"""Per-trail bars from negatives and positives, and what a labelled recall teaches (no database)."""

from cachecore.engine.boundary import (
    LOCAL_SIMILARITY,
    PASSED_OVER,
    POSITIVE_SIMILARITY,
    RECOVERY_MARGIN,
    alike,
    asked_before,
    bar_after_citation,
    blocks_prefetch,
    boundary_after,
    cited_offer,
    cited_over_polarity,
    learns_negative,
    local_bar,
    negative_bar,
    passed_over,
    passed_over_cited,
)


def test_an_offer_as_text_or_hint_left_uncited_for_other_sections_is_a_negative():
    assert learns_negative(decided_outcome="prefetch", label=False, cited_any=True)
    assert learns_negative(decided_outcome="hint", label=False, cited_any=True)
    assert not learns_negative(decided_outcome="miss", label=False, cited_any=True)
    assert not learns_negative(decided_outcome="hint", label=True, cited_any=True)
    assert not learns_negative(decided_outcome="prefetch", label=False, cited_any=False)
    assert not learns_negative(decided_outcome="prefetch", label=None, cited_any=True)


def test_the_bar_applies_to_queries_like_the_negative_only():
    negatives = [(LOCAL_SIMILARITY + 0.1, 0.9), (LOCAL_SIMILARITY - 0.01, 0.99), (LOCAL_SIMILARITY, 0.8)]
    assert local_bar(negatives) == 0.9
    assert local_bar([(0.3, 0.99)]) is None and local_bar([]) is None
    assert alike(None) and alike(LOCAL_SIMILARITY) and not alike(LOCAL_SIMILARITY - 0.01)
    assert negative_bar(1.2) == 1.0 and negative_bar(0.7) == 0.7
    assert blocks_prefetch(0.9, 0.9) and not blocks_prefetch(0.9, 0.91) and not blocks_prefetch(None, 0.1)
    # The bar is a logged (rounded) confidence: the same query scores it exactly, not a hair above.
    assert blocks_prefetch(0.3551, 0.35512) and not blocks_prefetch(0.3551, 0.35516)


def test_a_citation_lowers_the_bar_under_it_and_clears_it_under_the_cut():
    assert bar_after_citation(bar=0.95, confidence=0.9, prefetch_confidence=0.8) == 0.9 - RECOVERY_MARGIN
    assert bar_after_citation(bar=0.85, confidence=0.97, prefetch_confidence=0.8) == 0.85
    assert bar_after_citation(bar=0.95, confidence=0.81, prefetch_confidence=0.8) is None
    # The trail-wide form (no query to be local to) moves the same way.
    assert boundary_after(boundary=None, confidence=0.9, cited=False, prefetch_confidence=0.8) == 0.9
    assert boundary_after(boundary=0.9, confidence=0.95, cited=False, prefetch_confidence=0.8) == 0.95
    assert boundary_after(boundary=None, confidence=0.9, cited=True, prefetch_confidence=0.8) is None
    assert boundary_after(boundary=0.95, confidence=0.81, cited=True, prefetch_confidence=0.8) is None


def test_positives_set_a_cited_bar_only_for_the_same_question_and_negatives_still_bound():
    from cachecore.engine.boundary import exemplar_bars, positive_bar

    assert positive_bar(0.5) == 0.5 - RECOVERY_MARGIN and positive_bar(0.01) == 0.0
    # A positive under the similarity it needs is no evidence for this query.
    assert exemplar_bars([(POSITIVE_SIMILARITY - 0.01, 0.4, True)], boundary=None) == (None, None)
    assert exemplar_bars([(0.97, 0.4, True), (0.95, 0.3, True)], boundary=None) == (None, 0.3)
    # A negative like the query sets the boundary beside the positive; one unlike it does not.
    assert exemplar_bars([(0.97, 0.4, True), (0.8, 0.6, False)], boundary=0.6) == (0.6, 0.4)
    assert exemplar_bars([(0.97, 0.4, True), (0.5, 0.6, False)], boundary=0.6) == (None, 0.4)
    # Only positives: the trail-wide boundary (from before negatives were kept) stands.
    assert exemplar_bars([(0.97, 0.4, True)], boundary=0.7) == (0.7, 0.4)


def test_the_prefetch_cut_a_cited_bar_lowers_and_a_pause_withholds():
    from cachecore.engine.boundary import prefetch_cut

    kw = {"prefetch_confidence": 0.88, "hint_confidence": 0.17}
    assert prefetch_cut(**kw, paused=False, cited=None) == 0.88
    assert prefetch_cut(**kw, paused=True, cited=None) is None
    assert prefetch_cut(**kw, paused=False, cited=0.5) == 0.5
    assert prefetch_cut(**kw, paused=False, cited=0.95) == 0.88     # never above the tenant's cut
    assert prefetch_cut(**kw, paused=True, cited=0.95) == 0.95      # paused: the trail's own bar
    assert prefetch_cut(**kw, paused=True, cited=0.05) == 0.17      # never under the hint cut


def test_the_question_a_trail_was_recorded_for_is_a_positive_of_its_own():
    from cachecore.engine.boundary import OWN_QUESTION_BAR, positive_bar, prefetch_cut

    kw = {"prefetch_confidence": 0.88, "hint_confidence": 0.17}
    # Cited at confidence 1 when it was recorded: its bar is a positive's at 1.
    assert OWN_QUESTION_BAR == positive_bar(1.0) == 1.0 - RECOVERY_MARGIN
    assert prefetch_cut(**kw, paused=True, cited=None, own_question=True) == OWN_QUESTION_BAR
    assert prefetch_cut(**kw, paused=False, cited=None, own_question=True) == 0.88
    # A lower positive of its own still counts; the tenant's cut still caps it.
    assert prefetch_cut(**kw, paused=True, cited=0.6, own_question=True) == 0.6
    assert prefetch_cut(**kw, paused=False, cited=0.6, own_question=True) == 0.6


def test_the_cited_offer_is_the_first_offered_trail_whose_sections_the_record_cited():
    offered, confidences = ["best", "merged", "rival"], [0.91, 0.89, 0.84]
    assert cited_offer(offered, confidences, {"best", "rival"}, decided_confidence=0.91) == ("best", 0.91)
    # The agent cited the rival served beside the best one: the rival, at its own confidence.
    assert cited_offer(offered, confidences, {"rival"}, decided_confidence=0.91) == ("rival", 0.84)
    assert cited_offer(offered, confidences, set(), decided_confidence=0.91) is None
    # A row logged without per-trail confidences teaches the best one only.
    assert cited_offer(offered, [], {"best"}, decided_confidence=0.91) == ("best", 0.91)
    assert cited_offer(offered, [], {"rival"}, decided_confidence=0.91) is None


def test_asked_before_needs_the_positives_bar_the_hint_cut_and_no_negative_like_it():
    assert asked_before(cited=0.7, boundary=None, confidence=0.72, hint_confidence=0.2)
    assert not asked_before(cited=0.7, boundary=None, confidence=0.69, hint_confidence=0.2)
    assert not asked_before(cited=None, boundary=None, confidence=0.99, hint_confidence=0.2)
    assert not asked_before(cited=0.1, boundary=None, confidence=0.15, hint_confidence=0.2)
    assert not asked_before(cited=0.7, boundary=0.72, confidence=0.72, hint_confidence=0.2)


def test_passed_over_keeps_the_most_confident_candidates_the_answer_did_not_name():
    scored = [("a", 0.9), ("b", 0.2), ("c", 0.7), ("d", 0.5), ("e", 0.6)]
    assert passed_over(scored, {"a"}) == [("c", 0.7), ("e", 0.6), ("d", 0.5)][:PASSED_OVER]
    assert passed_over(scored, {t for t, _ in scored}) == []
    assert passed_over([], set()) == []


def test_the_first_passed_over_candidate_the_record_cited_is_taught():
    assert passed_over_cited(["c", "e", "d"], [0.7, 0.6, 0.5], {"d", "e"}) == ("e", 0.6)
    assert passed_over_cited(["c", "e"], [0.7, 0.6], {"x"}) is None
    assert passed_over_cited([], [], {"x"}) is None


def test_only_a_positive_asking_the_question_again_cited_over_a_conflict_counts():
    assert cited_over_polarity([(0.97, True)])
    assert not cited_over_polarity([(0.97, False)])
    assert not cited_over_polarity([(POSITIVE_SIMILARITY - 0.01, True)])
    assert not cited_over_polarity([(None, True)]) and not cited_over_polarity([])
