"""A per-tenant concurrency budget on the web workers: a tenant with
``TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS`` requests in progress gets 429 (the error shape,
Retry-After) for the next one, while another tenant is served; the slot comes back when the
request ends. Against a live threaded server, a slow request held open by a stalling resolver;
counted in Redis (every process) and, when Redis is down, in the process."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from cachecore import resolver
from tenants.caller import tenant_caller
from tenants.services import api_key_create


def _stalling_resolver():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=lambda c=conn: (stop.wait(5), c.close()), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/r", stop, listener


def _call(url: str, key: str, body: dict) -> tuple[int, dict, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read() or b"{}")


@pytest.fixture
def budget(settings):
    settings.TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS = 1
    resolver.breaker.reset()
    yield settings
    resolver.breaker.reset()


@pytest.mark.parametrize("counted_in", ["redis", "process"])
def test_one_tenant_cannot_take_every_worker(request, transactional_db, live_server, make_tenant, budget, counted_in):
    if counted_in == "redis":
        request.getfixturevalue("own_broker")
    else:
        budget.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing there: the process's own count
    url, stop, listener = _stalling_resolver()
    busy = make_tenant(resolver_url=url, resolver_secret="s", resolver_timeout_ms=2500)
    other = make_tenant()
    _, busy_key = api_key_create(caller=tenant_caller(busy), name="busy")
    _, other_key = api_key_create(caller=tenant_caller(other), name="other")
    slow: dict[str, object] = {}

    def hold_a_worker():
        slow["answer"] = _call(f"{live_server.url}/api/v1/trails", busy_key, {
            "scope": "default", "query": "held open by the resolver", "cited": ["remote#1"],
            "signal": {"source": "caller", "accepted": True}})

    try:
        holder = threading.Thread(target=hold_a_worker)
        holder.start()
        time.sleep(0.8)  # the record is waiting on the resolver
        status, headers, body = _call(f"{live_server.url}/api/v1/recall", busy_key,
                                      {"scope": "default", "query": "a second request meanwhile"})
        assert status == 429, body
        assert body["error"] == "too_many_concurrent_requests" and set(body) >= {"error", "detail", "fields"}
        assert headers.get("Retry-After", "").isdigit()
        status, _, body = _call(f"{live_server.url}/api/v1/recall", other_key,
                                {"scope": "default", "query": "another tenant meanwhile"})
        assert status == 200, body
        holder.join(timeout=30)
        assert slow["answer"][0] == 503  # the resolver never answered: at its deadline
        status, _, body = _call(f"{live_server.url}/api/v1/recall", busy_key,
                                {"scope": "default", "query": "after the slow one ended"})
        assert status == 200, body  # the slot came back
    finally:
        stop.set()
        listener.close()
