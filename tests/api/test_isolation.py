"""Isolation beyond the basic 404s: scope-limited keys (trail delete, feedback, stats) and
tenants sharing section ids or handing each other recall ids. Literal URLs."""

from urllib.parse import quote

from cachecore.models import RecallEvent, Trail, TrailStatus

TEXT = "Acme reads its configuration from /etc/acme/acme.toml."
OTHER_TEXT = "Globex keeps its settings in the Windows registry."
QUERY = "Where does Acme read its configuration from?"


def _trail(caller, scope="default"):
    caller.upsert({"doc#config": TEXT})
    response = caller.record(query=QUERY, cited=["doc#config"], scope=scope)
    assert response.status_code == 201
    return response.json()["trail_id"]


# ---- scope-limited keys ------------------------------------------------------------------------

def test_a_scope_limited_key_cannot_delete_a_trail_in_another_scope(make_caller, caller):
    limited = make_caller(tenant=caller.tenant, scopes=["paper:"])
    outside = _trail(caller, scope="default")
    inside = _trail(caller, scope="paper:7")
    assert limited.delete(f"/api/v1/trails/{outside}").status_code == 404
    assert Trail.objects.filter(pk=outside).exists()
    assert limited.delete(f"/api/v1/trails/{inside}").status_code == 204
    assert not Trail.objects.filter(pk=inside).exists()


def test_a_scope_limited_key_cannot_give_feedback_on_another_scopes_recall(make_caller, caller):
    limited = make_caller(tenant=caller.tenant, scopes=["paper:"])
    trail_id = _trail(caller, scope="default")
    served = caller.recall(QUERY)
    assert served["outcome"] == "prefetch"
    response = limited.post(f"/api/v1/recalls/{served['recall_id']}/feedback", {"accepted": False})
    assert response.status_code == 404  # outside the key's scopes: as if it did not exist
    assert Trail.objects.get(pk=trail_id).status == TrailStatus.ACTIVE
    assert RecallEvent.objects.get(pk=served["recall_id"]).feedback is None


def test_a_scope_limited_keys_stats_count_only_its_scopes(make_caller, caller):
    limited = make_caller(tenant=caller.tenant, scopes=["paper:"])
    caller.upsert({"doc#config": TEXT}, scopes=["*"])  # served in every scope (docs/scopes.md)
    _trail(caller, scope="default")
    _trail(caller, scope="paper:7")
    caller.record(query="Something else entirely?", cited=["doc#config"], scope="default", accepted=None)
    caller.recall(QUERY, scope="default")
    caller.recall("unrelated question about invoices", scope="default")
    limited.recall(QUERY, scope="paper:7")
    stats = limited.get("/api/v1/stats").json()
    assert stats["recalls"] == 1 and stats["prefetch"] == 1 and stats["miss"] == 0
    assert stats["trails"] == {"active": 1, "pending": 0, "stale": 0, "quarantined": 0}
    assert limited.get("/api/v1/stats?scope=paper:7").json()["recalls"] == 1
    assert limited.get("/api/v1/stats?scope=default").status_code == 403
    everything = caller.get("/api/v1/stats").json()
    assert everything["recalls"] == 3 and everything["trails"]["active"] == 2 and everything["trails"]["pending"] == 1


# ---- tenants -----------------------------------------------------------------------------------

def test_another_tenant_upserting_or_deleting_the_same_section_id_leaves_this_tenants_trails_alone(caller,
                                                                                                    outsider):
    trail_id = _trail(caller)
    changed = outsider.upsert({"doc#config": OTHER_TEXT})
    assert changed["created"] == 1 and changed["invalidated_trails"] == 0
    assert outsider.upsert({"doc#config": OTHER_TEXT + " Updated."})["invalidated_trails"] == 0
    assert outsider.delete("/api/v1/sections/" + quote("doc#config", safe="")).status_code == 204
    assert Trail.objects.get(pk=trail_id).status == TrailStatus.ACTIVE
    served = caller.recall(QUERY)
    assert served["outcome"] == "prefetch" and served["trail_id"] == trail_id
    assert served["sections"] == [{"id": "doc#config", "status": "valid", "text": TEXT}]
    assert caller.get("/api/v1/sections/" + quote("doc#config", safe="")).json()["text"] == TEXT


def test_another_tenants_recall_id_in_a_record_is_refused_and_writes_nothing(caller, outsider):
    _trail(caller)
    theirs = caller.recall(QUERY)["recall_id"]
    outsider.upsert({"doc#config": OTHER_TEXT})
    response = outsider.record(query=QUERY, cited=["doc#config"], recall_id=theirs)
    assert response.status_code == 400
    assert response.json()["fields"] == {"recall_id": ["no such recall for this tenant"]}
    assert not Trail.objects.filter(tenant=outsider.tenant).exists()
    assert RecallEvent.objects.get(pk=theirs).recorded_trail_id is None
