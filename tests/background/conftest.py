"""Background work: the broker is down unless a test starts one and the media root is in a
temp folder (the fixtures are in tests/conftest.py, shared with tests/cachecore/services)."""

from __future__ import annotations

import pytest

from tests.conftest import use_broker  # noqa: F401 - re-exported for the tests
from tests.redis_server import RedisServer, free_port  # noqa: F401 - re-exported for the tests


@pytest.fixture(autouse=True)
def _background_work_stays_here(broker_down: str, media_root: object) -> None:
    """Every test here starts with the broker down and its own media root."""
