"""pytest plugin (``-p config.testing`` in pyproject's addopts), loaded before Django's settings:
the tests run in development mode, explicitly, and under an installation namespace of their
own, so a run never takes (or leaves) messages in the queues of a running service or of
another run, and the Celery workers the tests start inherit both."""

from __future__ import annotations

import os

os.environ.setdefault("TRAILCACHE_DEV", "true")
os.environ.setdefault("TRAILCACHE_INSTANCE", "test-" + os.environ.get("TRAILCACHE_TEST_DB", "test_trailcache"))
