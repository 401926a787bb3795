"""The lean web path's two caches and one round trip: an authenticated key is answered from the
process's memory for TRAILCACHE_API_KEY_CACHE_SECONDS (a revocation elsewhere is seen within
them, here at once), and the key and tenant rate limits are counted in one Redis round trip with
the same answers as one after the other."""

from __future__ import annotations

import time

import pytest
import redis
from rest_framework.test import APIClient

from api.authentication import key_cache
from tenants import ratelimit
from tenants.caller import tenant_caller
from tenants.models import ApiKey
from tenants.services import api_key_revoke

NOW = 1_800_000_010.0  # ten seconds into a minute: no window ends during a test


@pytest.fixture
def committed_caller(transactional_db, make_caller):
    """A key whose row is committed (only those are remembered: a test's own transaction could
    still roll the row back)."""
    return make_caller()


@pytest.fixture(autouse=True)
def _empty_key_cache():
    key_cache.clear()
    yield
    key_cache.clear()


def test_a_key_revoked_by_another_process_is_refused_within_the_cache_seconds(settings, committed_caller):
    settings.TRAILCACHE_API_KEY_CACHE_SECONDS = 1
    assert committed_caller.get("/api/v1/stats").status_code == 200
    # Another process revokes it: a plain UPDATE, no signal reaches this one.
    ApiKey.objects.filter(tenant=committed_caller.tenant).update(revoked_at="2026-01-01T00:00:00Z")
    assert committed_caller.get("/api/v1/stats").status_code == 200  # still answered from this process's memory
    time.sleep(1.1)
    response = committed_caller.get("/api/v1/stats")
    assert response.status_code == 401 and response.json()["error"] == "authentication_failed"


def test_a_key_revoked_in_this_process_is_refused_at_once(settings, committed_caller):
    settings.TRAILCACHE_API_KEY_CACHE_SECONDS = 60
    assert committed_caller.get("/api/v1/stats").status_code == 200
    api_key_revoke(caller=tenant_caller(committed_caller.tenant, actor_label="test"),
                   key_id=ApiKey.objects.get(tenant=committed_caller.tenant).pk)
    assert committed_caller.get("/api/v1/stats").status_code == 401


def test_a_cached_key_skips_the_database(settings, committed_caller, django_assert_max_num_queries):
    settings.TRAILCACHE_API_KEY_CACHE_SECONDS = 60
    assert committed_caller.get("/api/v1/stats").status_code == 200
    with django_assert_max_num_queries(0):
        from rest_framework.test import APIRequestFactory

        from api.authentication import ApiKeyAuthentication

        request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {committed_caller.raw_key}")
        found_caller, key = ApiKeyAuthentication().authenticate(request)
    assert found_caller.tenant.pk == committed_caller.tenant.pk and key.tenant_id == committed_caller.tenant.pk


def test_zero_seconds_turns_the_cache_off(settings, committed_caller):
    settings.TRAILCACHE_API_KEY_CACHE_SECONDS = 0
    assert committed_caller.get("/api/v1/stats").status_code == 200
    ApiKey.objects.filter(tenant=committed_caller.tenant).update(revoked_at="2026-01-01T00:00:00Z")
    assert committed_caller.get("/api/v1/stats").status_code == 401


def test_a_wrong_secret_of_a_cached_key_is_refused(settings, committed_caller):
    settings.TRAILCACHE_API_KEY_CACHE_SECONDS = 60
    assert committed_caller.get("/api/v1/stats").status_code == 200
    wrong = committed_caller.raw_key[:-2] + ("aa" if not committed_caller.raw_key.endswith("aa") else "bb")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {wrong}")
    assert other.get("/api/v1/stats").status_code == 401


@pytest.fixture
def frozen_clock(monkeypatch):
    monkeypatch.setattr(ratelimit.time, "time", lambda: NOW)


def _script_calls(url: str) -> int:
    """Script runs that succeeded (the first EVALSHA of a new script fails, is loaded, and runs)."""
    stats = redis.Redis.from_url(url).info("commandstats")
    return sum(int(stats.get(name, {}).get("calls", 0)) - int(stats.get(name, {}).get("failed_calls", 0))
               for name in ("cmdstat_evalsha", "cmdstat_eval"))


def test_both_limits_in_one_round_trip_with_the_same_answers(own_broker, frozen_clock):
    web_1, web_2 = ratelimit._Counters(), ratelimit._Counters()  # two processes' counters
    limits = [("api-key", "k1", 2), ("api-tenant", "t1", 3)]
    before = _script_calls(own_broker.url)
    assert web_1.hit_all(limits, period=60).allowed
    assert web_2.hit_all(limits, period=60).allowed
    refused = web_1.hit_all(limits, period=60)  # the key's third: over its 2
    assert not refused.allowed and refused.count == 3 and refused.retry_after == 51
    assert _script_calls(own_broker.url) - before == 3  # one script call per request
    # The refused request did not count against the tenant (as hit() one after the other).
    assert web_1.peek("api-tenant", "t1", period=60) == 2
    other_key = [("api-key", "k2", 2), ("api-tenant", "t1", 3)]
    assert web_2.hit_all(other_key, period=60).allowed  # the tenant's third
    over = web_2.hit_all(other_key, period=60)
    assert not over.allowed and over.count == 4
    assert web_1.peek("api-key", "k2", period=60) == 2


def test_one_round_trip_falls_back_to_memory_when_redis_is_down(settings, frozen_clock):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    counters = ratelimit._Counters()
    limits = [("api-key", "k1", 1), ("api-tenant", "t1", 5)]
    assert counters.hit_all(limits, period=60).allowed
    refused = counters.hit_all(limits, period=60)
    assert not refused.allowed and refused.count == 2


def test_a_key_read_inside_a_transaction_is_not_remembered(settings, caller):
    settings.TRAILCACHE_API_KEY_CACHE_SECONDS = 60
    assert caller.get("/api/v1/stats").status_code == 200  # the test's transaction: may roll back
    ApiKey.objects.filter(tenant=caller.tenant).update(revoked_at="2026-01-01T00:00:00Z")
    assert caller.get("/api/v1/stats").status_code == 401


def test_a_deleted_tenants_keys_are_forgotten_at_once(settings, committed_caller):
    settings.TRAILCACHE_API_KEY_CACHE_SECONDS = 60
    assert committed_caller.get("/api/v1/stats").status_code == 200
    committed_caller.tenant.delete()
    assert committed_caller.get("/api/v1/stats").status_code == 401
