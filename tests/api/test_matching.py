"""Matching: merged trails and the polarity guard, through the API."""

import importlib

import pytest

from cachecore.models import RecallEvent


@pytest.fixture
def caller(make_caller):
    """These tests are about the guard and merging at the tenant's cut, on a few sections: a tenant
    that small raises its cut (``small_tenant_cut``, tests/cachecore/engine/test_small_tenant_cut.py),
    so it is off here."""
    return make_caller(small_tenant_cut=False)

recall_service = importlib.import_module("cachecore.services.recall")  # the module, not the function

SECTIONS = {
    "2fa#enable": "To turn on two-factor authentication, open Account, Security and scan the QR code.",
    "2fa#disable": "To turn off two-factor authentication, open Account, Security and choose Remove.",
    "install#debian": "On Debian, run apt install acme. The service starts automatically.",
    "install#requirements": "Acme needs 2 GB of memory and a 64-bit processor.",
    "install#ubuntu": "On Ubuntu, run apt install acme as well; snaps are not supported.",
}


def test_polarity_guard_never_serves_text_to_an_opposite_question(caller):
    caller.upsert(SECTIONS)
    trail = caller.record(query="How do I enable two-factor authentication?", cited=["2fa#enable"]).json()
    body = caller.recall("How do I disable two-factor authentication?")
    assert body["outcome"] != "prefetch" and all("text" not in s for s in body["sections"])
    if body["outcome"] == "hint":  # the scorer may already miss it; a hint names the reason
        assert body["reason"] == "polarity" and body["trail_id"] == trail["trail_id"] and "opposite" in body["hint"]
    assert RecallEvent.objects.get(pk=body["recall_id"]).reason in ("polarity", "no_match")
    assert caller.recall("How do I enable two-factor authentication?")["outcome"] == "prefetch"


def test_the_guard_turns_a_confident_opposite_question_into_a_hint(make_caller):
    # Bands open wide, so only the guard stands between the opposite question and its text.
    caller = make_caller(prefetch_confidence=0.0, hint_confidence=0.0)
    caller.upsert(SECTIONS)
    trail = caller.record(query="How do I enable two-factor authentication?", cited=["2fa#enable"]).json()
    body = caller.recall("How do I disable two-factor authentication?")
    assert (body["outcome"], body["reason"], body["trail_id"]) == ("hint", "polarity", trail["trail_id"])
    assert all("text" not in s for s in body["sections"])


def test_without_the_guard_the_opposite_question_hits_when_the_bands_let_it(make_caller):
    caller = make_caller(polarity_guard=False, prefetch_confidence=0.0, hint_confidence=0.0, small_tenant_cut=False)
    caller.upsert(SECTIONS)
    caller.record(query="How do I enable two-factor authentication?", cited=["2fa#enable"])
    assert caller.recall("How do I disable two-factor authentication?")["outcome"] == "prefetch"


def test_merged_trails_serve_the_union_of_valid_sections_best_first(make_caller, monkeypatch):
    monkeypatch.setattr(recall_service, "MERGE_SIMILARITY_MARGIN", 1.0)  # merge every matching trail
    # Bands open wide, at any tenant size: every trail over the threshold is confident enough to be merged.
    caller = make_caller(prefetch_confidence=0.0, hint_confidence=0.0, small_tenant_cut=False)
    caller.upsert(SECTIONS)
    first = caller.record(query="How do I install Acme on Debian?", cited=["install#debian",
                                                                          "install#requirements"]).json()
    second = caller.record(query="How do I install Acme on Ubuntu?", cited=["install#ubuntu",
                                                                          "install#requirements"]).json()
    body = caller.recall("How do I install Acme on Debian?")
    assert body["outcome"] == "prefetch"
    assert body["trail_id"] == first["trail_id"]
    assert body["trails"] == [first["trail_id"], second["trail_id"]]
    assert [s["id"] for s in body["sections"]] == ["install#debian", "install#requirements", "install#ubuntu"]
    assert all("text" in s for s in body["sections"])
    # A changed section of the second trail is never served; the first trail still prefetches alone.
    caller.upsert({"install#ubuntu": "changed text"})
    body = caller.recall("How do I install Acme on Debian?")
    assert [s["id"] for s in body["sections"]] == ["install#debian", "install#requirements"]
    assert body["trails"] == [first["trail_id"]]


def test_only_near_equals_of_the_best_trail_are_merged(caller):
    caller.upsert(SECTIONS)
    best = caller.record(query="How do I install Acme on Debian?", cited=["install#debian"]).json()
    caller.record(query="What does Acme need to run on Ubuntu servers?", cited=["install#ubuntu"])
    body = caller.recall("How do I install Acme on Debian?")
    assert body["outcome"] == "prefetch" and body["trails"] == [best["trail_id"]]
    assert [s["id"] for s in body["sections"]] == ["install#debian"]


def test_merging_off_serves_only_the_best_trail(make_caller):
    caller = make_caller(merge_trails=False)
    caller.upsert(SECTIONS)
    caller.record(query="How do I install Acme on Debian?", cited=["install#debian"])
    caller.record(query="How do I install Acme on Ubuntu?", cited=["install#ubuntu"])
    body = caller.recall("How do I install Acme on Debian?")
    assert [s["id"] for s in body["sections"]] == ["install#debian"] and len(body["trails"]) == 1


def test_a_stale_best_trail_gives_way_to_the_next_live_one(make_caller):
    # Bands open wide: the live trail cites a section that answers the question poorly (another
    # section covers it better), and only the stale rule is under test here.
    caller = make_caller(prefetch_confidence=0.0, hint_confidence=0.0)
    caller.upsert(SECTIONS)
    stale = caller.record(query="How do I install Acme on Debian?", cited=["install#debian"]).json()
    live = caller.record(query="How do I install Acme on Debian machines?", cited=["install#requirements"]).json()
    caller.upsert({"install#debian": "rewritten"})
    body = caller.recall("How do I install Acme on Debian?")
    assert body["trail_id"] == live["trail_id"]
    assert caller.get(f"/api/v1/trails/{stale['trail_id']}").json()["status"] == "stale"


def test_a_trail_cited_over_the_polarity_guard_is_served_when_the_question_is_asked_again(make_caller):
    """The guard reads "disable" against the trail's "enable"; the agent, offered the trail as a
    hint, cited its section (it covers both ways). That positive says the conflict is not one for
    this question: asked again, the trail's text is served."""
    caller = make_caller(prefetch_confidence=0.0, hint_confidence=0.0)
    caller.upsert({"2fa#switch": "Two-factor authentication is switched in Account, Security: choose Add to "
                                 "turn it on, Remove to turn it off."})
    trail = caller.record(query="How do I enable two-factor authentication?", cited=["2fa#switch"]).json()
    question = "How do I disable two-factor authentication?"
    first = caller.recall(question)
    assert (first["outcome"], first["reason"], first["trail_id"]) == ("hint", "polarity", trail["trail_id"])
    caller.record(query=question, cited=["2fa#switch"], recall_id=first["recall_id"], accepted=None)
    again = caller.recall(question)
    assert (again["outcome"], again["reason"], again["trail_id"]) == ("prefetch", "match", trail["trail_id"]), again
    assert [s.get("text") for s in again["sections"]] == [SECTIONS_SWITCH]


SECTIONS_SWITCH = ("Two-factor authentication is switched in Account, Security: choose Add to turn it on, "
                   "Remove to turn it off.")


def test_a_tenant_of_two_sections_hints_a_rewording_that_the_same_evidence_prefetches_with_the_rule_off(
        make_caller):
    """With far fewer sections than the scorer was fitted on, the same confidence is wrong more
    often (a close question's margin over the best other section is as large as a rewording's):
    such a tenant raises its prefetch cut. The confidence itself is the same; the question asked as
    it was recorded is still served."""
    from tests.api.acme import QUERY, SAME_NEED, TEXT

    small, off = make_caller(), make_caller(small_tenant_cut=False)
    for caller in (small, off):
        caller.upsert(TEXT)
        caller.record(query=QUERY, cited=["doc#config"])
    rule_off = off.recall(SAME_NEED)
    assert rule_off["outcome"] == "prefetch"
    body = small.recall(SAME_NEED)
    assert (body["outcome"], body["reason"], body["confidence"]) == ("hint", "low_confidence", rule_off["confidence"])
    assert all("text" not in s for s in body["sections"])
    assert small.recall(QUERY)["outcome"] == "prefetch"
