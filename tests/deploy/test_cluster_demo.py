"""Past one machine, tested here: `make cluster-demo` (scripts/cluster_demo.py) runs two web
nodes and two Celery workers against one PostgreSQL and one Redis of its own, records and
recalls through both, runs exports on both workers, and finds nothing lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_two_web_nodes_and_two_workers_share_one_database_and_one_redis_and_lose_nothing():
    # A database of this test run's own on the same server (never the working one).
    database = os.environ.get("TRAILCACHE_TEST_DB", "test_trailcache") + "_cluster"
    result = subprocess.run(
        [sys.executable, "scripts/cluster_demo.py", "--records", "24", "--exports", "6", "--database", database],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "FAIL" not in out
    assert "| every trail recalled (prefetch) from the other node | PASS | 24/24 |" in out
    assert "| every acknowledged trail in the database, in its tenant | PASS | 24/24 |" in out
    assert "| jobs ran on both workers | PASS |" in out
    for node in ("web1", "web2"):
        assert f"| {node} :" in out
    for worker in ("demo1", "demo2"):
        assert f"| {worker} | " in out
