"""The evidence against a trail whose cited text is not what answers the query: another
section of the tenant covers the query better (rival), or the query names a release, number or
identifier the cited text does not hold. Pure functions and decide(), no database."""

import math

from cachecore.engine.decide import Candidate, Cited, Policy, decide
from cachecore.engine.evidence import FEATURES, Idf, rival_coverage, specifics_unexplained
from cachecore.engine.scorer import default_match_scorer
from cachecore.engine.text import content_hash

IDF = Idf(sections=50, df={})
QUERY = "how do i set the visibility timeout for the redis broker"
TEXT = "The visibility timeout defines the number of seconds to wait for the worker to acknowledge the task."


def _cited(section_id: str, text: str, coverage: float) -> Cited:
    h = content_hash(text)
    return Cited(section_id, h, h, text, 20, coverage=coverage, trail_coverage=0.8)


def _decide(rivals):
    policy = Policy(scorer=default_match_scorer(), similarity_threshold=0.3, prefetch_confidence=0.9,
                    hint_confidence=0.05, coverage_floor=0.0)
    candidate = Candidate("t1", 0.8, "what does the visibility timeout of the redis transport mean", [],
                          (_cited("broker#visibility", TEXT, 0.7),))
    return decide(query=QUERY, candidates=[candidate], policy=policy, budget=1000, idf=IDF, rivals=rivals)


def test_the_rival_is_the_best_section_the_trail_does_not_cite():
    best = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    assert rival_coverage(best, ["a"]) == 0.8
    assert rival_coverage(best, ["b"]) == 0.9
    # Every listed section cited: the last one listed bounds the rest from above.
    assert rival_coverage(best, ["a", "b", "c"]) == 0.7
    assert rival_coverage([], ["a"]) is None


def test_a_section_covering_the_query_better_lowers_the_confidence():
    alone = _decide([("broker#visibility", 0.7), ("other", 0.4)])
    beaten = _decide([("broker#prefetch", 0.85), ("broker#visibility", 0.7)])
    unknown = _decide([])
    margin = FEATURES.index("rival_margin")
    assert alone.scored[0].features[margin] > 0 > beaten.scored[0].features[margin]
    assert unknown.scored[0].features[FEATURES.index("rival_known")] == 0.0
    assert beaten.confidence < alone.confidence


def test_specifics_the_cited_text_lacks_count_against_the_match():
    text = "celery worker --max-tasks-per-child sets how many tasks a pool process runs (since 5.2)."
    question = "limit the tasks a worker child runs"
    assert specifics_unexplained("how do i use --max-tasks-per-child", question, text) == 0.0
    assert specifics_unexplained("how did --max-tasks-per-child work in 3.1", question, text) == 0.5
    assert specifics_unexplained("how do i use --max-memory-per-child", question, text) == 1.0
    # A number is a number: "4" is not held by "404".
    assert specifics_unexplained("what changed in 4", "what changed", "see error 404") == 1.0
    assert specifics_unexplained("no specifics here", question, text) == 0.0
    assert specifics_unexplained("what changed in 4", question, None) == 0.0


def test_a_text_that_restates_the_question_is_scored_on_the_question_evidence_alone():
    from cachecore.engine.scorer import RESTATES_QUESTION, default_question_scorer, scorer_for

    document, question = default_match_scorer(), default_question_scorer()
    assert scorer_for(RESTATES_QUESTION, document=document, question=question) is question
    assert scorer_for(RESTATES_QUESTION - 0.01, document=document, question=question) is document
    assert scorer_for(None, document=document, question=question) is document
    assert scorer_for(0.99, document=document, question=None) is document
    assert "rival_margin" not in question.features and "rival_margin" in document.features
    # The question scorer reads its own features out of the full vector: the rival evidence
    # cannot move it.
    vector = [0.5] * len(FEATURES)
    moved = list(vector)
    moved[FEATURES.index("rival_margin")] = -0.5
    assert question.score(vector) == question.score(moved) and document.score(vector) > document.score(moved)


def test_the_rivals_count_unless_many_sections_still_wait_for_their_chunks():
    from cachecore.engine.evidence import rivals_complete

    assert rivals_complete(pending=0, sections=0) and rivals_complete(pending=0, sections=150)
    # A large upsert whose chunks are still to come: the list of best-covering sections may miss
    # the one that answers.
    assert not rivals_complete(pending=141, sections=150)
    # The trickle of a tenant that writes all the time does not switch the evidence off.
    assert rivals_complete(pending=20, sections=100_000)
    assert not rivals_complete(pending=1001, sections=100_000)


def test_the_question_scorer_means_by_the_tenant_cuts_what_its_own_cuts_meant():
    from cachecore.engine.scorer import QUESTION_SCORER_PATH, MatchScorer, default_question_scorer

    document, own, aligned = default_match_scorer(), MatchScorer.load(QUESTION_SCORER_PATH), default_question_scorer()
    assert (aligned.hint_confidence, aligned.prefetch_confidence) == (document.hint_confidence,
                                                                      document.prefetch_confidence)

    def full(k: float) -> list[float]:
        """The evidence vector (every feature) whose question features sit k scales off their means."""
        vector = [0.0] * len(FEATURES)
        for name, m, s in zip(own.features, own.means, own.scales):
            vector[FEATURES.index(name)] = m + k * s
        return vector

    # A vector its own fit puts exactly at one of its cuts lands exactly on the document scorer's.
    for own_cut, tenant_cut in ((own.prefetch_confidence, document.prefetch_confidence),
                                (own.hint_confidence, document.hint_confidence)):
        at_cut = MatchScorer(weights=own.weights, bias=math.log(own_cut / (1 - own_cut)), means=own.means,
                             scales=own.scales, features=own.features, prefetch_confidence=own.prefetch_confidence,
                             hint_confidence=own.hint_confidence)
        assert math.isclose(at_cut.score(full(0.0)), own_cut)
        assert math.isclose(at_cut.aligned_to(document).score(full(0.0)), tenant_cut)
    # The same ranking; a scorer already at the cuts is left as it is.
    ks = (-1.0, -0.2, 0.3, 1.1)
    assert sorted(ks, key=lambda k: own.score(full(k))) == sorted(ks, key=lambda k: aligned.score(full(k)))
    assert document.aligned_to(document) is document


def test_a_trail_found_through_its_section_counts_for_less_than_through_its_question():
    # The same trail and evidence, once among the nearest questions and once found only through
    # the sections covering the query: on every corpus measured, section evidence speaks too
    # loudly for a trail whose question is not among the nearest (docs/evaluation.md).
    policy = Policy(scorer=default_match_scorer(), similarity_threshold=0.3, prefetch_confidence=0.9,
                    hint_confidence=0.05, coverage_floor=0.0)
    rivals = [("broker#visibility", 0.7), ("other", 0.4)]

    def answer(via: bool):
        candidate = Candidate("t1", 0.35, "what does the visibility timeout of the redis transport mean", [],
                              (_cited("broker#visibility", TEXT, 0.7),), via_sections=via)
        return decide(query=QUERY, candidates=[candidate], policy=policy, budget=1000, idf=IDF, rivals=rivals)

    near, via = answer(False), answer(True)
    flag = FEATURES.index("via_sections")
    assert (near.scored[0].features[flag], via.scored[0].features[flag]) == (0.0, 1.0)
    assert [f for i, f in enumerate(near.scored[0].features) if i != flag] == [
        f for i, f in enumerate(via.scored[0].features) if i != flag]
    assert via.confidence < near.confidence


def test_a_trail_whose_question_is_unrelated_is_only_a_hint_through_its_sections():
    # Found only through the section covering the query best, a trail whose question is no
    # closer to the query than unrelated questions are (cosine under the section route's floor)
    # is offered as a hint, whatever its section evidence; among the nearest questions, or with
    # a question closer than the floor, the same evidence serves its text.
    # (No first-stage threshold: a trail among the nearest questions qualifies at any cosine.)
    policy = Policy(scorer=default_match_scorer(), similarity_threshold=0.0, prefetch_confidence=0.3,
                    hint_confidence=0.05, coverage_floor=0.0, small_tenant_cut=False)  # the route, not the size
    rivals = [("broker#visibility", 0.7), ("other", 0.4)]
    floor = policy.section_route_min_similarity

    def answer(similarity: float, *, via: bool, cited_bar: float | None = None):
        candidate = Candidate("t1", similarity, "what does the visibility timeout of the redis transport mean", [],
                              (_cited("broker#visibility", TEXT, 0.7),), via_sections=via, cited_bar=cited_bar)
        return decide(query=QUERY, candidates=[candidate], policy=policy, budget=1000, idf=IDF, rivals=rivals)

    unrelated = answer(floor - 0.05, via=True)
    assert (unrelated.outcome, unrelated.reason) == ("hint", "low_confidence")
    assert unrelated.confidence == policy.hint_confidence
    assert unrelated.sections and all("text" not in s for s in unrelated.sections)
    related = answer(floor + 0.05, via=True)
    assert related.outcome == "prefetch" and related.confidence > policy.prefetch_confidence
    assert answer(floor - 0.05, via=False).outcome == "prefetch"
    # An agent that cited the trail for this very question before is not second-guessed.
    assert answer(floor - 0.05, via=True, cited_bar=policy.hint_confidence - 0.01).outcome == "prefetch"
