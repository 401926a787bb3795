"""Request rates per API key and per tenant (``TRAILCACHE_RATE_PER_KEY_PER_MINUTE``,
``TRAILCACHE_RATE_PER_TENANT_PER_MINUTE``; 0 turns a limit off), counted across every web
process (``tenants.ratelimit``). Over either: 429 with ``Retry-After``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from tenants.ratelimit import counters

PERIOD = 60


class KeyAndTenantRateThrottle(BaseThrottle):
    def allow_request(self, request: Any, view: Any) -> bool:
        key = request.auth
        self._wait: float | None = None
        if key is None or not hasattr(key, "tenant_id"):
            return True  # unauthenticated: answered 401 anyway
        limits = [(f"api-{name}", ident, limit) for name, ident, limit in (
            ("key", str(key.pk), settings.TRAILCACHE_RATE_PER_KEY_PER_MINUTE),
            ("tenant", str(key.tenant_id), settings.TRAILCACHE_RATE_PER_TENANT_PER_MINUTE),
        ) if limit > 0]
        # Both counters in one Redis round trip; the key's first, the tenant's only when the
        # key is within its limit.
        verdict = counters.hit_all(limits, period=PERIOD)
        if not verdict.allowed:
            self._wait = verdict.retry_after
            return False
        return True

    def wait(self) -> float | None:
        return self._wait
