"""decide(): every band, margin and reason of the recall decision, without a database."""

from cachecore.engine.decide import Candidate, Cited, Policy, Reason, decide
from cachecore.engine.evidence import FEATURES, Idf
from cachecore.engine.outcome import Outcome
from cachecore.engine.scorer import MatchScorer
from cachecore.engine.text import content_hash

# Confidence = sigmoid(20 · (cosine − 0.8)): 0.9 → 0.88, 0.8 → 0.5, 0.7 → 0.12.
SCORER = MatchScorer(
    weights=tuple(20.0 if f == "cosine" else 0.0 for f in FEATURES), bias=-16.0,
    means=(0.0,) * len(FEATURES), scales=(1.0,) * len(FEATURES), prefetch_confidence=0.8, hint_confidence=0.2,
)
# The bands at the tenant's cut as set; the cut a small tenant raises is test_small_tenant_cut.py's.
POLICY = Policy(scorer=SCORER, similarity_threshold=0.5, prefetch_confidence=0.8, hint_confidence=0.2,
                coverage_floor=0.3, small_tenant_cut=False)
IDF = Idf(sections=10, df={})
QUERY = "how do i install acme on debian"


def cited(section_id: str, text: str | None = "text", *, changed: bool = False, **kw) -> Cited:
    recorded = content_hash(text or section_id)
    current = content_hash("new " + (text or "")) if changed else recorded
    return Cited(section_id, recorded, current, None if changed else text, kw.pop("tokens", 10), **kw)


def cand(trail_id: str, similarity: float, *sections: Cited, question: str = "install acme on a debian box please",
         steps=()) -> Candidate:
    return Candidate(trail_id, similarity, question, list(steps), tuple(sections))


def run(*candidates: Candidate, policy: Policy = POLICY, budget: int = 1000, query: str = QUERY):
    return decide(query=query, candidates=list(candidates), policy=policy, budget=budget, idf=IDF)


def test_no_candidate_is_a_miss_with_no_confidence():
    d = run()
    assert (d.outcome, d.reason, d.confidence, d.trail_id) == (Outcome.MISS, Reason.NO_CANDIDATE, 0.0, None)


def test_the_same_question_with_every_section_unchanged_is_a_prefetch_in_citation_order():
    d = run(cand("t1", 0.99, cited("b", "B text"), cited("a", "A text"), question=QUERY))
    assert (d.outcome, d.reason, d.confidence) == (Outcome.PREFETCH, Reason.MATCH, 1.0)
    assert [s["id"] for s in d.sections] == ["b", "a"] and [s["text"] for s in d.sections] == ["B text", "A text"]
    assert d.served_ids == ["b", "a"] and d.trails == ["t1"]


def test_strong_evidence_prefetches_the_grey_band_hints_and_weak_evidence_misses():
    assert run(cand("t1", 0.9, cited("a"))).outcome is Outcome.PREFETCH
    grey = run(cand("t1", 0.78, cited("a")))
    assert (grey.outcome, grey.reason) == (Outcome.HINT, Reason.LOW_CONFIDENCE)
    assert all("text" not in s for s in grey.sections) and "search as well" in grey.hint
    weak = run(cand("t1", 0.7, cited("a")))
    assert (weak.outcome, weak.reason, weak.trail_id) == (Outcome.MISS, Reason.NO_MATCH, None)
    assert 0 < weak.confidence < 0.2


def test_below_the_similarity_threshold_nothing_is_considered():
    d = run(cand("t1", 0.49, cited("a")))
    assert d.outcome is Outcome.MISS and d.scored == []


def test_two_close_candidates_citing_different_sections_are_ambiguous():
    d = run(cand("t1", 0.92, cited("a")), cand("t2", 0.91, cited("b")))
    assert (d.outcome, d.reason) == (Outcome.HINT, Reason.AMBIGUOUS)
    assert d.trails == ["t1", "t2"] and {s["id"] for s in d.sections} == {"a", "b"}
    # Citing the same sections is no ambiguity: they merge.
    same = run(cand("t1", 0.92, cited("a")), cand("t2", 0.91, cited("a"), cited("b")))
    assert same.outcome is Outcome.PREFETCH and same.trails == ["t1", "t2"]


def test_a_rival_far_below_in_confidence_is_no_ambiguity():
    d = run(cand("t1", 0.95, cited("a")), cand("t2", 0.82, cited("b")))
    assert d.outcome is Outcome.PREFETCH and d.trails == ["t1"]


def test_the_ambiguity_margin_is_five_hundredths_of_confidence():
    # 0.95 → 0.953, 0.925 → 0.924 (0.029 apart), 0.895 → 0.870 (0.083 apart, not merged).
    near = run(cand("t1", 0.95, cited("a")), cand("t2", 0.925, cited("b")))
    assert (near.outcome, near.reason) == (Outcome.HINT, Reason.AMBIGUOUS)
    apart = run(cand("t1", 0.95, cited("a")), cand("t2", 0.895, cited("b")))
    assert apart.outcome is Outcome.PREFETCH and apart.trails == ["t1"]
    assert POLICY.ambiguity_margin == 0.05


def test_an_opposite_question_is_a_hint_never_a_prefetch():
    d = run(cand("t1", 0.95, cited("a"), question="how do i uninstall acme on debian"))
    assert (d.outcome, d.reason) == (Outcome.HINT, Reason.POLARITY)
    off = Policy(**{**POLICY.__dict__, "polarity_guard": False})
    assert run(cand("t1", 0.95, cited("a"), question="how do i uninstall acme on debian"),
               policy=off).outcome is Outcome.PREFETCH


def test_only_a_positive_cited_over_the_conflict_lifts_the_polarity_guard_for_the_question_asked_again():
    opposite = "how do i uninstall acme on debian"

    def asked(**bars) -> Candidate:
        return Candidate("t1", 0.95, opposite, [], (cited("a"),), **bars)

    # A positive for this question, learned without a conflict ("install" cited for "install"):
    # the opposite question is still a hint.
    d = run(asked(cited_bar=0.5))
    assert (d.outcome, d.reason) == (Outcome.HINT, Reason.POLARITY)
    # The agent cited the trail for this question over the conflict: served.
    d = run(asked(cited_bar=0.5, cited_over_polarity=True))
    assert (d.outcome, d.reason, d.trail_id) == (Outcome.PREFETCH, Reason.MATCH, "t1")
    # The flag alone, without a positive whose bar the query meets, lifts nothing.
    assert run(asked(cited_over_polarity=True)).reason is Reason.POLARITY
    assert run(asked(cited_bar=0.99, cited_over_polarity=True)).reason is Reason.POLARITY


def test_some_sections_changed_is_a_hint_and_all_changed_is_stale():
    d = run(cand("t1", 0.95, cited("a"), cited("b", changed=True)))
    assert (d.outcome, d.reason) == (Outcome.HINT, Reason.CHANGED)
    assert [s["status"] for s in d.sections] == ["valid", "changed"]
    stale = run(cand("t1", 0.95, cited("a", changed=True)), cand("t2", 0.9, cited("b")))
    assert stale.stale_trail_ids == ["t1"] and stale.trail_id == "t2" and stale.outcome is Outcome.PREFETCH
    gone = run(cand("t1", 0.95, cited("a", changed=True)))
    assert (gone.outcome, gone.reason, gone.stale_trail_ids) == (Outcome.MISS, Reason.STALE, ["t1"])


def test_text_that_does_not_hash_to_its_current_hash_is_never_served():
    broken = Cited("a", content_hash("old"), content_hash("old"), "tampered text", 5)
    d = run(cand("t1", 0.99, broken, question=QUERY))
    assert d.outcome is not Outcome.PREFETCH and d.served_ids == []
    assert all("text" not in s for s in d.sections)


def test_unverified_sections_hint_without_making_the_trail_stale():
    d = run(cand("t1", 0.99, cited("a", unverified=True), question=QUERY))
    assert (d.outcome, d.reason, d.stale_trail_ids) == (Outcome.HINT, Reason.UNVERIFIED, [])


def test_sections_kept_by_hash_only_hint():
    d = run(cand("t1", 0.99, cited("a", None), question=QUERY))
    assert (d.outcome, d.reason) == (Outcome.HINT, Reason.HASH_ONLY) and "not stored here" in d.hint


def test_low_coverage_turns_a_prefetch_into_an_escalated_hint():
    d = run(cand("t1", 0.99, cited("a", coverage=0.1), question=QUERY))
    assert (d.outcome, d.reason, d.escalated, d.coverage) == (Outcome.HINT, Reason.LOW_COVERAGE, True, 0.1)
    known = run(cand("t1", 0.99, cited("a", coverage=0.6), cited("b", coverage=None), question=QUERY))
    assert known.coverage is None and known.outcome is Outcome.PREFETCH  # unknown unless every section is known


def test_the_budget_serves_what_fits_and_lists_the_rest_as_omitted():
    d = run(cand("t1", 0.99, cited("a", tokens=8), cited("b", tokens=5), cited("c", tokens=2), question=QUERY),
            budget=10)
    assert d.served_ids == ["a", "c"] and d.omitted == ["b"]
    assert [("text" in s) for s in d.sections] == [True, False, True]


def test_the_most_confident_candidate_answers_not_the_nearest():
    policy = Policy(**{**POLICY.__dict__, "scorer": MatchScorer(
        weights=tuple(-30.0 if f == "unexplained" else 20.0 if f == "cosine" else 0.0 for f in FEATURES),
        bias=-16.0, means=(0.0,) * len(FEATURES), scales=(1.0,) * len(FEATURES))})
    near = cand("t1", 0.95, cited("a"), question="install acme on fedora")
    right = cand("t2", 0.93, cited("b"), question="install acme on debian")
    d = run(near, right, policy=policy)
    assert d.trail_id == "t2"


# Unexplained query terms weigh against a candidate: a question worded nearer the query can be the
# less confident one.
WORDING = Policy(**{**POLICY.__dict__, "scorer": MatchScorer(
    weights=tuple(-30.0 if f == "unexplained" else 20.0 if f == "cosine" else 0.0 for f in FEATURES),
    bias=-16.0, means=(0.0,) * len(FEATURES), scales=(1.0,) * len(FEATURES))})


def test_a_trail_whose_sections_a_nearer_wording_was_not_confident_for_is_a_hint():
    # t1's question is the query's nearest wording and asks another thing (fedora, not debian);
    # t2 cites the same section in words further off, and alone would be served.
    nearer = cand("t1", 0.95, cited("a"), question="install acme on fedora")
    further = cand("t2", 0.90, cited("a"), question="debian acme install steps")
    alone = run(further, policy=WORDING)
    assert (alone.outcome, alone.reason) == (Outcome.PREFETCH, Reason.MATCH)
    d = run(nearer, further, policy=WORDING)
    assert (d.outcome, d.reason, d.trail_id) == (Outcome.HINT, Reason.NEARER_WORDING, "t2")
    assert d.confidence == alone.confidence and all("text" not in s for s in d.sections)
    assert "nearer" in d.hint
    # The nearer wording citing other sections is another need's trail: no doubt about t2's.
    other = run(cand("t1", 0.95, cited("b"), question="install acme on fedora"), further, policy=WORDING)
    assert (other.outcome, other.trail_id) == (Outcome.PREFETCH, "t2")
    # A further wording of the same sections is no evidence against the nearer one.
    behind = run(cand("t1", 0.85, cited("a"), question="install acme on fedora"), further, policy=WORDING)
    assert (behind.outcome, behind.trail_id) == (Outcome.PREFETCH, "t2")
    # The question t2 was recorded for, asked again, is t2's whatever its siblings say.
    again = run(nearer, further, policy=WORDING, query="debian acme install steps")
    assert (again.outcome, again.trail_id) == (Outcome.PREFETCH, "t2")
    # So is a question an agent cited t2 for before (a positive's bar met).
    from dataclasses import replace

    cited_for = run(nearer, replace(further, cited_bar=0.85), policy=WORDING)
    assert (cited_for.outcome, cited_for.reason, cited_for.trail_id) == (Outcome.PREFETCH, Reason.MATCH, "t2")


def test_a_trail_a_nearer_wording_of_its_sections_doubts_joins_no_prefetch():
    # t1 is served; t2 (sections b) is confident and near enough to merge, but t3 cites the same
    # section b in words nearer the query and is not confident: b joins no text.
    best = cand("t1", 0.93, cited("a"), question="debian acme install steps")
    merged = cand("t2", 0.90, cited("b"), question="debian acme install guide")
    assert run(best, merged, policy=WORDING).trails == ["t1", "t2"]
    doubt = cand("t3", 0.97, cited("b"), question="install acme on fedora")
    d = run(best, merged, doubt, policy=WORDING)
    assert (d.outcome, d.trail_id, d.trails) == (Outcome.PREFETCH, "t1", ["t1"])
    assert [s["id"] for s in d.sections] == ["a"]


def test_a_trail_whose_text_went_uncited_prefetches_only_above_its_boundary():
    from cachecore.engine.boundary import boundary_after

    blocked = run(Candidate("t1", 0.99, QUERY, [], (cited("a"),), boundary=1.0))
    assert (blocked.outcome, blocked.reason) == (Outcome.HINT, Reason.NOT_CITED_BEFORE)
    assert "not what the answer needed" in blocked.hint
    below = run(Candidate("t1", 0.95, "install acme on a debian box please", [], (cited("a"),), boundary=0.9))
    assert below.outcome is Outcome.PREFETCH  # confidence 0.95 beats the boundary 0.9 (cosine 0.95)
    # The boundary rises to an uncited prefetch's confidence and falls under a cited one's.
    assert boundary_after(boundary=None, confidence=0.9, cited=False, prefetch_confidence=0.8) == 0.9
    assert boundary_after(boundary=0.9, confidence=0.85, cited=False, prefetch_confidence=0.8) == 0.9
    assert boundary_after(boundary=0.95, confidence=0.9, cited=True, prefetch_confidence=0.8) == 0.88
    assert boundary_after(boundary=0.95, confidence=0.81, cited=True, prefetch_confidence=0.8) is None
    assert boundary_after(boundary=None, confidence=0.9, cited=True, prefetch_confidence=0.8) is None


def test_pending_chunks_give_a_coverage_pending_hint_never_a_miss():
    # Unknown coverage reads as poor evidence to the scorer; while chunks are pending the
    # question's cosine stands in for it, and the answer is a hint saying why.
    coverage_weighted = MatchScorer(
        weights=tuple({"cosine": 10.0, "coverage": 10.0}.get(f, 0.0) for f in FEATURES), bias=-15.0,
        means=(0.0,) * len(FEATURES), scales=(1.0,) * len(FEATURES), prefetch_confidence=0.8, hint_confidence=0.2)
    policy = Policy(scorer=coverage_weighted, similarity_threshold=0.5, prefetch_confidence=0.8, hint_confidence=0.2,
                    coverage_floor=0.3, small_tenant_cut=False)
    pending = run(cand("t1", 0.85, cited("a", chunks_pending=True)), policy=policy)
    assert (pending.outcome, pending.reason, pending.trail_id) == (Outcome.HINT, Reason.COVERAGE_PENDING, "t1")
    assert all("text" not in s for s in pending.sections) and "still being indexed" in pending.hint
    # The same candidate once its chunks are ready and cover the query: a prefetch.
    ready = run(cand("t1", 0.85, cited("a", coverage=0.8)), policy=policy)
    assert ready.outcome is Outcome.PREFETCH
    # Weak evidence even with the stand-in stays a miss (it would be one once chunks are ready).
    far = run(cand("t1", 0.55, cited("a", chunks_pending=True)), policy=policy)
    assert (far.outcome, far.reason) == (Outcome.MISS, Reason.NO_MATCH)
    # The very same question prefetches whatever the chunks.
    same = run(cand("t1", 0.99, cited("a", chunks_pending=True), question=QUERY), policy=policy)
    assert (same.outcome, same.reason) == (Outcome.PREFETCH, Reason.MATCH)


def test_a_paused_tenant_answers_hints_only():
    from dataclasses import replace

    d = run(cand("t1", 0.95, cited("a")), policy=replace(POLICY, prefetch_paused=True))
    assert (d.outcome, d.reason) == (Outcome.HINT, Reason.PREFETCH_PAUSED)
    assert all("text" not in s for s in d.sections) and d.served_ids == []
    grey = run(cand("t1", 0.78, cited("a")), policy=replace(POLICY, prefetch_paused=True))
    assert grey.reason is Reason.LOW_CONFIDENCE


def test_the_question_a_trail_was_recorded_for_is_served_over_a_pause():
    from dataclasses import replace

    paused = replace(POLICY, prefetch_paused=True)
    own = cand("t1", 0.99, cited("a"), question=QUERY)
    d = run(own, policy=paused)
    assert (d.outcome, d.reason, d.served_ids) == (Outcome.PREFETCH, Reason.MATCH, ["a"])
    # The same question in other words ("how can i" for "how do i") is that question too.
    reworded = run(own, policy=paused, query="how can i install acme on debian")
    assert (reworded.outcome, reworded.confidence) == (Outcome.PREFETCH, 1.0)
    # Another trail recorded for the same question joins as text; one that is not stays out.
    both = run(own, cand("t2", 0.99, cited("b"), question=QUERY), cand("t3", 0.985, cited("c")), policy=paused)
    assert both.outcome is Outcome.PREFETCH and both.served_ids == ["a", "b"] and both.trails == ["t1", "t2"]
    # A negative like the query (its text went uncited for this question) still holds it back.
    blocked = run(replace(own, boundary=1.0), policy=paused)
    assert (blocked.outcome, blocked.reason) == (Outcome.HINT, Reason.NOT_CITED_BEFORE)
    # Any other question stays paused, however confident.
    other = run(cand("t1", 0.99, cited("a")), policy=paused)
    assert (other.outcome, other.reason) == (Outcome.HINT, Reason.PREFETCH_PAUSED)
    # The answer says which it was (the operating point leaves questions asked again out).
    assert d.asked_again and reworded.asked_again and not other.asked_again
    assert run(replace(cand("t1", 0.85, cited("a")), cited_bar=0.6), policy=paused).asked_again
    assert not run(cand("t1", 0.9, cited("a"))).asked_again


def test_a_trail_cited_before_for_this_question_is_served_over_a_pause_a_higher_cut_and_a_rival():
    from dataclasses import replace

    paused = replace(POLICY, prefetch_paused=True)
    cited_before = replace(cand("t1", 0.85, cited("a")), cited_bar=0.6)   # confidence ≈ 0.73
    d = run(cited_before, policy=paused)
    assert (d.outcome, d.reason, d.served_ids) == (Outcome.PREFETCH, Reason.MATCH, ["a"])
    # Under its bar, or without the positive, the pause holds.
    assert run(replace(cited_before, cited_bar=0.8), policy=paused).reason is Reason.LOW_CONFIDENCE
    assert run(replace(cited_before, cited_bar=None), policy=paused).reason is Reason.LOW_CONFIDENCE
    # A rival within the margin citing other sections: the agent chose this trail before.
    rival = cand("t2", 0.84, cited("b"))
    assert run(cited_before, rival, policy=paused).outcome is Outcome.PREFETCH
    assert run(replace(cited_before, cited_bar=None), rival).reason is Reason.AMBIGUOUS
    # A rival is merged as text only when it clears its own cut: paused and uncited, it does not.
    merged = run(cited_before, cand("t3", 0.85, cited("c")), policy=paused)
    assert merged.served_ids == ["a"] and merged.trails == ["t1"]
    # A negative like the query still holds the trail back.
    blocked = run(replace(cited_before, boundary=0.8), policy=paused)
    assert (blocked.outcome, blocked.reason) == (Outcome.HINT, Reason.NOT_CITED_BEFORE)


def test_a_trail_cited_before_for_this_question_outranks_a_more_confident_one():
    from dataclasses import replace

    paused = replace(POLICY, prefetch_paused=True)
    chosen = replace(cand("t1", 0.85, cited("a")), cited_bar=0.6)   # confidence ≈ 0.73
    louder = cand("t2", 0.89, cited("b"))                           # confidence ≈ 0.86
    d = run(louder, chosen, policy=paused)
    assert (d.outcome, d.reason, d.trail_id, d.served_ids) == (Outcome.PREFETCH, Reason.MATCH, "t1", ["a"])
    # Not paused, the louder one clears the tenant's cut on its own and joins as text.
    open_cut = run(louder, chosen)
    assert open_cut.trail_id == "t1" and open_cut.outcome is Outcome.PREFETCH
    # Without the positive, or with a negative like the query beside it, the louder one leads.
    for plain in (replace(chosen, cited_bar=None), replace(chosen, boundary=0.8)):
        d = run(louder, plain, policy=paused)
        assert d.trail_id == "t2" and d.outcome is Outcome.HINT, d


def test_a_question_asked_as_recorded_needs_no_rival_evidence_unless_something_could_overrule_it():
    from cachecore.engine.decide import asked_as_recorded

    def asked(*candidates: Candidate, policy: Policy = POLICY) -> bool:
        return asked_as_recorded(query=QUERY, candidates=list(candidates), policy=policy)

    verbatim = cand("t1", 1.0, cited("a", coverage=0.9), question=QUERY)
    other = cand("t2", 0.9, cited("b"))
    assert asked(other, verbatim)
    assert not asked(other)                                                      # no trail recorded for it
    assert not asked(cand("t1", 1.0, cited("a", changed=True), question=QUERY))  # its text changed
    assert not asked(cand("t1", 1.0, cited("a", None), question=QUERY))          # kept by hash only
    assert not asked(cand("t1", 1.0, cited("a", hidden=True), question=QUERY))   # hidden from the scope
    assert not asked(cand("t1", 1.0, cited("a", unverified=True), question=QUERY))
    assert not asked(cand("t1", 1.0, cited("a", coverage=0.1), question=QUERY))  # under the coverage floor
    blocked = Candidate("t1", 1.0, QUERY, [], (cited("a"),), boundary=1.0)       # a negative like the query at 1
    assert not asked(blocked)
    positive = Candidate("t2", 0.9, "another question", [], (cited("b"),), cited_bar=0.5)
    assert not asked(verbatim, positive)                                         # a positive would outrank it
    # Whenever it says so, decide serves that trail's text at confidence 1, rivals or none.
    for d in (run(other, verbatim), decide(query=QUERY, candidates=[other, verbatim], policy=POLICY, budget=1000,
                                           idf=IDF, rivals=[("b", 0.99)], sentence_rivals=[("b", 0.99)])):
        assert (d.outcome, d.trail_id, d.confidence) == (Outcome.PREFETCH, "t1", 1.0)
