"""The recall body's fast path (api.serializers.recall_input) against RecallSerializer: on any
body it either steps aside (None) or returns exactly what the serializer validates; and it
takes the common bodies, so the hot path does skip DRF's per-field work."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from api.serializers import RecallSerializer, recall_input
from cachecore.engine import limits

TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["default", "paper:1", "group/premium", "a b", "", " ", "abc\n", "x" * 200, "x" * 201,
                     "How do I install Acme?", "ünïcode?", "tab\tquery", "\u2028", "nul\x00"]),
    st.text(alphabet="ab:/._-", min_size=1, max_size=3).map(lambda t: t * 70),
)
VALUE = st.one_of(TEXT, st.none(), st.booleans(), st.integers(min_value=-5, max_value=limits.MAX_BUDGET_TOKENS + 5),
                  st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=2),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=1))
KEYS = st.sampled_from(["scope", "query", "budget_tokens", "subject", "shadow", "explain", "Scope"])
BODY = st.one_of(
    st.dictionaries(KEYS, VALUE, max_size=6),
    st.fixed_dictionaries({"scope": TEXT, "query": TEXT}, optional={
        "budget_tokens": st.one_of(st.none(), st.integers(min_value=-2, max_value=limits.MAX_BUDGET_TOKENS + 2),
                                   st.just(5.0), st.just(True)),
        "subject": TEXT, "shadow": st.one_of(st.booleans(), st.just(1), st.just("true"))}),
    st.lists(st.integers(), max_size=2), st.none(), TEXT,
)


def _serializer(data: Any) -> dict[str, Any] | None:
    serializer = RecallSerializer(data=data)
    return dict(serializer.validated_data) if serializer.is_valid() else None


@settings(max_examples=1500, deadline=None)
@given(BODY)
def test_the_fast_path_returns_what_the_serializer_validates_or_steps_aside(body):
    fast = recall_input(body)
    if fast is not None:
        assert fast == _serializer(body)


def test_common_bodies_take_the_fast_path_and_invalid_ones_never_do():
    for body in ({"scope": "default", "query": "How do I install Acme?"},
                 {"scope": "paper:1", "query": "q", "budget_tokens": 500, "subject": "user-7", "shadow": True},
                 {"scope": "default", "query": "q", "budget_tokens": None}):
        assert recall_input(body) is not None and recall_input(body) == _serializer(body)
    for body in ({"scope": "default", "query": "   "}, {"scope": "bad scope", "query": "q"},
                 {"scope": "default", "query": "q", "budget_tokens": 0}, {"scope": "default", "query": 5},
                 {"scope": "default", "query": "q", "shadow": "yes"}, {"scope": "x" * 201, "query": "q"},
                 {"scope": "default", "query": "q" * (limits.MAX_QUERY_CHARS + 1)}):
        assert recall_input(body) is None and _serializer(body) is None


def test_over_http_the_fast_path_answers_as_the_serializer_would(caller):
    """The same request with and without a key the fast path does not know (``explain``, which
    the serializer ignores) answers alike; a body it steps aside for gets the serializer's 400."""
    caller.upsert({"doc#install": "Install Acme with the installer, then run acme init."})
    caller.record(query="How do I install Acme?", cited=["doc#install"])
    fast = caller.post("/api/v1/recall", {"scope": "default", "query": "How do I install Acme?"})
    slow = caller.post("/api/v1/recall", {"scope": "default", "query": "How do I install Acme?", "explain": True})
    assert fast.status_code == slow.status_code == 200
    drop = ("recall_id",)
    assert {k: v for k, v in fast.json().items() if k not in drop} == {k: v for k, v in slow.json().items()
                                                                     if k not in drop}
    refused = caller.post("/api/v1/recall", {"scope": "bad scope", "query": "q"})
    assert refused.status_code == 400 and "scope" in str(refused.json())
    assert recall_input({"scope": "default", "query": "q", "explain": True}) is None
