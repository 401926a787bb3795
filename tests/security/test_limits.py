"""Limits: requests per API key and per tenant (429 with Retry-After, counted across processes
through Redis), and a cap on the exports a tenant has queued or running."""

from __future__ import annotations

import socket

import pytest

from cachecore.models import Job, JobKind, JobStatus
from tenants import ratelimit

NOW = 1_800_000_010.0  # ten seconds into a minute: no window ends during a test


@pytest.fixture
def frozen_clock(monkeypatch):
    monkeypatch.setattr(ratelimit.time, "time", lambda: NOW)


@pytest.fixture
def limits(settings, frozen_clock):
    ratelimit.counters.reset()
    yield settings
    ratelimit.counters.reset()


def _assert_429(response):
    assert response.status_code == 429, response.content
    assert 1 <= int(response["Retry-After"]) <= 61
    body = response.json()
    assert body["error"] == "throttled" and set(body) >= {"error", "detail", "fields"}


def test_a_key_over_its_rate_gets_429_with_retry_after(limits, make_caller, make_tenant):
    limits.TRAILCACHE_RATE_PER_KEY_PER_MINUTE = 3
    tenant = make_tenant()
    first, second = make_caller(tenant=tenant), make_caller(tenant=tenant)
    for _ in range(3):
        assert first.get("/api/v1/stats").status_code == 200
    _assert_429(first.get("/api/v1/stats"))
    _assert_429(first.post("/api/v1/recall", {"scope": "default", "query": "q"}))
    assert second.get("/api/v1/stats").status_code == 200  # another key has its own count


def test_a_tenant_over_its_rate_gets_429_whatever_the_key(limits, make_caller, make_tenant):
    limits.TRAILCACHE_RATE_PER_TENANT_PER_MINUTE = 4
    tenant = make_tenant()
    first, second = make_caller(tenant=tenant), make_caller(tenant=tenant)
    for caller in (first, second, first, second):
        assert caller.get("/api/v1/stats").status_code == 200
    _assert_429(second.get("/api/v1/stats"))
    assert make_caller().get("/api/v1/stats").status_code == 200  # another tenant is not touched


def test_the_window_ends_and_the_key_may_call_again(limits, make_caller, monkeypatch):
    limits.TRAILCACHE_RATE_PER_KEY_PER_MINUTE = 1
    caller = make_caller()
    assert caller.get("/api/v1/stats").status_code == 200
    _assert_429(caller.get("/api/v1/stats"))
    monkeypatch.setattr(ratelimit.time, "time", lambda: NOW + 60)
    assert caller.get("/api/v1/stats").status_code == 200


def test_a_bad_key_is_401_not_counted(limits, client, db):
    limits.TRAILCACHE_RATE_PER_KEY_PER_MINUTE = 1
    for _ in range(3):
        assert client.get("/api/v1/stats", HTTP_AUTHORIZATION="Bearer tc_abc_nope").status_code == 401


def test_counts_are_shared_by_every_process_through_redis(own_broker, frozen_clock):
    web_1, web_2 = ratelimit._Counters(), ratelimit._Counters()  # two processes' counters
    assert web_1.hit("api-key", "k1", limit=2, period=60).allowed
    assert web_2.hit("api-key", "k1", limit=2, period=60).allowed
    refused = web_1.hit("api-key", "k1", limit=2, period=60)
    assert not refused.allowed and refused.count == 3 and refused.retry_after == 51


def test_counts_fall_back_to_memory_when_redis_is_down(settings, frozen_clock):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    counters = ratelimit._Counters()
    assert counters.hit("api-key", "k2", limit=1, period=60).allowed
    assert not counters.hit("api-key", "k2", limit=1, period=60).allowed


def test_a_tenant_has_at_most_n_exports_queued_or_running(settings, caller):
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 2
    first = caller.post("/api/v1/exports", {"format": "csv"})
    second = caller.post("/api/v1/exports", {"format": "jsonl"})
    assert first.status_code == second.status_code == 202
    refused = caller.post("/api/v1/exports", {"format": "csv"})
    assert refused.status_code == 429 and refused["Retry-After"] == "30"
    assert "at most 2" in refused.json()["detail"]
    assert Job.objects.filter(tenant=caller.tenant, kind=JobKind.EXPORT).count() == 2
    Job.objects.filter(pk=first.json()["export_id"]).update(status=JobStatus.DONE)
    assert caller.post("/api/v1/exports", {"format": "csv"}).status_code == 202


def test_another_tenants_exports_do_not_count(settings, caller, outsider):
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 1
    assert caller.post("/api/v1/exports", {"format": "csv"}).status_code == 202
    assert outsider.post("/api/v1/exports", {"format": "csv"}).status_code == 202
