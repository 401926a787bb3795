"""examples/agent_loop.py runs against the live service holding the demo manual: the first
question misses and is recorded, the same question asked again is served, the different question is a hint."""

from __future__ import annotations

import os
import subprocess
import sys

from cachecore.services.sections import sections_upsert
from devtools import demo
from examples.agent_loop import DEMO_SECTION_IDS
from tenants.caller import tenant_caller


def test_the_example_reads_exactly_the_demo_sections():
    assert sorted(DEMO_SECTION_IDS) == sorted(demo.SECTIONS)


def test_the_example_misses_records_then_is_served_then_hinted(make_service):
    service = make_service(coverage_floor=demo.DEMO_COVERAGE_FLOOR)
    sections_upsert(caller=tenant_caller(service.tenant),
                    sections=[{"id": k, "text": v} for k, v in demo.SECTIONS.items()])
    run = subprocess.run(
        [sys.executable, "examples/agent_loop.py", "--scope", "example:test"], capture_output=True, text=True,
        env={**os.environ, "TRAILCACHE_URL": service.url, "TRAILCACHE_API_KEY": service.api_key}, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "outcomes: miss → prefetch → hint" in out, out
    assert "recorded trail" in out and "(active) citing manual/sync.md#bandwidth" in out
    assert "no search needed" in out and "feedback → the served sections answered it" in out
    assert "reading manual/sync.md#bandwidth first" in out
    assert service.client().stats(scope="example:test").feedback["positive"] == 1
