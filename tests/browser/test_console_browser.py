"""The console in a real browser: login, live filtering that swaps only the table, bulk
purge with its confirmation, a settings change reaching the audit log, and the dashboard's
window switching in place (screenshots of every page: test_console_tour.py)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from cachecore.models import Trail
from tenants.caller import tenant_caller
from tests.browser.conftest import login

pytestmark = pytest.mark.browser


def rows(page) -> int:
    return page.locator("#trail-table tbody tr").count()


def test_login_then_filter_swaps_the_table_without_a_full_reload(page, live_server, console_tenant):
    login(page, live_server, "support@acme.test", next_path=quote("/console/trails/?tenant=acme"))
    assert page.url.endswith("/console/trails/?tenant=acme")
    assert rows(page) == 3
    page.evaluate("window.__marker = 'still here'")
    page.fill("input[name=q]", "passw")
    page.wait_for_function("document.querySelectorAll('#trail-table tbody tr').length === 1")
    assert "reset my password" in page.inner_text("#trail-table")
    assert page.evaluate("window.__marker") == "still here"  # htmx swapped the table only
    assert "q=passw" in page.url  # hx-push-url keeps the state in the address
    page.reload()
    assert rows(page) == 1 and page.input_value("input[name=q]") == "passw"


def test_bulk_purge_asks_how_many_then_purges_in_place(page, live_server, console_tenant):
    login(page, live_server, "support@acme.test", next_path=quote("/console/trails/?tenant=acme"))
    page.evaluate("window.__marker = 1")
    boxes = page.locator("#trail-table input[name=ids]")
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.click("#bulk button[value=purge]")
    page.wait_for_selector("text=Purge 2 trails?")
    page.click("form.confirm button[type=submit]")
    page.wait_for_selector("text=Purged 2 trails.")
    assert rows(page) == 1
    assert page.inner_text("[data-count=all]") == "1"
    assert page.evaluate("window.__marker") == 1
    assert Trail.objects.filter(tenant=console_tenant).count() == 1


def test_change_retention_and_see_the_audit_entry(page, watch, live_server, console_tenant):
    watch.expect(400, "/console/settings/")  # the refused value comes back as a 400 with the form
    login(page, live_server, "admin@acme.test", next_path=quote("/console/settings/?tenant=acme"))
    page.fill("#id_query_retention_days", "5000")
    page.click("button:has-text('Save settings')")
    assert "less than or equal to 3650" in page.inner_text(".settings")
    page.fill("#id_query_retention_days", "14")
    page.click("button:has-text('Save settings')")
    page.wait_for_selector("text=Saved: query retention days.")
    page.click("nav.mainnav >> text=Audit log")
    page.wait_for_selector("#audit-table")
    table = page.inner_text("#audit-table")
    assert "Settings changed" in table and "admin@acme.test" in table and "30 → 14" in table


def test_dashboard_window_switches_in_place(page, live_server, console_tenant):
    from cachecore.services.recall import recall

    for query in ("How do I install Acme Sync on Ubuntu?", "something else entirely"):
        recall(caller=tenant_caller(console_tenant), scope="default", query=query)
    login(page, live_server, "admin@acme.test", next_path=quote("/console/?tenant=acme&days=30"))
    page.wait_for_selector("#dashboard svg")
    assert int(page.inner_text("[data-kpi=recalls]")) == 2
    page.evaluate("window.__marker = 1")
    page.click(".segmented >> text=7 days")
    page.wait_for_function("location.search.includes('days=7')")
    assert page.evaluate("window.__marker") == 1
    page.click(".segmented >> text=30 days")
    page.wait_for_function("location.search.includes('days=30')")
    assert page.evaluate("window.__marker") == 1


def test_accept_the_calibration_suggestion_and_see_the_audit_entry(page, live_server, console_tenant):
    from cachecore.models import RecallEvent

    # The labels are judged at the cut recall applies: three sections would raise it over all of
    # them (``small_tenant_cut``), so it is off here.
    console_tenant.small_tenant_cut = False
    console_tenant.save(update_fields=["small_tenant_cut"])
    trail = Trail.objects.filter(tenant=console_tenant).first()
    cut = console_tenant.prefetch_confidence
    # The agents' citations: high-confidence prefetches cited, a few just over the cut not cited.
    RecallEvent.objects.bulk_create([
        RecallEvent(tenant=console_tenant, scope="default", query="q", trail=trail, outcome="prefetch",
                    reason="match", confidence=c, latency_ms=1.0, served_ids=["x"], offered_ids=["x"],
                    served_cited=int(ok), offered_cited=ok)
        for c, ok in [(0.97, True)] * 100 + [(round(cut + 0.02, 2), False)] * 20
    ])
    login(page, live_server, "admin@acme.test", next_path=quote("/console/settings/?tenant=acme"))
    card = page.locator("section.calibration")
    assert "120 labelled recalls" in card.inner_text()
    assert card.locator("svg.chart").count() == 1
    page.click("button:has-text('Apply suggestion')")
    page.wait_for_selector("text=Prefetch confidence set to")
    console_tenant.refresh_from_db()
    assert console_tenant.prefetch_confidence > cut
    page.click("nav.mainnav >> text=Audit log")
    assert "Calibration applied" in page.inner_text("main")
