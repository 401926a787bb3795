"""Services queue jobs and write export files: as in tests/background, the broker is down
(jobs stay queued until ``run_jobs`` runs them by their task body) and the media root is a
temp folder. The fixtures are in tests/conftest.py."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _jobs_stay_queued(broker_down: str, media_root: object) -> None:
    """Every service test starts with the broker down and its own media root."""
