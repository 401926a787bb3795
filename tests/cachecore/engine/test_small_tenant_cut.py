"""A tenant with fewer sections than the scorer was fitted on applies a higher prefetch cut
(``decide.small_tenant_prefetch_cut``): its margins over the best other section come out larger for
every query, so the same confidence is wrong more often. Hints, a question asked as recorded and
a trail's own cited bar are left as they are. No database."""

from dataclasses import replace

import pytest

from cachecore.engine.decide import (
    FITTED_SECTIONS,
    SMALL_TENANT_EXPONENT,
    Candidate,
    Cited,
    Policy,
    Reason,
    decide,
    small_tenant_prefetch_cut,
)
from cachecore.engine.evidence import FEATURES, Idf
from cachecore.engine.outcome import Outcome
from cachecore.engine.scorer import MatchScorer
from cachecore.engine.text import content_hash

# Confidence = sigmoid(20 · (cosine − 0.8)): 0.9 → 0.88, 0.95 → 0.95.
SCORER = MatchScorer(
    weights=tuple(20.0 if f == "cosine" else 0.0 for f in FEATURES), bias=-16.0,
    means=(0.0,) * len(FEATURES), scales=(1.0,) * len(FEATURES), prefetch_confidence=0.87, hint_confidence=0.2,
)
POLICY = Policy(scorer=SCORER, similarity_threshold=0.5, prefetch_confidence=0.87, hint_confidence=0.2,
                coverage_floor=0.0)
QUERY = "how do i install acme on debian"


def candidate(similarity: float, question: str = "install acme on a debian box please") -> Candidate:
    text = "Run apt install acme."
    return Candidate("t1", similarity, question, [], (Cited("a", content_hash(text), content_hash(text), text, 10),))


def run(c: Candidate, sections: int):
    return decide(query=QUERY, candidates=[c], policy=POLICY, budget=1000, idf=Idf(sections=sections, df={}))


@pytest.mark.parametrize("sections", [0, FITTED_SECTIONS, FITTED_SECTIONS + 1, 100_000])
def test_from_the_fitted_size_up_or_unknown_the_cut_is_the_setting(sections):
    assert small_tenant_prefetch_cut(0.87, sections) == 0.87


def test_below_the_fitted_size_the_cut_rises_towards_one_as_the_tenant_shrinks():
    cuts = [small_tenant_prefetch_cut(0.87, n) for n in (300, 147, 80, 20, 1)]
    assert cuts == sorted(cuts) and len(set(cuts)) == len(cuts)
    assert all(0.87 < c < 1.0 for c in cuts)
    expected = 1 - 0.13 * (147 / FITTED_SECTIONS) ** SMALL_TENANT_EXPONENT
    assert small_tenant_prefetch_cut(0.87, 147) == pytest.approx(expected, abs=1e-6)
    assert small_tenant_prefetch_cut(1.0, 20) == 1.0   # prefetch off stays off


def test_a_confidence_that_prefetches_in_a_large_tenant_is_a_hint_in_a_small_one():
    large = run(candidate(0.9), FITTED_SECTIONS)
    small = run(candidate(0.9), 20)
    assert large.confidence == small.confidence  # the confidence itself is not changed
    assert large.outcome is Outcome.PREFETCH
    assert (small.outcome, small.reason) == (Outcome.HINT, Reason.LOW_CONFIDENCE)


def test_a_tenant_that_turned_the_rule_off_applies_its_setting_at_any_size():
    off = replace(POLICY, small_tenant_cut=False)
    d = decide(query=QUERY, candidates=[candidate(0.9)], policy=off, budget=1000, idf=Idf(sections=20, df={}))
    assert d.outcome is Outcome.PREFETCH


def test_the_question_asked_as_recorded_and_a_trails_own_cited_bar_still_prefetch_in_a_tiny_tenant():
    assert run(candidate(0.99, question=QUERY), 1).outcome is Outcome.PREFETCH
    cited_before = replace(candidate(0.9), cited_bar=0.85)   # a positive for a query like this one
    assert run(cited_before, 3).outcome is Outcome.PREFETCH
