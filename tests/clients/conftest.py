"""The Python client, the MCP server and the retriever adapters against the real service:
pytest-django's live server (a real HTTP server in this process, on the test database)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tenants.caller import tenant_caller
from tenants.models import Tenant, all_key_permissions
from tenants.services import api_key_create, tenant_create


@dataclass
class Service:
    url: str
    tenant: Tenant
    api_key: str

    def client(self, **kwargs: Any) -> Any:
        from trailcache import Trailcache

        return Trailcache(self.url, self.api_key, **kwargs)

    def async_client(self, **kwargs: Any) -> Any:
        from trailcache import AsyncTrailcache

        return AsyncTrailcache(self.url, self.api_key, **kwargs)


@pytest.fixture
def make_service(transactional_db: None, live_server: Any) -> Callable[..., Service]:
    counter = {"n": 0}

    def make(scopes: list[str] | None = None, tenant: Tenant | None = None, **settings: Any) -> Service:
        counter["n"] += 1
        if tenant is None:
            tenant = tenant_create(slug=f"client-{counter['n']}")
            for field, value in settings.items():
                setattr(tenant, field, value)
            if settings:
                tenant.save()
        _, raw = api_key_create(caller=tenant_caller(tenant), name="client test", scope_prefixes=scopes or [],
                                permissions=all_key_permissions())
        return Service(live_server.url, tenant, raw)

    return make


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service()


@pytest.fixture
def tc(service: Service) -> Iterator[Any]:
    with service.client(fail_open=False) as client:
        yield client
