"""Rules of the suite itself: nothing is skipped, and async-unsafe ORM access is allowed only
inside the browser tests (tests/browser/conftest.py), never for the whole process."""

from __future__ import annotations

import os

import pytest

from tests import conftest


def _through_the_hook(report: pytest.TestReport) -> pytest.TestReport:
    hook = conftest.pytest_runtest_makereport(item=None, call=None)  # type: ignore[arg-type]
    next(hook)
    try:
        hook.send(report)
    except StopIteration as done:
        return done.value
    raise AssertionError("the hook wrapper did not return")


def _report(outcome: str, longrepr: object = None, **extra: object) -> pytest.TestReport:
    report = pytest.TestReport(nodeid="t.py::t", location=("t.py", 0, "t"), keywords={}, outcome=outcome,
                               longrepr=longrepr, when="setup")
    for key, value in extra.items():
        setattr(report, key, value)
    return report


def test_a_test_that_would_skip_fails_with_its_reason(monkeypatch):
    monkeypatch.delenv("TRAILCACHE_ALLOW_SKIPS", raising=False)
    report = _through_the_hook(_report("skipped", ("t.py", 1, "Skipped: python3.11-doc missing")))
    assert report.outcome == "failed"
    assert "python3.11-doc missing" in str(report.longrepr)


def test_expected_failures_and_passes_are_left_alone(monkeypatch):
    monkeypatch.delenv("TRAILCACHE_ALLOW_SKIPS", raising=False)
    assert _through_the_hook(_report("skipped", ("t.py", 1, "x"), wasxfail="known")).outcome == "skipped"
    assert _through_the_hook(_report("passed")).outcome == "passed"


def test_a_developer_may_allow_skips_explicitly(monkeypatch):
    monkeypatch.setenv("TRAILCACHE_ALLOW_SKIPS", "1")
    assert _through_the_hook(_report("skipped", ("t.py", 1, "x"))).outcome == "skipped"


def test_async_unsafe_orm_access_is_not_allowed_outside_the_browser_tests():
    assert "DJANGO_ALLOW_ASYNC_UNSAFE" not in os.environ
