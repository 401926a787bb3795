"""Boundaries that learn from negatives: a trail offered (text or hint) whose sections the next
record leaves uncited for others gets a bar for queries like that one; other queries are served
as before, and a citation for a query like it brings the bar down."""

import pytest

from cachecore.engine.boundary import RECOVERY_MARGIN
from cachecore.models import RecallEvent, Trail
from tests.api.acme import NEAR_MISS, QUERY, SAME_NEED, TEXT


@pytest.fixture
def caller(make_caller):
    """These tests are about labels, bars and what a recall serves at the tenant's cut, on a few
    sections: a tenant that small raises its cut above a rewording's confidence
    (``small_tenant_cut``, tests/cachecore/engine/test_small_tenant_cut.py), so it is off here."""
    return make_caller(small_tenant_cut=False)

NEAR_MISS_AGAIN = "Can the Acme log directory be moved?"


def _permissive(caller) -> None:
    # A tenant whose cut lets close questions through: the negatives are what stops them.
    caller.tenant.prefetch_confidence, caller.tenant.hint_confidence = 0.05, 0.01
    caller.tenant.save(update_fields=["prefetch_confidence", "hint_confidence"])


def test_an_uncited_offer_raises_the_bar_for_queries_like_it_only(caller):
    caller.upsert(TEXT)
    _permissive(caller)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    first = caller.recall(NEAR_MISS)
    assert (first["outcome"], first["trail_id"]) == ("prefetch", trail)
    # The agent answered from the log section (its record is pending: it labels, never serves).
    caller.record(query=NEAR_MISS, cited=["doc#logging"], recall_id=first["recall_id"], accepted=None)
    event = RecallEvent.objects.get(pk=first["recall_id"])
    assert str(event.exemplar_for) == trail and event.exemplar_bar == first["confidence"]
    assert Trail.objects.get(pk=trail).prefetch_boundary == first["confidence"]

    # The near miss itself asked again scores exactly its bar (as logged): held back too.
    repeat = caller.recall(NEAR_MISS)
    assert (repeat["outcome"], repeat["reason"], repeat["confidence"]) == ("hint", "not_cited_before",
                                                                           first["confidence"]), repeat
    again = caller.recall(NEAR_MISS_AGAIN)
    assert again["trail_id"] == trail and again["outcome"] == "hint", again
    assert again["reason"] == "not_cited_before"
    # Another question about the trail's own need is not like the near miss: served as before.
    same = caller.recall(SAME_NEED)
    assert (same["outcome"], same["trail_id"]) == ("prefetch", trail), same
    # The agent read the hinted section after all and cited it: the bar for queries like that
    # one falls under that confidence, and the next one is served.
    caller.record(query=NEAR_MISS_AGAIN, cited=["doc#config"], recall_id=again["recall_id"], accepted=None)
    lowered = RecallEvent.objects.get(pk=first["recall_id"]).exemplar_bar
    assert abs(lowered - (again["confidence"] - RECOVERY_MARGIN)) < 1e-3
    assert Trail.objects.get(pk=trail).prefetch_boundary == lowered
    assert caller.recall(NEAR_MISS_AGAIN)["outcome"] == "prefetch"


def test_an_uncited_hint_is_a_negative_too_and_a_citation_under_the_cut_clears_it(caller):
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    hinted = caller.recall(NEAR_MISS)
    assert (hinted["outcome"], hinted["trail_id"]) == ("hint", trail)  # under the default cut
    caller.record(query=NEAR_MISS, cited=["doc#logging"], recall_id=hinted["recall_id"], accepted=None)
    assert str(RecallEvent.objects.get(pk=hinted["recall_id"]).exemplar_for) == trail
    assert Trail.objects.get(pk=trail).prefetch_boundary == hinted["confidence"]
    # The trail's own question is nowhere near the bar: still served.
    assert caller.recall(QUERY)["outcome"] == "prefetch"
    # A citation for a query like the negative, at a confidence under the tenant's cut, clears it.
    like = caller.recall(NEAR_MISS_AGAIN)
    caller.record(query=NEAR_MISS_AGAIN, cited=["doc#config"], recall_id=like["recall_id"], accepted=None)
    event = RecallEvent.objects.get(pk=hinted["recall_id"])
    assert event.exemplar_for is None and event.exemplar_embedding is None
    assert Trail.objects.get(pk=trail).prefetch_boundary is None


def test_a_record_that_cites_the_offered_sections_sets_a_positive_and_one_after_a_miss_nothing(caller):
    caller.upsert(TEXT)
    caller.record(query=QUERY, cited=["doc#config"])
    served = caller.recall(QUERY)
    caller.record(query=QUERY, cited=["doc#config", "doc#logging"], recall_id=served["recall_id"], accepted=None)
    miss = caller.recall("What is the refund policy?")
    caller.record(query="What is the refund policy?", cited=["doc#logging"], recall_id=miss["recall_id"],
                  accepted=None)
    kept = list(RecallEvent.objects.filter(tenant=caller.tenant, exemplar_for__isnull=False))
    assert [(str(e.pk), str(e.exemplar_for), e.exemplar_cited) for e in kept] == [
        (served["recall_id"], served["trail_id"], True)]
    assert kept[0].exemplar_bar == pytest.approx(served["confidence"] - RECOVERY_MARGIN)
    assert Trail.objects.get(pk=served["trail_id"]).prefetch_boundary is None
