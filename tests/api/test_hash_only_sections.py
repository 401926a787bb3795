"""Sections kept by hash only: they validate like the others but can't be prefetched."""

import hashlib

TEXT = "Acme reads its configuration from /etc/acme/acme.toml."
QUERY = "Where does Acme read its configuration from?"


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_hash_only_section_validates_and_its_trail_recalls_as_a_hint(caller):
    response = caller.put("/api/v1/sections", {"sections": [{"id": "ext#1", "hash": _sha(TEXT).upper()}]})
    assert response.status_code == 200 and response.json()["created"] == 1
    section = caller.get("/api/v1/sections/ext%231").json()
    assert section["hash"] == _sha(TEXT) and section["text"] is None
    assert caller.record(query=QUERY, cited=["ext#1"]).status_code == 201
    body = caller.recall(QUERY)
    assert body["outcome"] == "hint"
    assert body["sections"] == [{"id": "ext#1", "status": "valid"}]
    assert "not stored here" in body["hint"]
    # The caller's content changed: a new hash makes the trail stale.
    upsert = caller.put("/api/v1/sections", {"sections": [{"id": "ext#1", "hash": _sha(TEXT + "!")}]}).json()
    assert upsert["updated"] == 1 and upsert["invalidated_trails"] == 1
    assert caller.recall(QUERY)["outcome"] == "miss"


def test_same_hash_as_stored_text_is_unchanged_and_keeps_prefetching(caller):
    caller.upsert({"doc#1": TEXT})
    caller.record(query=QUERY, cited=["doc#1"])
    upsert = caller.put("/api/v1/sections", {"sections": [{"id": "doc#1", "hash": _sha(TEXT)}]}).json()
    assert upsert["unchanged"] == 1
    assert caller.recall(QUERY)["outcome"] == "prefetch"


def test_text_and_hash_together_or_neither_is_400(caller):
    for item in [{"id": "a", "text": "t", "hash": _sha("t")}, {"id": "a"}, {"id": "a", "hash": "abc"}]:
        response = caller.put("/api/v1/sections", {"sections": [item]})
        assert response.status_code == 400, item
        assert "sections" in response.json()["fields"]
