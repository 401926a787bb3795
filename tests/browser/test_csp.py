"""The console under its Content-Security-Policy in a real browser: every page, an htmx swap
(htmx inserts its indicator <style>), the tenant switcher and the select-all box, with no
violation reported (the policy is in config/security.py)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.browser.conftest import RECORD_VIOLATIONS, login

pytestmark = pytest.mark.browser


PAGES = ["/console/", "/console/trails/", "/console/sections/", "/console/settings/", "/console/api-keys/",
         "/console/audit/", "/console/exports/"]


@pytest.fixture(autouse=True)
def policy_on(settings):
    settings.TRAILCACHE_CSP = True


def _violations(page) -> list[str]:
    return page.evaluate("window.__csp")


def _wait_until(page, expression: str) -> None:
    """Playwright's wait_for_function evaluates a string in the page: the policy forbids it."""
    for _ in range(150):
        if page.evaluate(expression):
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"never true: {expression}")


def test_every_console_page_runs_under_the_policy_without_a_violation(page, live_server, console_tenant):
    page.add_init_script(RECORD_VIOLATIONS)
    login(page, live_server, "admin@acme.test", next_path=quote("/console/?tenant=acme"))
    response = page.goto(f"{live_server.url}/console/?tenant=acme")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    for path in PAGES:
        page.goto(f"{live_server.url}{path}?tenant=acme")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("typeof htmx") == "object", path  # the static scripts loaded
        assert _violations(page) == [], (path, _violations(page))


def test_htmx_swaps_and_inline_handlers_work_under_the_policy(page, live_server, console_tenant):
    page.add_init_script(RECORD_VIOLATIONS)
    login(page, live_server, "support@acme.test", next_path=quote("/console/trails/?tenant=acme"))
    page.evaluate("window.__marker = 'kept'")
    page.fill("input[name=q]", "passw")
    _wait_until(page, "document.querySelectorAll('#trail-table tbody tr').length === 1")
    assert page.evaluate("window.__marker") == "kept"  # swapped by htmx, not reloaded
    # htmx's own indicator style made it in (allowed by its hash).
    assert page.evaluate("[...document.querySelectorAll('head style')].some(s => s.textContent.includes("
                         "'htmx-indicator'))")
    page.fill("input[name=q]", "")
    _wait_until(page, "document.querySelectorAll('#trail-table tbody tr').length === 3")
    select_all = page.locator("#trail-table th.check input[type=checkbox]")
    if select_all.count():
        select_all.check()
        assert page.locator("#trail-table input[name=ids]:checked").count() == 3
    assert _violations(page) == []


def test_a_script_injected_into_the_page_is_blocked(page, watch, live_server, console_tenant):
    """The policy is enforced, not only sent: an inline <script> added to the page does not run."""
    page.add_init_script(RECORD_VIOLATIONS)
    login(page, live_server, "support@acme.test", next_path=quote("/console/?tenant=acme"))
    page.evaluate("""() => { const s = document.createElement('script');
        s.textContent = 'window.__injected = true'; document.body.appendChild(s); }""")
    assert page.evaluate("window.__injected") is None
    assert any(v.startswith("script-src") for v in _violations(page)), _violations(page)
    # The browser's console reports the blocked script: provoked on purpose, the only thing allowed.
    expected = [p for p in watch.problems if "violates the following Content Security Policy" in p]
    assert expected
    watch.problems = [p for p in watch.problems if p not in expected]
