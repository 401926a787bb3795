"""Swagger UI (``/api/v1/docs/``) in a real browser under its Content-Security-Policy: it renders
every operation of the schema, every request the page makes goes to this service's origin
(no CDN, no third-party host), and the browser reports no policy violation."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import RECORD_VIOLATIONS

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def policy_on(settings):
    settings.TRAILCACHE_CSP = True


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def test_swagger_ui_renders_every_operation_from_this_origin_without_a_violation(page, live_server, client):
    schema = client.get("/api/v1/schema/?format=json").json()
    operations = {(method.upper(), path) for path, ops in schema["paths"].items() for method in ops}
    assert len(operations) >= 13
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.add_init_script(RECORD_VIOLATIONS)

    response = page.goto(f"{live_server.url}/api/v1/docs/")
    assert response.status == 200 and "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock", timeout=30_000)
    page.wait_for_load_state("networkidle")
    shown = set()
    for block in page.locator(".opblock").all():
        method = block.locator(".opblock-summary-method").inner_text().strip()
        path = block.locator(".opblock-summary-path").get_attribute("data-path")
        shown.add((method, path))
    assert shown == operations

    # An operation opens: its parameters and responses render (the schema's 3.1 types too).
    page.locator('.opblock-summary-path[data-path="/api/v1/trails/{trail_id}"]').first.click()
    page.wait_for_selector(".opblock.is-open .responses-table")
    assert page.locator(".opblock.is-open .parameters").count() == 1

    network = [url for url in requested if urlsplit(url).scheme in ("http", "https", "ws", "wss")]
    assert any("/static/" in url for url in network) and any("/api/v1/schema/" in url for url in network)
    assert {_origin(url) for url in network} == {_origin(live_server.url)}, network
    assert page.evaluate("window.__csp") == []


def test_the_docs_page_reports_a_violation_when_there_is_one(page, watch, live_server):
    """The listener the test above relies on works on this page: an inline script injected into
    Swagger UI is blocked and recorded."""
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(f"{live_server.url}/api/v1/docs/")
    page.wait_for_selector(".opblock", timeout=30_000)
    page.evaluate("""() => { const s = document.createElement('script');
        s.textContent = 'window.__injected = true'; document.body.appendChild(s); }""")
    page.wait_for_timeout(200)
    assert page.evaluate("window.__injected") is None
    assert any(v.startswith("script-src") for v in page.evaluate("window.__csp"))
    provoked = [p for p in watch.problems if "violates the following Content Security Policy" in p]
    assert provoked
    watch.problems = [p for p in watch.problems if p not in provoked]
