"""Bad input gets a clear 4xx naming the field, and nothing is written."""

import pytest

from cachecore.models import Citation, RecallEvent, Section, Trail

GOOD_TRAIL = {
    "scope": "default", "query": "How do I configure Acme?", "cited": ["doc#a"],
    "steps": [{"tool": "search", "args": {"q": "configure"}, "returned": ["doc#a"]}],
    "signal": {"source": "caller", "accepted": True},
}


def _counts():
    return (Section.objects.count(), Trail.objects.count(), Citation.objects.count(), RecallEvent.objects.count())


@pytest.fixture
def seeded(caller):
    caller.upsert({"doc#a": "Acme reads /etc/acme.toml.", "doc#b": "Acme logs to syslog."})
    return caller


def _with(**changes):
    body = {**GOOD_TRAIL, **changes}
    return {k: v for k, v in body.items() if v is not ...}


TRAIL_CASES = [
    ("scope", _with(scope="bad scope!")),
    ("scope", _with(scope="")),
    ("scope", _with(scope="x" * 201)),
    ("scope", _with(scope=5)),
    ("scope", _with(scope=...)),
    ("query", _with(query="")),
    ("query", _with(query="   ")),
    ("query", _with(query="q" * 4001)),
    ("query", _with(query=["a list"])),
    ("cited", _with(cited=[])),
    ("cited", _with(cited="doc#a")),
    ("cited", _with(cited=["x" * 513])),
    ("cited", _with(cited=[1])),
    ("steps", _with(steps=[{"tool": "search"}] * 101)),
    ("steps", _with(steps=[{"args": {}}])),
    ("steps", _with(steps="search")),
    ("signal", _with(signal={"source": "oracle", "accepted": True})),
    ("signal", _with(signal={"source": "user", "accepted": "yes"})),
    ("subject", _with(subject="s" * 201)),
    ("recall_id", _with(recall_id="not-a-uuid")),
]


@pytest.mark.parametrize(("field", "body"), TRAIL_CASES)
def test_invalid_record_is_400_naming_the_field_and_writes_nothing(seeded, field, body):
    before = _counts()
    response = seeded.post("/api/v1/trails", body)
    assert response.status_code == 400, response.content
    payload = response.json()
    assert payload["error"] == "invalid"
    assert field in payload["fields"], payload
    assert field in payload["detail"]
    assert _counts() == before


def test_unknown_cited_ids_are_422_naming_them_and_nothing_is_written(seeded):
    before = _counts()
    response = seeded.post("/api/v1/trails", _with(cited=["doc#a", "doc#nope", "gone:1"]))
    assert response.status_code == 422
    payload = response.json()
    assert payload["error"] == "unknown_sections"
    assert payload["unknown_ids"] == ["doc#nope", "gone:1"]
    assert "doc#nope" in payload["detail"] and "gone:1" in payload["detail"]
    assert _counts() == before


RECALL_CASES = [
    ("budget_tokens", {"scope": "default", "query": "q", "budget_tokens": -1}),
    ("budget_tokens", {"scope": "default", "query": "q", "budget_tokens": 0}),
    ("budget_tokens", {"scope": "default", "query": "q", "budget_tokens": 100_001}),
    ("budget_tokens", {"scope": "default", "query": "q", "budget_tokens": "100"}),
    ("budget_tokens", {"scope": "default", "query": "q", "budget_tokens": 1.5}),
    ("scope", {"scope": "has space", "query": "q"}),
    ("scope", {"query": "q"}),
    ("query", {"scope": "default"}),
    ("query", {"scope": "default", "query": "q" * 4001}),
    ("query", {"scope": "default", "query": None}),
]


@pytest.mark.parametrize(("field", "body"), RECALL_CASES)
def test_invalid_recall_is_400_and_logs_nothing(seeded, field, body):
    before = _counts()
    response = seeded.post("/api/v1/recall", body)
    assert response.status_code == 400, response.content
    assert field in response.json()["fields"]
    assert _counts() == before


SECTION_CASES = [
    {"sections": []},
    {"sections": [{"id": "a"}]},
    {"sections": [{"id": "", "text": "t"}]},
    {"sections": [{"id": "x" * 513, "text": "t"}]},
    {"sections": [{"id": "a", "text": 5}]},
    {"sections": [{"id": "a", "text": "t"}] + [{"id": f"s{i}", "text": "t"} for i in range(1000)]},
    {"sections": [{"id": "a", "text": "t"}, {"id": "a", "text": "u"}]},
    {"sections": "nope"},
    {},
]


@pytest.mark.parametrize("body", SECTION_CASES)
def test_invalid_upsert_is_400_and_writes_nothing(seeded, body):
    before = _counts()
    response = seeded.put("/api/v1/sections", body)
    assert response.status_code == 400, response.content[:300]
    assert "sections" in response.json()["fields"]
    assert _counts() == before


def test_a_batch_with_one_bad_item_writes_none_of_it(seeded):
    body = {"sections": [{"id": "new#1", "text": "fine"}, {"id": "new#2", "text": None}]}
    assert seeded.put("/api/v1/sections", body).status_code == 400
    assert not Section.objects.filter(external_id="new#1").exists()


def test_malformed_json_is_400(seeded):
    response = seeded.client.post(
        "/api/v1/recall", data='{"scope": "default", "query": ', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"] == "parse_error"


def test_non_object_json_is_400(seeded):
    response = seeded.client.post("/api/v1/recall", data="[1, 2]", content_type="application/json")
    assert response.status_code == 400


def test_body_over_one_mebibyte_is_413(seeded):
    before = _counts()
    big = '{"sections": [{"id": "big", "text": "' + "x" * (1024 * 1024) + '"}]}'
    response = seeded.client.put("/api/v1/sections", data=big, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
    assert _counts() == before


def test_feedback_needs_a_boolean(seeded):
    recall = seeded.recall("anything")
    url = f"/api/v1/recalls/{recall['recall_id']}/feedback"
    for body in [{}, {"accepted": "true"}, {"accepted": 1}, {"accepted": None}]:
        response = seeded.post(url, body)
        assert response.status_code == 400 and "accepted" in response.json()["fields"]
    assert RecallEvent.objects.get(pk=recall["recall_id"]).feedback is None
    assert seeded.post("/api/v1/recalls/not-a-uuid/feedback", {"accepted": True}).status_code == 404
