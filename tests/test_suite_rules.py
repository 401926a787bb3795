"""Rules of the suite itself: nothing is skipped, and async-unsafe ORM access is allowed only
inside the browser tests (tests/browser/conftest.py), never for the whole process."""

from __future__ import annotations

import os
import re

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


# A literal request (``client.get("/api/…")``), the ApiCaller short-hands, the in-process fuzzer
# or a live server (the browser tests drive one).
_HTTP = re.compile(r"""\.(get|post|put|patch|delete|head|options)\(\s*f?["']/"""
                   r"""|\b\w*(caller|outsider|limited|client)\w*\.(upsert|record|recall)\(|\bschemathesis\b|\blive_server\b""")
_USES_SERVICES = re.compile(r"^\s*(from|import) cachecore\.(services|selectors)\b", re.M)
# Outside tests/cachecore, tests that call the services without a request, with their reason.
SERVICES_FROM_OUTSIDE = {
    "tenants/test_audit_in_transaction.py": "the tenants' audit entry is written in each service's transaction",
    "clients/test_example_agent_loop.py": "the example's sections are seeded through the service",
    "devtools/test_demo.py": "the demo tenant is seeded through the services, as make run does",
}


def _test_modules() -> dict[str, str]:
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    return {t.relative_to(tests).as_posix(): t.read_text(encoding="utf-8")
            for t in sorted(tests.rglob("test_*.py")) if "vendor" not in t.parts}


# Fixtures that send requests (an API key's client, the console's, a live server, a browser page).
_HTTP_FIXTURES = {"caller", "make_caller", "outsider", "client", "admin_client", "live_server", "page", "people"}


def _service_calls_without_a_request(source: str, *, but: tuple[str, ...] = ()) -> list[str]:
    """The module's test functions that call a name imported from cachecore.services or
    cachecore.selectors (not from the modules in ``but``), take no fixture that sends requests
    and send none themselves."""
    import ast

    tree = ast.parse(source)
    imported = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                and re.fullmatch(r"cachecore\.(services|selectors)(\.\w+)?", node.module or "")
                for alias in node.names if not {(node.module or "").rsplit(".", 1)[-1], alias.name} & set(but)}
    found = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & imported
        fixtures = {a.arg for a in node.args.args}
        if used and not fixtures & _HTTP_FIXTURES and not _HTTP.search(ast.get_source_segment(source, node) or ""):
            found.append(node.name)
    return found


def test_service_and_selector_tests_live_under_tests_cachecore():
    """A test that calls ``cachecore.services`` or ``cachecore.selectors`` and sends no HTTP
    request is a service test: it lives in tests/cachecore/services/ or tests/cachecore/selectors/
    (or tests/cachecore itself for invariants across services), never in tests/api,
    tests/background or tests/security. The studies (tests/research) drive the services;
    tests/background owns the job machinery (cachecore.services.jobs: claiming, retries, the sweeper).
    In tests/api, tests/background and tests/security each test function is checked, elsewhere
    each module (a tenants test may call a selector with a Caller, a console test a service)."""
    modules = {path: source for path, source in _test_modules().items()
               if not path.startswith(("cachecore/", "research/")) and path not in SERVICES_FROM_OUTSIDE}
    misplaced = [path for path, source in modules.items() if _USES_SERVICES.search(source) and not _HTTP.search(source)]
    assert not misplaced, f"service tests outside tests/cachecore/services or selectors: {misplaced}"
    scattered = {path: source for path, source in modules.items()
                 if path.startswith(("api/", "background/", "security/"))}
    tests = {f"{path}::{name}" for path, source in scattered.items()
             for name in _service_calls_without_a_request(source, but=("jobs",) * path.startswith("background/"))}
    assert not tests, f"service tests outside tests/cachecore/services or selectors: {sorted(tests)}"


def test_tests_under_services_and_selectors_are_named_after_the_module_they_test():
    """tests/cachecore/services/test_<module>[_<more>].py tests cachecore/services/<module>.py and
    imports it; the same for selectors."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for layer in ("services", "selectors"):
        modules = {p.stem for p in (root / "cachecore" / layer).glob("*.py") if p.stem != "__init__"}
        tests = [p for p in _test_modules() if p.startswith(f"cachecore/{layer}/")]
        assert tests, f"no tests in tests/cachecore/{layer}"
        for path in tests:
            stem = path.rsplit("/", 1)[1].removeprefix("test_").removesuffix(".py")
            named = [m for m in modules if stem == m or stem.startswith(f"{m}_")]
            assert named, f"tests/{path} names no module of cachecore/{layer}: {sorted(modules)}"
            names = "|".join(named)
            imports = re.compile(rf"^\s*from cachecore\.{layer}(\.({names}) import| import .*\b({names})\b)", re.M)
            assert imports.search(_test_modules()[path]), f"tests/{path} does not import cachecore.{layer}.{named[0]}"


def test_api_tests_make_http_requests():
    """tests/api is the REST contract: each module sends requests (literal URLs, the ApiCaller
    short-hands or schemathesis); a test that only calls Python belongs with its package."""
    silent = [path for path, source in _test_modules().items() if path.startswith("api/") and not _HTTP.search(source)]
    assert not silent, f"tests/api modules that never make an HTTP request: {silent}"


def test_background_tests_involve_jobs_or_the_broker():
    """tests/background is the job machinery across processes: each module runs, queues or
    publishes jobs (``run_jobs``, ``Job`` rows, a redis-server, the Celery app)."""
    unrelated = [path for path, source in _test_modules().items() if path.startswith("background/")
                 and not re.search(r"\brun_jobs\b|\bJob\b|redis_server|\bbroker|celery", source)]
    assert not unrelated, f"tests/background modules that involve no job nor the broker: {unrelated}"
