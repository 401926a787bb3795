"""Real headless Chromium (Debian's /usr/bin/chromium, never a downloaded browser) driving
the console on pytest-django's live_server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tenants.caller import tenant_caller

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]
PASSWORD = "browser-test-pass"
# Added with page.add_init_script: CSP violations, recorded in the page before any of its scripts run.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(
  e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' (' + (e.sample || '') + ')'));
"""


@pytest.fixture(scope="module", autouse=True)
def allow_orm_beside_playwright() -> Iterator[None]:
    """Playwright's sync API runs an event loop in this thread, so Django takes the fixtures'
    ORM calls for calls from async code. Allowed here only, while the browser tests run (the
    browser fixture below lives as long), never for the rest of the suite."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="module")
def browser(allow_orm_beside_playwright: None) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class BrowserWatch:
    """Everything that went wrong in the browser while a test drove it: console errors,
    uncaught exceptions, failed requests and HTTP errors. A test that provokes an error on
    purpose (a form answered with 400) names it with ``expect``; anything else fails the test."""

    def __init__(self, page: Any) -> None:
        self.problems: list[str] = []
        self.expected: list[tuple[int, str]] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"uncaught exception: {error}"))
        page.on("requestfailed", self._request_failed)
        page.on("response", self._response)

    def expect(self, status: int, path: str) -> None:
        self.expected.append((status, path))

    def _is_expected(self, status: int | None, url: str) -> bool:
        return any((status is None or status == s) and p in url for s, p in self.expected)

    def _console(self, message: Any) -> None:
        if message.type != "error":
            return
        url = (message.location or {}).get("url", "")
        if "Failed to load resource" in message.text and self._is_expected(None, url):
            return
        self.problems.append(f"console error: {message.text} ({url})")

    def _request_failed(self, request: Any) -> None:
        failure = request.failure or ""
        # htmx cancels a superseded request on purpose (hx-sync="this:replace"): not a failure.
        if "ERR_ABORTED" in failure:
            return
        self.problems.append(f"request failed: {request.method} {request.url}: {failure}")

    def _response(self, response: Any) -> None:
        if response.status >= 400 and not self._is_expected(response.status, response.url):
            self.problems.append(f"HTTP {response.status}: {response.request.method} {response.url}")

    def check(self) -> None:
        problems, self.problems = self.problems, []
        assert not problems, "the browser reported:\n" + "\n".join(problems)


def open_page(browser: Any, *, width: int = 1400, height: int = 1000) -> tuple[Any, Any, BrowserWatch]:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15_000)
    return context, page, BrowserWatch(page)


@pytest.fixture
def watch_page(browser: Any) -> Iterator[tuple[Any, BrowserWatch]]:
    """A page at 1400 px and its watch; the test fails on any browser error it did not expect."""
    context, page, watch = open_page(browser)
    yield page, watch
    try:
        watch.check()
    finally:
        context.close()


@pytest.fixture
def page(watch_page: tuple[Any, BrowserWatch]) -> Any:
    return watch_page[0]


@pytest.fixture
def watch(watch_page: tuple[Any, BrowserWatch]) -> BrowserWatch:
    return watch_page[1]


@pytest.fixture(autouse=True)
def exports_in_tmp(settings: Any, tmp_path: Any) -> None:
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def console_tenant(transactional_db: None) -> Any:
    from cachecore.services.sections import sections_upsert
    from cachecore.services.trails import trail_record
    from tenants.models import Role
    from tenants.services import operator_create, tenant_create

    tenant = tenant_create(slug="acme", name="Acme Docs")
    sections_upsert(caller=tenant_caller(tenant), sections=[
        {"id": "manual/install.md#linux", "text": "Install with apt install acme-sync on Debian and Ubuntu."},
        {"id": "manual/account.md#password", "text": "To reset your password, choose Forgot password."},
        {"id": "manual/sync.md#conflicts", "text": "When a file changes on two devices, both copies are kept."},
    ])
    for query, cited in [
        ("How do I install Acme Sync on Ubuntu?", "manual/install.md#linux"),
        ("How do I reset my password?", "manual/account.md#password"),
        ("What happens on a sync conflict?", "manual/sync.md#conflicts"),
    ]:
        trail_record(caller=tenant_caller(tenant), scope="default", query=query, cited=[cited],
                              steps=[{"tool": "search", "args": {"q": query}, "returned": [cited]}],
                              signal={"source": "caller", "accepted": True})
    for role in (Role.SUPPORT, Role.ADMIN):
        operator_create(email=f"{role}@acme.test", password=PASSWORD, tenant=tenant, role=role)
    return tenant


def login(page: Any, live_server: Any, email: str, next_path: str = "/console/") -> None:
    page.goto(f"{live_server.url}/console/login/?next={next_path}")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
