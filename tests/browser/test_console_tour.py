"""Every console page on the demo data, at a desktop (1400 px) and a phone (390 px) width:
no browser error or failed request, no page wider than the screen (wide tables scroll inside
their card), navigation that collapses on the phone, and axe-core finding no serious or
critical accessibility violation. A screenshot of each page at each width goes to
reports/console/ for review; docs/console.md shows two of them (docs/results/console-*.png)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from cachecore.models import Trail
from devtools.demo import seed_demo_data
from tenants.caller import tenant_caller
from tests.browser.conftest import PASSWORD, login, open_page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "reports" / "console"
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
# WCAG 2.1 A and AA plus axe's best practices; the tests fail on serious and critical findings.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
WIDTHS = {"desktop": 1400, "phone": 390}


@pytest.fixture
def demo_world(transactional_db: None) -> dict[str, Any]:
    from cachecore.services.sections import sections_upsert
    from cachecore.services.trails import trail_record
    from tenants.services import operator_create, tenant_create

    demo = tenant_create(slug="demo", name="Demo Docs Inc.")
    seed_demo_data(tenant=demo)
    # A throw-away tenant that sorts first, as a test run leaves behind: not where anyone lands.
    scratch = tenant_create(slug="aaa-scratch", name="Scratch")
    sections_upsert(caller=tenant_caller(scratch), sections=[{"id": "s#1", "text": "Scratch text."}])
    trail_record(caller=tenant_caller(scratch), scope="default", query="scratch question", cited=["s#1"], steps=[],
                          signal={"source": "caller", "accepted": True})
    operator_create(email="root@trailcache.test", password=PASSWORD, tenant=None, role=None, superuser=True)
    install = Trail.objects.get(tenant=demo, query="How do I install Acme Sync on Ubuntu?")
    return {"tenant": demo, "install": install}


def pages(world: dict[str, Any]) -> dict[str, str]:
    trail = world["install"]
    return {
        "dashboard": "/console/?tenant=demo",
        "trails": "/console/trails/?tenant=demo&sort=-hits",
        "trail": f"/console/trails/{trail.pk}/?tenant=demo",
        "sections": "/console/sections/?tenant=demo",
        "section": f"/console/sections/detail/?tenant=demo&id={quote('manual/install.md#linux', safe='')}",
        "settings": "/console/settings/?tenant=demo",
        "api-keys": "/console/api-keys/?tenant=demo",
        "audit": "/console/audit/?tenant=demo",
        "exports": "/console/exports/?tenant=demo",
        "erase": "/console/subjects/erase/?tenant=demo",
        "all-tenants": "/console/?tenant=*",
    }


def axe_violations(page: Any) -> list[str]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "async (tags) => { const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});"
        " return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))})); }",
        AXE_TAGS,
    )
    return [f"{v['impact']}: {v['id']} ({v['help']}) at {json.dumps(v['nodes'])}"
            for v in result if v["impact"] in ("serious", "critical")]


def page_overflow(page: Any) -> int:
    """How many pixels the page is wider than the window (0: nothing scrolls sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def shoot(page: Any, name: str, width_name: str) -> Path:
    """The whole page, and in first-screen/ what the first screen shows (for docs/console.md)."""
    (SCREENSHOTS / "first-screen").mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"console-{name}-{width_name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.screenshot(path=str(SCREENSHOTS / "first-screen" / path.name))
    assert path.stat().st_size > 5_000
    return path


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_every_page_is_clean_usable_and_accessible_at_this_width(browser, live_server, demo_world, width_name):
    width = WIDTHS[width_name]
    context, page, watch = open_page(browser, width=width, height=900 if width > 800 else 844)
    try:
        page.goto(f"{live_server.url}/console/login/")
        assert not axe_violations(page), axe_violations(page)
        shoot(page, "login", width_name)
        login(page, live_server, "root@trailcache.test", next_path="/console/")
        # Lands on the demo tenant, not on the scratch tenant that sorts first.
        assert page.locator("#tenant-select").input_value() == "demo"
        found: dict[str, list[str]] = {}
        for name, url in pages(demo_world).items():
            page.goto(f"{live_server.url}{url}")
            page.wait_for_load_state("networkidle")
            assert page_overflow(page) <= 1, f"{name} is {page_overflow(page)} px wider than {width} px"
            assert "(query redacted" not in page.inner_text("main"), name
            violations = axe_violations(page)
            if violations:
                found[name] = violations
            shoot(page, name, width_name)
        assert not found, json.dumps(found, indent=1)
        watch.check()
    finally:
        context.close()


def test_navigation_collapses_on_a_phone_and_opens_with_its_button(browser, live_server, console_tenant):
    context, page, watch = open_page(browser, width=390, height=844)
    try:
        login(page, live_server, "support@acme.test", next_path=quote("/console/trails/?tenant=acme"))
        nav = page.locator("nav.mainnav")
        assert not nav.is_visible()
        toggle = page.locator("[data-nav-toggle]")
        assert toggle.get_attribute("aria-expanded") == "false"
        toggle.click()
        assert nav.is_visible() and toggle.get_attribute("aria-expanded") == "true"
        assert page.locator("#tenant-select").is_visible()
        assert not axe_violations(page), axe_violations(page)
        shoot(page, "menu", "phone")
        page.click("nav.mainnav >> text=Sections")
        page.wait_for_selector("h1:has-text('Sections')")
        # The trails table is wider than the phone: it scrolls inside its card, the page does not.
        page.goto(f"{live_server.url}/console/trails/?tenant=acme")
        wrap = page.locator("#trail-table").locator("xpath=..")
        assert wrap.evaluate("e => e.scrollWidth > e.clientWidth") and page_overflow(page) <= 1
        watch.check()
    finally:
        context.close()


def test_focus_copy_and_the_way_from_a_section_to_its_trails(browser, live_server, demo_world):
    context, page, watch = open_page(browser)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    try:
        login(page, live_server, "root@trailcache.test", next_path=quote("/console/sections/?tenant=demo"))
        # Keyboard: the skip link comes first and shows itself; focus stays visible after it.
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "skip-link"
        assert page.locator(".skip-link").bounding_box()["y"] >= 0
        for _ in range(3):
            page.keyboard.press("Tab")
        assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") not in ("", "none")
        # Sections → the trails citing one → that trail → its cited section.
        row = page.locator("#sections-table tr", has_text="manual/install.md#requirements")
        assert row.locator("[data-cited-by]").inner_text() == "1 trail"
        row.locator("[data-cited-by] a").click()
        page.wait_for_selector("#section-filter")
        assert page.locator("#trail-table tbody tr").count() == 1
        page.click("#trail-table tbody tr td.clip a")
        page.wait_for_selector("text=Cited sections, now")
        assert "changed" in page.inner_text("#cited-table")  # the manual edit changed the Linux section
        assert page.locator("#recalls-table tbody tr").count() > 0
        # Copy the trail id.
        trail = demo_world["install"]
        page.click(f"button.copy[data-copy='{trail.pk}']")
        page.wait_for_selector(f"button.copy.copied[data-copy='{trail.pk}']")
        assert page.evaluate("navigator.clipboard.readText()") == str(trail.pk)
        page.wait_for_function("document.getElementById('live-status').textContent.includes('Copied')")
        page.click("#cited-table >> text=manual/install.md#linux")
        page.wait_for_selector("text=Trails citing it")
        watch.check()
    finally:
        context.close()
