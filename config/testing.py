"""pytest plugin (``-p config.testing`` in pyproject's addopts), loaded before Django's settings:
the tests run in development mode, explicitly, and under an installation namespace of their
own, so a run never takes (or leaves) messages in the queues of a running service or of
another run, and the Celery workers the tests start inherit both."""

from __future__ import annotations

import os

os.environ.setdefault("TRAILCACHE_DEV", "true")
# Playwright's waits evaluate strings in the page, which the Content-Security-Policy forbids: off
# here, on in the tests about it (tests/browser/test_csp.py, tests/config/test_production_mode.py).
os.environ.setdefault("TRAILCACHE_CSP", "false")
# Request rates off (a suite sends thousands of requests a minute with few keys); on in the tests about them.
os.environ.setdefault("TRAILCACHE_RATE_PER_KEY_PER_MINUTE", "0")
os.environ.setdefault("TRAILCACHE_RATE_PER_TENANT_PER_MINUTE", "0")
# The per-tenant budget of requests in progress likewise (tests/api/test_tenant_concurrency.py sets it).
os.environ.setdefault("TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS", "0")
# Login lockout counts live in Redis for 15 minutes: runs one after another would add up. Far off
# here; the tests about it set their own limits.
os.environ.setdefault("TRAILCACHE_LOGIN_MAX_FAILURES", "1000")
os.environ.setdefault("TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS", "1000")
os.environ.setdefault("TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT", "1000")
os.environ.setdefault("TRAILCACHE_INSTANCE", "test-" + os.environ.get("TRAILCACHE_TEST_DB", "test_trailcache"))
# The settings only read DATABASE_URL (or the embedded default's URL) and start nothing; a plain
# `pytest` starts the embedded server here, as scripts/test.sh does (a no-op when it runs already).
if not os.environ.get("DATABASE_URL"):
    from config import embedded_db

    embedded_db.ensure_running()
