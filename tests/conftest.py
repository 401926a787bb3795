"""Shared fixtures: tenants, API keys and clients against the real PostgreSQL, and the
background-work fixtures (a broker that is down, the media root in a temp folder, running
queued jobs by their task body) that tests/background and tests/cachecore/services turn on."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from tenants.caller import tenant_caller
from tenants.models import Tenant, all_key_permissions
from tenants.services import api_key_create, tenant_create


class ApiCaller:
    """A tenant's API client with its key; literal URLs in tests pin the contract."""

    def __init__(self, tenant: Tenant, raw_key: str) -> None:
        self.tenant = tenant
        self.raw_key = raw_key
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")

    def get(self, url: str, **kw: Any) -> Any:
        return self.client.get(url, **kw)

    def delete(self, url: str, **kw: Any) -> Any:
        return self.client.delete(url, **kw)

    def post(self, url: str, data: Any = None, **kw: Any) -> Any:
        return self.client.post(url, data, format="json", **kw)

    def put(self, url: str, data: Any = None, **kw: Any) -> Any:
        return self.client.put(url, data, format="json", **kw)

    # Short-hands for the common calls.
    def upsert(self, sections: dict[str, str], *, scopes: list[str] | None = None) -> Any:
        """Upsert ``{id: text}``; with ``scopes``, each section gets them."""
        extra = {"scopes": scopes} if scopes is not None else {}
        items = [{"id": k, "text": v, **extra} for k, v in sections.items()]
        response = self.put("/api/v1/sections", {"sections": items})
        assert response.status_code == 200, response.content
        return response.json()

    def record(self, *, query: str, cited: list[str], scope: str = "default", accepted: bool | None = True,
               **extra: Any) -> Any:
        body: dict[str, Any] = {
            "scope": scope, "query": query, "cited": cited,
            "steps": [{"tool": "search", "args": {"q": query}, "returned": cited}],
        }
        if accepted is not None:
            body["signal"] = {"source": "caller", "accepted": accepted}
        body.update(extra)
        return self.post("/api/v1/trails", body)

    def recall(self, query: str, *, scope: str = "default", **extra: Any) -> dict[str, Any]:
        response = self.post("/api/v1/recall", {"scope": scope, "query": query, **extra})
        assert response.status_code == 200, response.content
        return response.json()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Nothing is skipped: a test that would skip (a missing system package, say) fails with
    its reason instead, so a run never reports green over tests that did not run.
    ``TRAILCACHE_ALLOW_SKIPS=1`` lets a developer without the Debian packages run the rest."""
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and os.environ.get("TRAILCACHE_ALLOW_SKIPS") != "1":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{reason}\n(this test would have been skipped; the suite skips nothing, see CONTRIBUTING.md)"
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    """A transactional test's recalls write their log entries on this process's writer thread,
    after the answer (cachecore/services/recall_log.py): they land before the test's fixtures are
    torn down. Otherwise the database's emptying (a TRUNCATE of every table) can meet a write still
    in flight, deadlock with it, and leave the rows to the next test (seen once in a full run)."""
    from cachecore.services import recall_log

    recall_log.flush()
    return (yield)


@pytest.fixture(scope="session", autouse=True)
def _close_stray_test_database_sessions(django_db_setup: None, django_db_blocker: Any) -> Any:
    """Background threads of some tests (live servers, workers) can still be closing their
    connection when the session ends; end them so the test database can always be dropped."""
    yield
    from django.db import connection

    test_name = connection.settings_dict.get("TEST", {}).get("NAME") or ""
    with django_db_blocker.unblock(), connection.cursor() as cur:
        # Only ever the test database: never the sessions of a running service on the main one.
        cur.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND datname = %s AND pid <> pg_backend_pid()",
            [test_name],
        )


@pytest.fixture
def make_tenant(db: None) -> Callable[..., Tenant]:
    counter = {"n": 0}

    def make(slug: str | None = None, **settings: Any) -> Tenant:
        counter["n"] += 1
        tenant = tenant_create(slug=slug or f"tenant-{counter['n']}")
        for field, value in settings.items():
            setattr(tenant, field, value)
        if settings:
            tenant.save()
        return tenant

    return make


@pytest.fixture
def make_caller(make_tenant: Callable[..., Tenant]) -> Callable[..., ApiCaller]:
    def make(tenant: Tenant | None = None, scopes: list[str] | None = None, permissions: list[str] | None = None,
             **settings: Any) -> ApiCaller:
        """A key with every permission unless ``permissions`` are given (tests of one operation
        need the others to set it up; the least-privilege default has its own tests)."""
        tenant = tenant or make_tenant(**settings)
        _, raw = api_key_create(caller=tenant_caller(tenant), name="test", scope_prefixes=scopes or [],
                                permissions=all_key_permissions() if permissions is None else permissions)
        return ApiCaller(tenant, raw)

    return make


@pytest.fixture
def caller(make_caller: Callable[..., ApiCaller]) -> ApiCaller:
    return make_caller()


@pytest.fixture
def outsider(make_caller: Callable[..., ApiCaller]) -> ApiCaller:
    """Another tenant's key: must never see the first tenant's data."""
    return make_caller()


@pytest.fixture
def own_redis() -> Any:
    """A started redis-server of this test's own (``tests/redis_server.py``)."""
    from tests.redis_server import RedisServer

    server = RedisServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_broker(own_redis: Any, settings: Any) -> Any:
    """``own_redis`` as the broker (what the breaker and the rate limits talk to)."""
    settings.CELERY_BROKER_URL = own_redis.url
    return own_redis


def use_broker(url: str) -> None:
    """Point the Celery app's publisher at ``url`` (drops its cached connection pools)."""
    from config.celery import app as celery_app

    celery_app.conf.broker_url = url
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def broker_down() -> Iterator[str]:
    """Nothing listens at the broker URL: publishing fails fast, job rows stay queued and
    tests run them by calling the task body (autouse in tests/background and
    tests/cachecore/services)."""
    from config.celery import app as celery_app
    from tests.redis_server import free_port

    original = celery_app.conf.broker_url
    url = f"redis://127.0.0.1:{free_port()}/0"
    use_broker(url)
    yield url
    use_broker(original)


@pytest.fixture
def media_root(tmp_path: Path, settings: Any) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def run_jobs() -> Callable[[], int]:
    """Run every queued job now through the task body (as a worker would). Returns jobs run."""
    from cachecore.models import Job, JobStatus
    from cachecore.tasks import job_run

    def run() -> int:
        ran = 0
        for job_id in Job.objects.filter(status=JobStatus.QUEUED).order_by("created_at").values_list("pk", flat=True):
            job_run(str(job_id))
            ran += 1
        return ran

    return run


@pytest.fixture
def redis_server() -> Iterator[Any]:
    """A redis-server of this test's own, not started yet (``own_redis`` is a started one)."""
    from tests.redis_server import RedisServer

    server = RedisServer()
    yield server
    server.stop()
