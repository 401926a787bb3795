"""Labels from behaviour: a record naming the recall it followed says whether the agent cited
what was offered; a trail whose served text went uncited stops prefetching at that confidence
and recovers when a later record cites it."""

from cachecore.models import RecallEvent, Trail

TEXT = {"doc#config": "Set ACME_HOME to move the configuration directory.",
        "doc#logging": "Logs go to /var/log/acme; set ACME_LOG_LEVEL to change the level."}
QUERY = "How do I move the Acme configuration directory?"


def test_an_uncited_prefetch_sets_a_boundary_and_a_later_citation_lifts_it(caller):
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()
    first = caller.recall(QUERY)
    assert first["outcome"] == "prefetch"
    # The agent answered from another section: the served text was not what it needed.
    caller.record(query=QUERY + " (1)", cited=["doc#logging"], recall_id=first["recall_id"])
    event = RecallEvent.objects.get(pk=first["recall_id"])
    assert event.offered_cited is False and event.offered_ids == ["doc#config"]
    assert Trail.objects.get(pk=trail["trail_id"]).prefetch_boundary == 1.0

    second = caller.recall(QUERY)
    assert (second["outcome"], second["reason"], second["trail_id"]) == ("hint", "not_cited_before",
                                                                         trail["trail_id"])
    # After the hint, the agent read the hinted section and cited it: the boundary falls.
    caller.record(query=QUERY + " (2)", cited=["doc#config"], recall_id=second["recall_id"])
    assert RecallEvent.objects.get(pk=second["recall_id"]).offered_cited is True
    assert Trail.objects.get(pk=trail["trail_id"]).prefetch_boundary < 1.0
    assert caller.recall(QUERY)["outcome"] == "prefetch"


def test_positive_feedback_counts_like_a_citation(caller):
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()
    Trail.objects.filter(pk=trail["trail_id"]).update(prefetch_boundary=1.0)
    hinted = caller.recall(QUERY)
    assert hinted["reason"] == "not_cited_before"
    assert caller.post(f"/api/v1/recalls/{hinted['recall_id']}/feedback", {"accepted": True}).status_code == 200
    assert Trail.objects.get(pk=trail["trail_id"]).prefetch_boundary is None or \
        Trail.objects.get(pk=trail["trail_id"]).prefetch_boundary < 1.0
    assert caller.recall(QUERY)["outcome"] == "prefetch"


def test_a_record_after_a_miss_is_no_label(caller):
    caller.upsert(TEXT)
    miss = caller.recall("What is the refund policy?")
    assert miss["outcome"] == "miss"
    caller.record(query="What is the refund policy?", cited=["doc#logging"], recall_id=miss["recall_id"])
    assert RecallEvent.objects.get(pk=miss["recall_id"]).offered_cited is None
