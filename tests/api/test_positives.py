"""Positives: an offer whose sections the next record cited is kept for its trail, and the same
question asked again is served the trail's text above just under that confidence, even where the
tenant's cut is higher or prefetch is paused tenant-wide. A rewording or a near miss is judged as
before, and a later uncited offer for the same question holds the trail back again."""

from cachecore.engine.boundary import RECOVERY_MARGIN
from cachecore.models import RecallEvent, Trail
from tests.api.acme import NEAR_MISS, QUERY, SAME_NEED, TEXT

REWORDED = "Which variable relocates the config folder of Acme?"


def _paused(caller) -> None:
    caller.tenant.prefetch_paused = True
    caller.tenant.save(update_fields=["prefetch_paused"])


def test_a_cited_hint_serves_the_same_question_again_while_prefetch_is_paused(caller):
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    _paused(caller)
    first = caller.recall(SAME_NEED)
    assert (first["outcome"], first["reason"], first["trail_id"]) == ("hint", "prefetch_paused", trail), first
    near = caller.recall(NEAR_MISS)
    assert near["outcome"] == "hint", near
    # The agent read the hinted section and cited it (a pending record: it labels, never serves).
    caller.record(query=SAME_NEED, cited=["doc#config"], recall_id=first["recall_id"], accepted=None)
    event = RecallEvent.objects.get(pk=first["recall_id"])
    assert (str(event.exemplar_for), event.exemplar_cited) == (trail, True)
    assert abs(event.exemplar_bar - (first["confidence"] - RECOVERY_MARGIN)) < 1e-6
    assert Trail.objects.get(pk=trail).has_positives

    again = caller.recall(SAME_NEED)
    assert (again["outcome"], again["reason"], again["trail_id"]) == ("prefetch", "match", trail), again
    assert [s.get("text") for s in again["sections"]] == [TEXT["doc#config"]]
    # Not the same question: judged as before, paused.
    for other in (REWORDED, NEAR_MISS):
        answer = caller.recall(other)
        assert answer["outcome"] != "prefetch", (other, answer)


def test_an_uncited_offer_of_the_same_question_holds_the_trail_back_again(caller):
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    _paused(caller)
    first = caller.recall(SAME_NEED)
    caller.record(query=SAME_NEED, cited=["doc#config"], recall_id=first["recall_id"], accepted=None)
    served = caller.recall(SAME_NEED)
    assert served["outcome"] == "prefetch", served
    # This time the agent answered from another section: a negative beside the positive.
    caller.record(query=SAME_NEED, cited=["doc#logging"], recall_id=served["recall_id"], accepted=None)
    held = caller.recall(SAME_NEED)
    assert (held["outcome"], held["reason"], held["trail_id"]) == ("hint", "not_cited_before", trail), held


def test_a_record_citing_only_a_merged_trails_sections_keeps_no_positive(caller):
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    _paused(caller)
    first = caller.recall(SAME_NEED)
    assert first["trail_id"] == trail
    # Cites the offered trail's section nowhere: an uncited offer (a negative), never a positive.
    caller.record(query=SAME_NEED, cited=["doc#logging"], recall_id=first["recall_id"], accepted=None)
    event = RecallEvent.objects.get(pk=first["recall_id"])
    assert event.exemplar_cited is False
    assert not Trail.objects.get(pk=trail).has_positives
