"""The recall body has one shape: the serializer's hot path (built from the dataclasses)
renders exactly what its declared fields render, for a prefetch, a hint, a miss and shadow
mode with and without details."""

from __future__ import annotations

import json

from api.serializers import RecallResultSerializer
from cachecore.embedding import get_embedder
from cachecore.services.recall import recall
from tenants.caller import tenant_caller

QUERY = "How do I configure the proxy?"
SECTIONS = {"doc#config": "Set proxy.url in config.yaml and restart the agent.",
            "doc#install": "Install the agent with the package manager of your system."}


def _same_body(result) -> dict:
    serializer = RecallResultSerializer(result)
    fast, declared = serializer.data, serializer.declared_representation(result)
    assert fast == declared
    assert json.dumps(fast, sort_keys=True) == json.dumps(declared, sort_keys=True)  # same JSON types too
    return fast


def test_every_outcome_renders_the_same_on_both_paths(make_caller):
    caller = make_caller()
    caller.upsert(SECTIONS)
    assert caller.record(query=QUERY, cited=["doc#config", "doc#install"]).status_code == 201
    who = tenant_caller(caller.tenant)

    budget = get_embedder().count_tokens(SECTIONS["doc#config"])  # room for the first section only
    prefetch = _same_body(recall(caller=who, scope="default", query=QUERY, budget_tokens=budget))
    assert prefetch["outcome"] == "prefetch" and any("text" in s for s in prefetch["sections"])
    assert prefetch["omitted"]  # the budget cut a section: sections with and without text
    assert "shadow" not in prefetch

    caller.upsert({"doc#install": "Install the agent from the tarball now."})
    hint = _same_body(recall(caller=who, scope="default", query=QUERY))
    assert hint["outcome"] == "hint" and hint["hint"] and hint["reason"] == "changed"

    miss = _same_body(recall(caller=who, scope="default", query="Unrelated: what is the refund policy?"))
    assert miss["outcome"] == "miss" and miss["trail_id"] is None


def test_shadow_mode_renders_the_same_on_both_paths(make_caller):
    caller = make_caller(shadow_mode=True)
    caller.upsert(SECTIONS)
    assert caller.record(query=QUERY, cited=["doc#config"]).status_code == 201
    who = tenant_caller(caller.tenant)
    quiet = _same_body(recall(caller=who, scope="default", query=QUERY))
    assert quiet["reason"] == "shadow" and "shadow" not in quiet
    detailed = _same_body(recall(caller=who, scope="default", query=QUERY, shadow_details=True))
    assert detailed["shadow"]["outcome"] == "prefetch"
    assert detailed["shadow"]["sections"] == [{"id": "doc#config", "status": "valid"}]  # never text
