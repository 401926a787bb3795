"""The outcome table, by behaviour through the API: prefetch, hint, miss, stale, pending,
quarantined, expired, escalated, budget."""

from datetime import timedelta
from urllib.parse import quote

import time_machine
from django.utils import timezone

from cachecore.engine.text import content_hash
from cachecore.models import Section, Trail

INSTALL = "To install Acme on Debian, run apt install acme. The service starts at boot."
CONFIG = "Acme reads its configuration from /etc/acme/acme.toml. Restart the service after editing it."
QUERY = "How do I install Acme on Debian?"


def _trail(caller, query=QUERY, cited=("doc#install", "doc#config"), **kw):
    caller.upsert({"doc#install": INSTALL, "doc#config": CONFIG})
    response = caller.record(query=query, cited=list(cited), **kw)
    assert response.status_code == 201, response.content
    return response.json()


def test_recall_of_a_recorded_question_is_a_prefetch_with_current_text_in_citation_order(caller):
    trail = _trail(caller)
    assert trail["status"] == "active"
    body = caller.recall("how do I install acme on debian")
    assert body["outcome"] == "prefetch"
    assert body["reason"] == "match" and body["confidence"] == 1.0  # the very same question
    assert body["trail_id"] == trail["trail_id"]
    assert body["escalated"] is False
    assert body["similarity"] > 0.95
    assert 0 < body["coverage"] <= 1
    assert [s["id"] for s in body["sections"]] == ["doc#install", "doc#config"]
    assert [s["text"] for s in body["sections"]] == [INSTALL, CONFIG]
    assert all(s["status"] == "valid" for s in body["sections"])
    assert body["omitted"] == []
    assert body["steps"][0]["tool"] == "search"
    assert body["hint"] is None
    assert set(body) == {"recall_id", "outcome", "reason", "confidence", "trail_id", "similarity", "coverage",
                         "escalated", "sections",
                         "omitted", "steps", "hint", "trails"}


def test_paraphrase_hits_and_unrelated_question_misses(caller):
    trail = _trail(caller)
    para = caller.recall("What are the steps to install Acme on a Debian machine?")
    assert para["outcome"] in ("prefetch", "hint") and para["trail_id"] == trail["trail_id"]
    assert para["outcome"] == "prefetch" or para["reason"] == "low_confidence"
    miss = caller.recall("What is the refund policy for annual plans?")
    assert miss["outcome"] == "miss"
    assert miss["trail_id"] is None and miss["sections"] == []


def test_one_of_two_cited_sections_changed_gives_a_hint_naming_both(caller):
    _trail(caller)
    upsert = caller.upsert({"doc#config": CONFIG + " It may also be set with ACME_CONFIG."})
    assert upsert == {"created": 0, "updated": 1, "unchanged": 0, "invalidated_trails": 1}
    body = caller.recall(QUERY)
    assert body["outcome"] == "hint"
    assert body["sections"] == [{"id": "doc#install", "status": "valid"}, {"id": "doc#config", "status": "changed"}]
    assert "doc#install" in body["hint"] and "doc#config changed since" in body["hint"]
    assert all("text" not in s for s in body["sections"])


def test_identical_rewrite_is_unchanged_and_invalidates_nothing(caller):
    trail = _trail(caller)
    assert caller.upsert({"doc#install": INSTALL}) == {
        "created": 0, "updated": 0, "unchanged": 1, "invalidated_trails": 0}
    assert caller.get(f"/api/v1/trails/{trail['trail_id']}").json()["status"] == "active"
    assert caller.recall(QUERY)["outcome"] == "prefetch"


def test_all_cited_changed_marks_the_trail_stale_and_recall_misses(caller):
    trail = _trail(caller)
    upsert = caller.upsert({"doc#install": INSTALL + " v2", "doc#config": CONFIG + " v2"})
    assert upsert["invalidated_trails"] == 1
    assert caller.get(f"/api/v1/trails/{trail['trail_id']}").json()["status"] == "stale"
    assert caller.recall(QUERY)["outcome"] == "miss"


def test_read_time_validation_marks_stale_even_without_invalidation(caller):
    trail = _trail(caller)
    # A change that bypassed the upsert path (e.g. a lost fan-out): recall still checks hashes.
    for sid in ("doc#install", "doc#config"):
        Section.objects.filter(external_id=sid).update(text="other", sha256=content_hash("other"))
    assert caller.recall(QUERY)["outcome"] == "miss"
    assert Trail.objects.get(pk=trail["trail_id"]).status == "stale"


def test_deleted_section_counts_as_missing(caller):
    _trail(caller)
    assert caller.delete("/api/v1/sections/" + quote("doc#config", safe="")).status_code == 204
    body = caller.recall(QUERY)
    assert body["outcome"] == "hint"
    assert body["sections"][1] == {"id": "doc#config", "status": "missing"}


def test_trail_without_positive_signal_is_pending_and_never_served(caller):
    trail = _trail(caller, accepted=None)
    assert trail["status"] == "pending"
    rejected = _trail(caller, query="How do I configure Acme?", cited=["doc#config"], accepted=False)
    assert rejected["status"] == "pending"
    assert caller.recall(QUERY)["outcome"] == "miss"
    stored = Trail.objects.get(pk=trail["trail_id"])
    assert stored.expires_at - stored.created_at <= timedelta(hours=24, seconds=5)


def test_positive_feedback_activates_the_pending_trail_recorded_after_a_recall(caller):
    first = caller.recall(QUERY)
    assert first["outcome"] == "miss"
    trail = _trail(caller, accepted=None, recall_id=first["recall_id"])
    assert trail["status"] == "pending"
    response = caller.post(f"/api/v1/recalls/{first['recall_id']}/feedback", {"accepted": True})
    assert response.status_code == 200
    assert caller.get(f"/api/v1/trails/{trail['trail_id']}").json()["status"] == "active"
    assert caller.recall(QUERY)["outcome"] == "prefetch"


def test_negative_feedback_quarantines_the_served_trail(caller):
    trail = _trail(caller)
    served = caller.recall(QUERY)
    assert served["outcome"] == "prefetch"
    response = caller.post(f"/api/v1/recalls/{served['recall_id']}/feedback", {"accepted": False})
    assert response.status_code == 200
    assert response.json() == {"recall_id": served["recall_id"], "accepted": False}
    assert caller.get(f"/api/v1/trails/{trail['trail_id']}").json()["status"] == "quarantined"
    assert caller.recall(QUERY)["outcome"] == "miss"


def test_expired_trail_is_never_served(caller):
    caller.tenant.trail_ttl_days = 3
    caller.tenant.save()
    _trail(caller)
    assert caller.recall(QUERY)["outcome"] == "prefetch"
    with time_machine.travel(timezone.now() + timedelta(days=3, minutes=1)):
        assert caller.recall(QUERY)["outcome"] == "miss"


def test_coverage_under_the_floor_escalates_a_prefetch_to_a_hint(make_caller):
    caller = make_caller(coverage_floor=0.99)
    _trail(caller)
    body = caller.recall("What are the steps to install Acme on a Debian machine?")
    assert body["outcome"] == "hint"
    assert body["escalated"] is True
    assert body["coverage"] < 0.99
    assert "may not answer" in body["hint"]


def test_similarity_threshold_is_the_tenants(make_caller):
    strict = make_caller(similarity_threshold=0.999)
    _trail(strict)
    assert strict.recall("What are the steps to install Acme on a Debian machine?")["outcome"] == "miss"


def test_budget_omits_sections_that_do_not_fit(caller):
    _trail(caller)
    body = caller.recall(QUERY, budget_tokens=20)
    assert body["outcome"] == "prefetch"
    served = [s for s in body["sections"] if "text" in s]
    assert [s["id"] for s in served] == ["doc#install"]
    assert body["omitted"] == ["doc#config"]


def test_tenant_default_budget_applies_without_budget_tokens(make_caller):
    caller = make_caller(default_budget_tokens=5)
    _trail(caller)
    body = caller.recall(QUERY)
    assert body["omitted"] == ["doc#install", "doc#config"]
    assert all("text" not in s for s in body["sections"])


def test_scopes_never_mix(caller):
    _trail(caller, scope="paper:1")
    assert caller.recall(QUERY, scope="paper:1")["outcome"] == "prefetch"
    assert caller.recall(QUERY, scope="paper:2")["outcome"] == "miss"
    assert caller.recall(QUERY)["outcome"] == "miss"
