"""Feedback on a recall after which a pending trail was recorded: negative quarantines the
pending trail (it is never served, and later positive feedback does not revive it)."""

from cachecore.models import Trail, TrailStatus

TEXT = "Acme reads its configuration from /etc/acme/acme.toml."
QUERY = "Where does Acme read its configuration from?"


def test_negative_feedback_quarantines_the_pending_trail_recorded_after_the_recall(caller):
    caller.upsert({"doc#config": TEXT})
    first = caller.recall(QUERY)
    assert first["outcome"] == "miss"
    recorded = caller.record(query=QUERY, cited=["doc#config"], accepted=None, recall_id=first["recall_id"])
    trail_id = recorded.json()["trail_id"]
    assert recorded.json()["status"] == "pending"

    response = caller.post(f"/api/v1/recalls/{first['recall_id']}/feedback", {"accepted": False})
    assert response.status_code == 200
    assert caller.get(f"/api/v1/trails/{trail_id}").json()["status"] == "quarantined"
    assert caller.recall(QUERY)["outcome"] == "miss"

    # A change of mind afterwards does not release it: quarantine is for an operator to review.
    assert caller.post(f"/api/v1/recalls/{first['recall_id']}/feedback", {"accepted": True}).status_code == 200
    assert Trail.objects.get(pk=trail_id).status == TrailStatus.QUARANTINED
    assert caller.recall(QUERY)["outcome"] == "miss"


def test_negative_feedback_leaves_a_pending_trail_of_another_recall_alone(caller):
    caller.upsert({"doc#config": TEXT})
    first, second = caller.recall(QUERY), caller.recall(QUERY + " please")
    trail_id = caller.record(query=QUERY, cited=["doc#config"], accepted=None,
                             recall_id=second["recall_id"]).json()["trail_id"]
    caller.post(f"/api/v1/recalls/{first['recall_id']}/feedback", {"accepted": False})
    assert Trail.objects.get(pk=trail_id).status == TrailStatus.PENDING
