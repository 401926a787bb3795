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


# Test folders that are not a package's: behaviour across packages (jobs and the broker, a
# real browser, security properties, a multi-node deployment) and the labelled data.
CROSS_CUTTING = {"background", "browser", "security", "deploy", "data"}


def test_tests_mirror_the_packages():
    """Every project package has its tests folder named after it (tests/<package>/, engine tests
    in tests/cachecore/engine/); other folders are the cross-cutting suites above. Folders
    without __init__.py share one namespace, so their test file names must be unique
    (pytest's default import mode), and tests/research has none (it would shadow research)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    # clients/ holds the client libraries (clients/python/…), a package of its own kind.
    packages = {p.parent.name for p in root.glob("*/__init__.py") if p.parent.name != "tests"} | {"clients"}
    folders = {p.name for p in (root / "tests").iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert packages <= folders, f"packages without a tests folder: {sorted(packages - folders)}"
    strays = folders - packages - CROSS_CUTTING
    assert not strays, f"tests folders that mirror nothing: {sorted(strays)}"
    assert not (root / "tests" / "research" / "__init__.py").exists()
    assert (root / "tests" / "cachecore" / "engine" / "test_engine_logic.py").exists()
    names: dict[str, Path] = {}
    for test in (root / "tests").rglob("test_*.py"):
        if (test.parent / "__init__.py").exists() or "vendor" in test.parts:
            continue
        assert test.name not in names, f"two test files named {test.name}: {names[test.name]} and {test}"
        names[test.name] = test
