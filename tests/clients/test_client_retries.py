"""Retries, backoff and timeouts of the Python client, on a scripted transport (the live service
never answers 429 or 5xx on purpose): what is repeated, what never is, how long it waits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest
import trailcache
from trailcache import RetryPolicy, Trailcache

RECALL_BODY = {
    "recall_id": "6f1c8a52-5b0e-4a9e-9d47-3d1b1d1f0a01", "outcome": "miss", "reason": "no_candidate",
    "confidence": 0.0, "trail_id": None, "similarity": None, "coverage": None, "escalated": False, "sections": [],
    "omitted": [], "steps": [], "hint": None, "trails": [],
}
ERROR = {"error": "unavailable", "detail": "try later", "fields": {}}


def scripted(*answers: httpx.Response | Exception) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handler), seen


def client(transport: httpx.MockTransport, sleeps: list[float], **kw) -> Trailcache:
    return Trailcache("http://tc.test", "tc_key", transport=transport, sleep=sleeps.append, fail_open=False,
                      retry=kw.pop("retry", RetryPolicy(max_retries=3, backoff=0.5, max_backoff=2.0)), **kw)


def test_429_waits_what_retry_after_says_then_succeeds():
    transport, seen = scripted(httpx.Response(429, json=ERROR, headers={"Retry-After": "7"}),
                               httpx.Response(429, json=ERROR, headers={"Retry-After": "2"}),
                               httpx.Response(201, json={"trail_id": RECALL_BODY["recall_id"], "status": "active"}))
    sleeps: list[float] = []
    result = client(transport, sleeps).record("q", ["a"])
    assert result.status == "active" and sleeps == [7.0, 2.0] and len(seen) == 3  # a 429 did nothing: safe to repeat


def test_429_past_the_retries_raises_rate_limit_error_with_retry_after():
    transport, _ = scripted(*[httpx.Response(429, json=ERROR, headers={"Retry-After": "1"})] * 2)
    with pytest.raises(trailcache.RateLimitError) as limited:
        client(transport, [], retry=RetryPolicy(max_retries=1)).stats()
    assert limited.value.retry_after == 1.0 and limited.value.status_code == 429


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_is_retried_with_growing_backoff_for_idempotent_calls(status):
    transport, seen = scripted(*[httpx.Response(status, json=ERROR)] * 3, httpx.Response(200, json=RECALL_BODY))
    sleeps: list[float] = []
    assert client(transport, sleeps).recall("q").outcome == "miss"
    assert len(seen) == 4
    assert [0.25 <= sleeps[0] <= 0.5, 0.5 <= sleeps[1] <= 1.0, 1.0 <= sleeps[2] <= 2.0] == [True] * 3


@pytest.mark.parametrize("call", [
    lambda tc: tc.record("q", ["a"]),
    lambda tc: tc.feedback("6f1c8a52-5b0e-4a9e-9d47-3d1b1d1f0a01", accepted=True),
])
def test_5xx_and_timeouts_after_sending_are_never_repeated_for_writes(call: Callable[[Trailcache], object]):
    transport, seen = scripted(httpx.Response(503, json=ERROR))
    with pytest.raises(trailcache.ServiceUnavailableError) as unavailable:
        call(client(transport, []))
    assert len(seen) == 1 and unavailable.value.detail == "try later"
    transport, seen = scripted(httpx.ReadTimeout("slow"))
    with pytest.raises(trailcache.TransportError):
        call(client(transport, []))
    assert len(seen) == 1


def test_a_connection_never_made_is_retried_for_every_call():
    transport, seen = scripted(httpx.ConnectError("refused"), httpx.ConnectTimeout("no route"),
                               httpx.Response(201, json={"trail_id": RECALL_BODY["recall_id"], "status": "pending"}))
    assert client(transport, []).record("q", ["a"], accepted=None).status == "pending"
    assert len(seen) == 3


def test_idempotent_calls_repeat_after_a_read_timeout_and_give_up_as_transport_error():
    transport, seen = scripted(*[httpx.ReadTimeout("slow")] * 4)
    with pytest.raises(trailcache.TransportError):
        client(transport, []).get_section("a/b#c")
    assert len(seen) == 4


def test_ids_are_percent_encoded_and_the_key_is_sent():
    transport, seen = scripted(httpx.Response(204))
    client(transport, []).delete_section("guide/install.md#linux:1?x")
    assert seen[0].url.raw_path == b"/api/v1/sections/guide%2Finstall.md%23linux%3A1%3Fx"
    assert seen[0].headers["Authorization"] == "Bearer tc_key"


def test_recall_has_its_own_shorter_timeout():
    transport, seen = scripted(httpx.Response(200, json=RECALL_BODY), httpx.Response(200, json={
        "recalls": 0, "prefetch": 0, "hint": 0, "miss": 0, "hit_rate": 0, "prefetch_rate": 0, "stale_rate": 0,
        "escalation_rate": 0, "served_cited_rate": 0, "feedback": {}, "trails": {}}))
    tc = client(transport, [], timeout=9.0, recall_timeout=1.5)
    tc.recall("q")
    tc.stats()
    assert [r.extensions["timeout"]["read"] for r in seen] == [1.5, 9.0]


def test_a_response_that_is_not_the_contract_is_a_response_error_and_recall_still_fails_open():
    transport, _ = scripted(httpx.Response(200, text="<html>proxy</html>"), httpx.Response(200, json={"nope": 1}))
    tc = client(transport, [])
    with pytest.raises(trailcache.ResponseError):
        tc.stats()
    assert tc.recall("q", fail_open=True).failed_open


def test_an_error_body_that_is_not_json_still_raises_the_status_class():
    transport, _ = scripted(httpx.Response(404, text="not here"))
    with pytest.raises(trailcache.NotFoundError) as missing:
        client(transport, []).get_trail("x")
    assert missing.value.error == "http_404" and missing.value.detail == "not here"


def test_the_async_client_retries_the_same_way():
    seen: list[httpx.Request] = []
    answers = [httpx.Response(429, json=ERROR, headers={"Retry-After": "3"}), httpx.Response(200, json=RECALL_BODY)]

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def go() -> str:
        async with trailcache.AsyncTrailcache("http://tc.test", "k", transport=httpx.MockTransport(handler),
                                              sleep=sleep) as tc:
            return (await tc.recall("q", budget_tokens=300)).outcome

    assert asyncio.run(go()) == "miss" and slept == [3.0]
    assert json.loads(seen[0].content) == {"scope": "default", "query": "q", "budget_tokens": 300}


def test_an_api_key_is_required(monkeypatch):
    monkeypatch.delenv("TRAILCACHE_API_KEY", raising=False)
    with pytest.raises(trailcache.TrailcacheError):
        Trailcache("http://tc.test")
    monkeypatch.setenv("TRAILCACHE_API_KEY", "tc_env")
    monkeypatch.setenv("TRAILCACHE_URL", "http://env.test/prefix/")
    tc = Trailcache()
    assert tc.base_url == "http://env.test/prefix"
