"""Positives: an offer whose sections the next record cited is kept for its trail, and the same
question asked again is served the trail's text above just under that confidence, even where the
tenant's cut is higher or prefetch is paused tenant-wide. A rewording or a near miss is judged as
before, and a later uncited offer for the same question holds the trail back again."""

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

REWORDED = "Which variable relocates the config folder of Acme?"
BOTH = "How do I move Acme's config and log directories?"


def _paused(caller) -> None:
    caller.tenant.prefetch_paused = True
    caller.tenant.save(update_fields=["prefetch_paused"])


def _config_and_logs(caller, *, prefetch: float, hint: float) -> tuple[str, str]:
    """The two sections, a trail for each (configuration, logs), and the tenant's cuts."""
    caller.upsert(TEXT)
    config = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    logs = caller.record(query=NEAR_MISS, cited=["doc#logging"]).json()["trail_id"]
    caller.tenant.prefetch_confidence, caller.tenant.hint_confidence = prefetch, hint
    caller.tenant.save(update_fields=["prefetch_confidence", "hint_confidence"])
    return config, logs


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


def test_the_question_a_trail_was_recorded_for_is_served_while_prefetch_is_paused(caller):
    """The trail was recorded, with a positive signal, for this very question: that is a positive
    of its own, as an agent's citation for it would be. A rewording stays paused, and an offer
    the agent leaves uncited for other sections holds the trail back for it."""
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    _paused(caller)
    again = caller.recall(QUERY)
    assert (again["outcome"], again["reason"], again["trail_id"]) == ("prefetch", "match", trail), again
    assert [s.get("text") for s in again["sections"]] == [TEXT["doc#config"]]
    assert caller.recall(SAME_NEED)["reason"] == "prefetch_paused"
    caller.record(query=QUERY, cited=["doc#logging"], recall_id=again["recall_id"], accepted=None)
    held = caller.recall(QUERY)
    assert (held["outcome"], held["reason"], held["trail_id"]) == ("hint", "not_cited_before", trail), held


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


def test_a_record_citing_no_offered_section_keeps_a_negative_not_a_positive(caller):
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



def test_the_trail_served_beside_the_best_one_that_the_agent_cited_is_served_when_asked_again(caller):
    # A tenant whose cut lets both trails through as text, the configuration one first.
    config, logs = _config_and_logs(caller, prefetch=0.05, hint=0.01)
    first = caller.recall(BOTH)
    assert (first["outcome"], first["trails"]) == ("prefetch", [config, logs]), first
    event = RecallEvent.objects.get(pk=first["recall_id"])
    assert len(event.trail_confidences) == 2 and event.trail_confidences[0] == first["confidence"]
    # The agent answered from the log section only: the log trail is what this question asked for.
    caller.record(query=BOTH, cited=["doc#logging"], recall_id=first["recall_id"], accepted=None)
    event.refresh_from_db()
    assert (str(event.exemplar_for), event.exemplar_cited) == (logs, True)
    assert abs(event.exemplar_bar - (event.trail_confidences[1] - RECOVERY_MARGIN)) < 1e-6
    assert Trail.objects.get(pk=logs).has_positives and not Trail.objects.get(pk=config).has_positives

    _paused(caller)
    again = caller.recall(BOTH)
    assert (again["outcome"], again["reason"], again["trail_id"]) == ("prefetch", "match", logs), again
    assert [s.get("text") for s in again["sections"]] == [TEXT["doc#logging"]]


def test_a_candidate_the_answer_passed_over_that_the_agent_cited_is_served_when_asked_again(caller):
    """The answer named the configuration trail only (a hint); the agent answered from the log
    section, which another trail cites and the recall scored but did not name. That trail is what
    this question asked for: the recall keeps the hint's negative and, beside it, the log trail's
    positive, and the question asked again is served the log trail's text."""
    config, logs = _config_and_logs(caller, prefetch=0.99, hint=0.01)
    first = caller.recall(SAME_NEED)
    assert (first["outcome"], first["trails"]) == ("hint", [config]), first
    event = RecallEvent.objects.get(pk=first["recall_id"])
    assert [str(t) for t in event.passed_trail_ids] == [logs], event.passed_trail_ids
    assert len(event.passed_confidences) == 1 and event.passed_confidences[0] >= 0.01

    caller.record(query=SAME_NEED, cited=["doc#logging"], recall_id=first["recall_id"], accepted=None)
    event.refresh_from_db()
    assert event.offered_cited is False   # the label of the offer is unchanged: uncited
    assert (str(event.exemplar_for), event.exemplar_cited) == (config, False)
    assert abs(event.exemplar_bar - first["confidence"]) < 1e-6
    assert str(event.chosen_for) == logs
    assert abs(event.chosen_bar - (event.passed_confidences[0] - RECOVERY_MARGIN)) < 1e-6
    assert Trail.objects.get(pk=logs).has_positives and not Trail.objects.get(pk=config).has_positives

    _paused(caller)
    again = caller.recall(SAME_NEED)
    assert (again["outcome"], again["reason"], again["trail_id"]) == ("prefetch", "match", logs), again
    assert [s.get("text") for s in again["sections"]] == [TEXT["doc#logging"]]
    # A rewording is judged as before (paused: a hint at most).
    assert caller.recall(REWORDED)["outcome"] != "prefetch"


def test_served_text_the_agent_left_uncited_for_a_passed_over_trail_keeps_both_lessons(caller):
    """Text served and left uncited keeps its negative (it holds that text back for queries like
    the recall's); the passed-over trail the agent cited gets its positive beside it. When the
    configuration trail is later cited for a query like it and its negative is cleared, the
    entry keeps the log trail's positive as its exemplar."""
    config, logs = _config_and_logs(caller, prefetch=0.02, hint=0.01)
    first = caller.recall(SAME_NEED)
    assert (first["outcome"], first["trails"]) == ("prefetch", [config]), first
    caller.record(query=SAME_NEED, cited=["doc#logging"], recall_id=first["recall_id"], accepted=None)
    event = RecallEvent.objects.get(pk=first["recall_id"])
    assert (str(event.exemplar_for), event.exemplar_cited, str(event.chosen_for)) == (config, False, logs)
    assert Trail.objects.get(pk=config).prefetch_boundary == event.exemplar_bar
    again = caller.recall(SAME_NEED)
    assert (again["outcome"], again["trail_id"]) == ("prefetch", logs), again

    # The configuration trail cited for the same question (explicit approval of a recall like it)
    # clears its negative; the log trail's positive stays, now as the entry's exemplar.
    caller.tenant.prefetch_confidence = 0.9
    caller.tenant.save(update_fields=["prefetch_confidence"])
    from cachecore.services.trails import trail_boundary_learn

    trail_boundary_learn(tenant=caller.tenant, trail_id=config, confidence=0.5, cited=True)
    event.refresh_from_db()
    assert (str(event.exemplar_for), event.exemplar_cited, event.chosen_for) == (logs, True, None)
    assert Trail.objects.get(pk=config).prefetch_boundary is None
