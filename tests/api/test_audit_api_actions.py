"""API actions that change or hand out data are audited, each in its own transaction, with
the key that did it: trail and section deletes, export downloads, feedback quarantines."""

from __future__ import annotations

from urllib.parse import quote

from tenants.models import AuditAction, AuditEntry

TEXT = "Acme reads its configuration from /etc/acme/acme.toml."
QUERY = "Where does Acme read its configuration from?"


def _entries(caller, action):
    return list(AuditEntry.objects.filter(tenant=caller.tenant, action=action))


def test_an_api_trail_delete_is_audited_with_the_key(caller):
    caller.upsert({"doc#config": TEXT})
    trail_id = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    assert caller.delete(f"/api/v1/trails/{trail_id}").status_code == 204
    (entry,) = _entries(caller, AuditAction.TRAIL_DELETE)
    assert entry.details["trail_ids"] == [trail_id]
    assert entry.actor_label == f"apikey:{caller.raw_key[:11]}"


def test_an_api_section_delete_is_audited_with_the_key(caller):
    caller.upsert({"doc#config": TEXT})
    assert caller.delete("/api/v1/sections/" + quote("doc#config", safe="")).status_code == 204
    (entry,) = _entries(caller, AuditAction.SECTION_DELETE)
    assert entry.target == "doc#config" and entry.actor_label == f"apikey:{caller.raw_key[:11]}"


def test_negative_feedback_that_quarantines_a_trail_is_audited(caller):
    caller.upsert({"doc#config": TEXT})
    trail_id = caller.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    recall = caller.recall(QUERY)
    assert recall["outcome"] == "prefetch"
    response = caller.post(f"/api/v1/recalls/{recall['recall_id']}/feedback", {"accepted": False})
    assert response.status_code == 200
    (entry,) = _entries(caller, AuditAction.FEEDBACK_QUARANTINE)
    assert entry.details == {"trail_ids": [trail_id], "recall_id": recall["recall_id"]}
    assert entry.actor_label == f"apikey:{caller.raw_key[:11]}"
    # Already quarantined: a second "no" changes nothing and writes nothing.
    caller.post(f"/api/v1/recalls/{recall['recall_id']}/feedback", {"accepted": False})
    assert len(_entries(caller, AuditAction.FEEDBACK_QUARANTINE)) == 1
