"""The record body's fast path (api.serializers.record_input) against TrailRecordSerializer: on
any body it either steps aside (None) or returns exactly what the serializer validates; and it
takes the common bodies, so the hot path does skip DRF's per-field work (a deep copy of the
fields, and of each step's, per request)."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from api.serializers import TrailRecordSerializer, record_input
from cachecore.engine import limits

TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["default", "paper:1", "a b", "", " ", "abc\n", "x" * 200, "x" * 201, "doc#1",
                     "guide/install.md#linux", "How do I install Acme?", "ünïcode?", "tab\tquery", "\u2028",
                     "nul\x00", "surrogate\ud800",
                     "user", "caller", "verifier", "User", "x" * (limits.MAX_SECTION_ID_CHARS + 1),
                     str(uuid.UUID(int=7)), str(uuid.UUID(int=7)).upper(), uuid.UUID(int=7).hex,
                     "{" + str(uuid.UUID(int=7)) + "}"]),
)
JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                              TEXT),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
                    max_leaves=6)
IDS = st.one_of(st.lists(TEXT, max_size=4), st.lists(st.just("doc#1"), min_size=limits.MAX_CITED,
                                                     max_size=limits.MAX_CITED + 1), TEXT, st.none(), st.integers())
STEP = st.one_of(
    st.fixed_dictionaries({"tool": TEXT}, optional={"args": JSON, "returned": IDS, "extra": JSON}),
    JSON,
)
SIGNAL = st.one_of(st.none(), st.fixed_dictionaries({"source": TEXT, "accepted": JSON}, optional={"note": TEXT}),
                   st.fixed_dictionaries({}, optional={"source": TEXT, "accepted": st.booleans()}), JSON)
KEYS = st.sampled_from(["scope", "query", "steps", "cited", "signal", "subject", "answer", "recall_id", "explain"])
# Bodies near the valid ones, each part valid most of the time: the fast path's answers are compared.
ID = st.one_of(st.sampled_from(["doc#1", "guide/install.md#linux", "x" * limits.MAX_SECTION_ID_CHARS]), TEXT)
NEAR_STEP = st.fixed_dictionaries({"tool": st.one_of(st.just("search"), TEXT)}, optional={
    "args": JSON, "returned": st.lists(ID, max_size=3)})
NEAR = st.fixed_dictionaries(
    {"scope": st.one_of(st.sampled_from(["default", "paper:1", "a" * 200]), TEXT),
     "query": st.one_of(st.sampled_from(["How do I install Acme?", "q", " q "]), TEXT),
     "cited": st.one_of(st.lists(ID, min_size=1, max_size=3), IDS)},
    optional={"steps": st.lists(st.one_of(NEAR_STEP, STEP), max_size=3),
              "signal": st.one_of(st.fixed_dictionaries({"source": st.sampled_from(["user", "caller", "verifier"]),
                                                         "accepted": st.booleans()}), SIGNAL),
              "subject": st.one_of(st.sampled_from(["", "user-7"]), TEXT),
              "answer": st.one_of(st.none(), st.sampled_from(["Run apt install acme-sync.", " "]), TEXT),
              "recall_id": st.one_of(st.none(), st.uuids().map(str), TEXT, st.integers())})
# Valid bodies of every shape the contract allows: the fast path should take them all.
GOOD_ID = st.sampled_from(["doc#1", "guide/install.md#linux", "x" * limits.MAX_SECTION_ID_CHARS, "ü"])
VALID = st.fixed_dictionaries(
    {"scope": st.sampled_from(["default", "paper:1", "a" * 200]),
     "query": st.sampled_from(["How do I install Acme?", "q", " q ", "ünïcode?"]),
     "cited": st.lists(GOOD_ID, min_size=1, max_size=3)},
    optional={"steps": st.lists(st.fixed_dictionaries({"tool": st.sampled_from(["search", "grep"])}, optional={
                  "args": JSON.filter(lambda v: v is not None), "returned": st.lists(GOOD_ID, max_size=3)}),
                  max_size=3),
              "signal": st.one_of(st.none(), st.fixed_dictionaries({
                  "source": st.sampled_from(["user", "caller", "verifier"]), "accepted": st.booleans()})),
              "subject": st.sampled_from(["", "user-7"]),
              "answer": st.one_of(st.none(), st.sampled_from(["Run apt install acme-sync.", " "])),
              "recall_id": st.one_of(st.none(), st.uuids().map(str))})
BODY = st.one_of(
    VALID, NEAR, NEAR,
    st.dictionaries(KEYS, JSON, max_size=8),
    st.fixed_dictionaries({"scope": TEXT, "query": TEXT, "cited": IDS}, optional={
        "steps": st.one_of(st.lists(STEP, max_size=3), JSON), "signal": SIGNAL, "subject": TEXT,
        "answer": st.one_of(st.none(), TEXT), "recall_id": st.one_of(st.none(), TEXT, st.integers(), JSON)}),
    JSON,
)


def _serializer(data: Any) -> dict[str, Any] | None:
    serializer = TrailRecordSerializer(data=data)
    return dict(serializer.validated_data) if serializer.is_valid() else None


@settings(max_examples=2000, deadline=None)
@given(BODY)
def test_the_fast_path_returns_what_the_serializer_validates_or_steps_aside(body):
    fast = record_input(body)
    if fast is not None:
        assert fast == _serializer(body)


@settings(max_examples=300, deadline=None)
@given(VALID)
def test_every_valid_shape_takes_the_fast_path(body):
    assert record_input(body) is not None


RECALL_ID = "0b6f2a4e-51c4-4e8a-9d3b-6c1f0e2d4a77"
STEPS = [{"tool": "search", "args": {"q": "install ubuntu", "k": 5}, "returned": ["guide/install.md#linux"]}]


def test_common_bodies_take_the_fast_path_and_invalid_ones_never_do():
    for body in ({"scope": "default", "query": "How do I install Acme?", "cited": ["doc#1"]},
                 {"scope": "quickstart", "query": "How do I install Acme Sync on Ubuntu?", "steps": STEPS,
                  "cited": ["guide/install.md#linux"], "signal": {"source": "user", "accepted": True},
                  "recall_id": RECALL_ID},
                 {"scope": "default", "query": "q", "steps": [{"tool": "search"}], "cited": ["a", "b"], "signal": None,
                  "subject": "user-7", "answer": "Run apt install acme-sync.", "recall_id": None}):
        fast = record_input(body)
        assert fast is not None and fast == _serializer(body)
    assert record_input({"scope": "d", "query": "q", "cited": ["a"], "recall_id": RECALL_ID})["recall_id"] == \
        uuid.UUID(RECALL_ID)
    for body in ({"scope": "default", "query": "   ", "cited": ["a"]},
                 {"scope": "bad scope", "query": "q", "cited": ["a"]},
                 {"scope": "default", "query": "q", "cited": []},
                 {"scope": "default", "query": "q", "cited": ["a", ""]},
                 {"scope": "default", "query": "q", "cited": ["a"], "steps": [{"tool": ""}]},
                 {"scope": "default", "query": "q", "cited": ["a"], "steps": [{"tool": "t", "args": None}]},
                 {"scope": "default", "query": "q", "cited": ["a"], "signal": {"source": "robot", "accepted": True}},
                 {"scope": "default", "query": "q", "cited": ["a"], "signal": {"source": "user", "accepted": 1}},
                 {"scope": "default", "query": "q", "cited": ["a"], "answer": ""},
                 {"scope": "default", "query": "q", "cited": ["a"], "recall_id": "not-a-uuid"},
                 {"scope": "default", "query": "q", "cited": ["a"] * (limits.MAX_CITED + 1)}):
        assert record_input(body) is None and _serializer(body) is None


def test_over_http_the_fast_path_records_as_the_serializer_would(caller):
    """The same record with and without a key the fast path does not know (``explain``, which the
    serializer ignores) is stored alike; a body it steps aside for gets the serializer's 400."""
    caller.upsert({"doc#install": "Install Acme with the installer, then run acme init."})
    body = {"scope": "default", "query": "How do I install Acme?", "cited": ["doc#install"],
            "steps": [{"tool": "search", "args": {"q": "install"}, "returned": ["doc#install"]}],
            "signal": {"source": "caller", "accepted": True}}
    fast = caller.post("/api/v1/trails", body)
    slow = caller.post("/api/v1/trails", {**body, "explain": True})
    assert fast.status_code == slow.status_code == 201
    assert fast.json()["status"] == slow.json()["status"] == "active"
    stored = [caller.get(f"/api/v1/trails/{r.json()['trail_id']}").json() for r in (fast, slow)]
    keep = ("scope", "query", "steps", "cited", "status", "signal", "subject")
    assert [{k: t[k] for k in keep} for t in stored][0] == [{k: t[k] for k in keep} for t in stored][1]
    assert stored[0]["steps"] == body["steps"]
    refused = caller.post("/api/v1/trails", {**body, "cited": []})
    assert refused.status_code == 400 and "cited" in refused.json()["fields"]
    assert record_input({**body, "explain": True}) is None
