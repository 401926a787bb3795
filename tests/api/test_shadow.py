"""Shadow mode: recall decides and logs what it would serve but answers miss; records still
label it; the stats estimate what serving would do."""

from cachecore.models import RecallEvent, Trail

TEXT = {"doc#config": "Set ACME_HOME to move the configuration directory.",
        "doc#logging": "Logs go to /var/log/acme; set ACME_LOG_LEVEL to change the level."}
QUERY = "How do I move the Acme configuration directory?"


def test_shadow_mode_answers_miss_and_logs_the_would_be_prefetch(make_caller):
    caller = make_caller(shadow_mode=True)
    caller.upsert(TEXT)
    trail = caller.record(query=QUERY, cited=["doc#config"]).json()
    body = caller.recall(QUERY)
    assert (body["outcome"], body["reason"], body["trail_id"], body["sections"]) == ("miss", "shadow", None, [])
    assert "shadow" not in body
    event = RecallEvent.objects.get(pk=body["recall_id"])
    assert event.outcome == "miss" and event.shadow_outcome == "prefetch" and event.reason == "match"
    assert [str(t) for t in event.trail_ids] == [trail["trail_id"]] and event.offered_ids == ["doc#config"]
    assert Trail.objects.get(pk=trail["trail_id"]).hits == 0  # nothing was served

    detailed = caller.recall(QUERY, shadow=True)
    assert detailed["outcome"] == "miss"
    assert detailed["shadow"]["outcome"] == "prefetch" and detailed["shadow"]["trail_id"] == trail["trail_id"]
    assert detailed["shadow"]["sections"] == [{"id": "doc#config", "status": "valid"}]


def test_records_label_shadow_recalls_and_the_stats_estimate_serving(make_caller):
    caller = make_caller(shadow_mode=True)
    caller.upsert(TEXT)
    caller.record(query=QUERY, cited=["doc#config"])
    cited = caller.recall(QUERY)
    caller.record(query=QUERY + " (a)", cited=["doc#config"], recall_id=cited["recall_id"])
    uncited = caller.recall(QUERY)
    caller.record(query=QUERY + " (b)", cited=["doc#logging"], recall_id=uncited["recall_id"])
    caller.recall("What is the refund policy?")
    stats = caller.get("/api/v1/stats").json()
    assert stats["prefetch"] == 0 and stats["miss"] == stats["recalls"] == 3
    shadow = stats["shadow"]
    assert shadow["recalls"] == 3 and shadow["would_prefetch"] == 2 and shadow["prefetch_labelled"] == 2
    assert shadow["estimated_false_prefetch_rate"] == 0.5
    assert RecallEvent.objects.get(pk=uncited["recall_id"]).offered_cited is False


def test_shadow_mode_can_be_limited_to_scope_prefixes(make_caller):
    caller = make_caller(shadow_mode=True, shadow_scope_prefixes=["beta:"])
    caller.upsert(TEXT)
    caller.record(query=QUERY, cited=["doc#config"])
    caller.record(query=QUERY, cited=["doc#config"], scope="beta:eu")
    assert caller.recall(QUERY)["outcome"] == "prefetch"
    assert caller.recall(QUERY, scope="beta:eu")["reason"] == "shadow"
