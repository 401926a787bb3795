"""Console pages against real data: full page vs htmx partial, bounded query counts, the
dashboard agreeing with the API's stats, filters, bulk actions with confirmation, settings,
API keys, the audit log."""

from __future__ import annotations

import re

import pytest

from cachecore.models import Trail, TrailStatus
from cachecore.selectors.recalls import recall_daily_counts
from cachecore.services.feedback import feedback_apply
from cachecore.services.recall import recall
from cachecore.services.sections import section_delete, sections_upsert
from cachecore.services.trails import trail_set_status, trails_purge
from tenants.caller import tenant_caller
from tenants.models import ApiKey, AuditAction, AuditEntry
from tenants.services import api_key_create
from tests.adminui.conftest import SECTIONS

HTMX = {"HTTP_HX_REQUEST": "true"}

PARTIAL_PAGES = {
    "/console/?tenant=acme": 'id="dashboard"',
    "/console/trails/?tenant=acme": 'id="results"',
    "/console/sections/?tenant=acme": 'id="results"',
    "/console/audit/?tenant=acme": 'id="results"',
}


@pytest.mark.parametrize("url", PARTIAL_PAGES)
def test_one_url_renders_full_page_or_htmx_partial(world, url):
    client = world.client("admin")
    full = client.get(url)
    partial = client.get(url, **HTMX)
    assert full.status_code == partial.status_code == 200
    assert b"<html" in full.content and b"<html" not in partial.content
    assert PARTIAL_PAGES[url] in partial.content.decode()
    assert "HX-Request" in full["Vary"] and "HX-Request" in partial["Vary"]


@pytest.mark.parametrize("url", ["/console/?tenant=acme", "/console/?tenant=acme&days=7",
                                 "/console/trails/?tenant=acme", "/console/trails/?tenant=acme&q=install&sort=-hits",
                                 "/console/sections/?tenant=acme&q=install", "/console/audit/?tenant=acme",
                                 "/console/api-keys/?tenant=acme", "/console/settings/?tenant=acme",
                                 "/console/?tenant=*"])
def test_lists_have_bounded_query_counts(world, url, django_assert_max_num_queries):
    for i in range(60):  # more than a page of trails and audit entries
        Trail.objects.create(tenant=world.tenant, scope="bulk", query=f"bulk question {i} install",
                             query_normalised="x",
                             embedding=[0.0] * 383 + [1.0], status=TrailStatus.ACTIVE, hits=i,
                             expires_at=world.trails[0].expires_at)
        api_key_create(caller=tenant_caller(world.tenant, actor_label="test"), name=f"k{i}")
    client = world.client("superuser")
    client.get("/console/trails/?tenant=acme")  # session created outside the measured request
    with django_assert_max_num_queries(10):
        response = client.get(url)
    assert response.status_code == 200


def test_trail_detail_query_count_does_not_grow_with_citations_or_recalls(world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from cachecore.models import Citation

    trail = world.trails[2]
    client = world.client("support")
    url = f"/console/trails/{trail.pk}/?tenant=acme"
    client.get(url)  # session and caches warmed outside the measured requests

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        return len(ctx.captured_queries)

    small = queries()  # 2 cited sections, no recall of this trail yet
    extra = {f"manual/extra.md#part-{i}": f"Extra part {i} about sync conflicts." for i in range(8)}
    sections_upsert(caller=tenant_caller(world.tenant), sections=[{"id": k, "text": v} for k, v in extra.items()])
    position = Citation.objects.filter(trail=trail).count()
    Citation.objects.bulk_create([
        Citation(trail=trail, tenant=world.tenant, section_id=sid, position=position + i, recorded_hash="0" * 64)
        for i, sid in enumerate(extra)
    ])
    for _ in range(6):
        result = recall(caller=tenant_caller(world.tenant),
                        scope="group:premium", query="What happens on a sync conflict?")
        feedback_apply(caller=tenant_caller(world.tenant), recall_id=result.recall_id, accepted=True)
    body = client.get(url).content.decode()
    assert "manual/extra.md#part-7" in body and "Not recalled yet" not in body  # the larger trail is shown
    large = queries()  # 10 cited sections (8 of them changed), 6 recalls with feedback
    assert large == small, (small, large)
    assert large <= 8


def test_dashboard_numbers_agree_with_the_stats_api(world, make_caller):
    caller = make_caller(tenant=world.tenant)
    api = caller.get("/api/v1/stats").json()
    body = world.client("admin").get("/console/?tenant=acme&days=7").content.decode()
    kpi = dict(re.findall(r'data-kpi="(\w+)">([\d.]+)%?<', body))
    assert int(kpi["recalls"]) == api["recalls"] == 2
    for rate in ("hit_rate", "stale_rate", "escalation_rate"):  # one decimal under 10 %
        assert float(kpi[rate]) == pytest.approx(api[rate] * 100, abs=0.5)
    daily = recall_daily_counts(caller=tenant_caller(world.tenant), days=7)
    assert len(daily) == 7
    assert sum(d["prefetch"] + d["hint"] + d["miss"] for d in daily) == api["recalls"]
    assert sum(d["miss"] for d in daily) == api["miss"]
    # The chart draws one bar segment per non-zero outcome of each day.
    assert body.count("data-outcome=") == sum(1 for d in daily for o in ("prefetch", "hint", "miss") if d[o])
    assert "<svg" in body and "Trails by status" in body


def test_dashboard_savings_wait_for_a_miss_path_then_count_cited_prefetches(world):
    from cachecore.services.trails import trail_record

    client = world.client("admin")
    ask = "How do I install Acme Sync on Ubuntu?"
    served = recall(caller=tenant_caller(world.tenant), scope="default", query=ask)
    assert served.answer.outcome == "prefetch"
    trail_record(caller=tenant_caller(world.tenant), scope="default", query=ask, cited=["manual/install.md#linux"],
                 steps=[], signal={"source": "caller", "accepted": True}, recall_id=served.recall_id)
    body = client.get("/console/?tenant=acme").content.decode()
    # A cited prefetch, but no record has followed a miss: nothing to count it against, and no
    # "0 tool calls saved" (nor an empty chart) that reads like a measured zero.
    assert 'data-savings="no-baseline"' in body and "tool calls and" not in body
    missed = recall(caller=tenant_caller(world.tenant), scope="default", query="Where do I change my invoice address?")
    assert missed.answer.outcome == "miss"
    section = "manual/account.md#password"
    trail_record(caller=tenant_caller(world.tenant), scope="default", query="Where do I change my invoice address?",
                 cited=[section], signal={"source": "caller", "accepted": True},
                 steps=[{"tool": "search", "args": {"q": "invoice address"}, "returned": [section]},
                        {"tool": "read", "args": {"id": section}, "returned": [section]}],
                 recall_id=missed.recall_id)
    body = client.get("/console/?tenant=acme").content.decode()
    assert 'data-savings="no-baseline"' not in body
    assert re.search(r"<strong>2</strong> tool calls and <strong>\d+(\.\d+)?</strong> tokens saved", body)
    assert "Tool calls saved per day" in body


def test_recall_daily_counts_includes_empty_days_and_respects_the_window(world):
    from datetime import timedelta

    from django.utils import timezone

    from cachecore.models import RecallEvent
    old = RecallEvent.objects.filter(tenant=world.tenant).first()
    RecallEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    daily = recall_daily_counts(caller=tenant_caller(world.tenant), days=7)
    assert [d["day"] for d in daily] == sorted(d["day"] for d in daily)
    assert daily[-1]["day"] == timezone.now().date()
    assert sum(d["prefetch"] + d["hint"] + d["miss"] for d in daily[-4:-3]) == 1
    assert sum(sum((d["prefetch"], d["hint"], d["miss"])) for d in recall_daily_counts(
        caller=tenant_caller(world.tenant), days=1)) == 1


def test_trail_list_filters_by_text_scope_status_and_sorts(world):
    client = world.client("support")
    body = client.get("/console/trails/?tenant=acme&q=passw", **HTMX).content.decode()
    assert "reset my password" in body and "Ubuntu" not in body
    body = client.get("/console/trails/?tenant=acme&scope=group:premium").content.decode()
    assert "sync conflict" in body and "reset my password" not in body
    trail_set_status(caller=tenant_caller(world.tenant, actor_label="test"),
                     trail_ids=[world.trails[1].pk], status=TrailStatus.QUARANTINED)
    body = client.get("/console/trails/?tenant=acme&status=quarantined").content.decode()
    assert "reset my password" in body and "Ubuntu" not in body
    assert 'data-count="quarantined">1<' in body
    body = client.get("/console/trails/?tenant=acme&sort=-hits").content.decode()
    assert body.index("Ubuntu") < body.index("reset my password")  # the Ubuntu trail was hit once
    assert "Globex" not in body


def test_bulk_purge_asks_with_the_count_then_purges_and_updates_counts(world):
    client = world.client("support")
    ids = [str(world.trails[0].pk), str(world.trails[1].pk)]
    ask = client.post("/console/trails/actions/?tenant=acme", {"action": "purge", "ids": ids}, **HTMX)
    body = ask.content.decode()
    assert ask.status_code == 200 and "<html" not in body
    assert "Purge 2 trails?" in body
    assert Trail.objects.filter(pk__in=ids).count() == 2
    done = client.post("/console/trails/actions/?tenant=acme", {"action": "purge", "ids": ids, "confirm": "1"},
                       **HTMX)
    body = done.content.decode()
    assert "Purged 2 trails." in body and 'hx-swap-oob="true"' in body
    assert 'data-count="all">1<' in body
    assert not Trail.objects.filter(pk__in=ids).exists()
    entry = AuditEntry.objects.get(tenant=world.tenant, action=AuditAction.TRAIL_PURGE)
    assert entry.actor_label == "operator:support@acme.test" and entry.details["count"] == 2


def test_bulk_action_without_javascript_confirms_on_its_own_page(world):
    client = world.client("admin")
    ask = client.post("/console/trails/actions/?tenant=acme",
                      {"action": "quarantine", "ids": [str(t.pk) for t in world.trails]})
    assert b"<html" in ask.content and b"Quarantine 3 trails?" in ask.content
    done = client.post("/console/trails/actions/?tenant=acme",
                       {"action": "quarantine", "ids": [str(t.pk) for t in world.trails], "confirm": "1",
                        "next": "/console/trails/?tenant=acme&status=quarantined"})
    assert done.status_code == 302 and done["Location"] == "/console/trails/?tenant=acme&status=quarantined"
    assert Trail.objects.filter(tenant=world.tenant, status=TrailStatus.QUARANTINED).count() == 3
    follow = client.get(done["Location"]).content.decode()
    assert "Quarantined 3 trails." in follow


def test_bulk_action_never_touches_another_tenants_trail(world):
    client = world.client("admin")
    client.post("/console/trails/actions/?tenant=acme",
                {"action": "purge", "ids": [str(world.other_trail.pk)], "confirm": "1"})
    assert Trail.objects.filter(pk=world.other_trail.pk).exists()


def test_bulk_action_rejects_foreign_redirects_and_empty_selection(world):
    client = world.client("admin")
    r = client.post("/console/trails/actions/?tenant=acme",
                    {"action": "quarantine", "ids": [str(world.trails[0].pk)], "confirm": "1",
                     "next": "https://evil.example/"})
    assert r["Location"] == "/console/trails/"
    r = client.post("/console/trails/actions/?tenant=acme", {"action": "purge", "confirm": "1"}, **HTMX)
    assert "Select at least one trail." in r.content.decode()


def test_trail_detail_shows_steps_cited_state_now_and_recall_history(world):
    trail = world.trails[2]
    sections_upsert(caller=tenant_caller(world.tenant),
                    sections=[{"id": "manual/sync.md#conflicts", "text": "Rewritten."}])
    recall(caller=tenant_caller(world.tenant), scope="group:premium", query="What happens on a sync conflict?")
    body = world.client("compliance").get(f"/console/trails/{trail.pk}/?tenant=acme").content.decode()
    assert "What happens on a sync conflict?" in body
    assert 'state-changed">changed<' in body and 'state-valid">valid<' in body
    assert "1 valid · 1 changed · 0 missing" in body
    assert "outcome-hint" in body
    assert "search" in body and "q=What happens on a sync conflict?" in body
    assert "Purge" not in body  # compliance reads only
    subject_body = world.client("support").get(f"/console/trails/{world.trails[0].pk}/?tenant=acme").content
    assert b"user-7" in subject_body and b"Quarantine" in subject_body


def test_trail_detail_quarantine_and_release(world):
    client = world.client("support")
    trail = world.trails[0]
    url = f"/console/trails/{trail.pk}/?tenant=acme"
    r = client.post("/console/trails/actions/?tenant=acme",
                    {"action": "quarantine", "ids": [str(trail.pk)], "confirm": "1", "next": url})
    assert r["Location"] == url
    trail.refresh_from_db()
    assert trail.status == TrailStatus.QUARANTINED
    assert b"Release" in client.get(url).content
    client.post("/console/trails/actions/?tenant=acme",
                {"action": "release", "ids": [str(trail.pk)], "confirm": "1", "next": url})
    trail.refresh_from_db()
    assert trail.status == TrailStatus.ACTIVE
    actions = list(AuditEntry.objects.filter(tenant=world.tenant).values_list("action", flat=True))
    assert AuditAction.TRAIL_QUARANTINE in actions and AuditAction.TRAIL_RELEASE in actions


def test_sections_search_and_detail_with_special_characters(world):
    client = world.client("support")
    body = client.get("/console/sections/?tenant=acme&q=password", **HTMX).content.decode()
    assert "manual/account.md#password" in body and "manual/install.md#linux" not in body
    assert "manual%2Faccount.md%23password" in body
    detail = client.get("/console/sections/detail/?tenant=acme&id=manual%2Finstall.md%23linux").content.decode()
    assert "apt install acme-sync" in detail
    assert "How do I install Acme Sync on Ubuntu?" in detail and "What happens on a sync conflict?" in detail
    assert client.get("/console/sections/detail/?tenant=acme&id=nope").status_code == 404
    section_delete(caller=tenant_caller(world.tenant), section_id="manual/account.md#password")
    gone = client.get("/console/sections/detail/?tenant=acme&id=manual%2Faccount.md%23password").content.decode()
    assert "deleted" in gone and "reset my password" in gone


def test_settings_say_what_cut_a_small_tenant_applies_and_the_setting_turns_it_off(world, settings_post):
    from cachecore.engine.decide import small_tenant_prefetch_cut

    client = world.client("admin")
    sections = len(SECTIONS)
    page = client.get("/console/settings/?tenant=acme").content.decode()
    applied = small_tenant_prefetch_cut(world.tenant.prefetch_confidence, sections)
    assert f'data-small-tenant="{applied}"' in page and f"With {sections} sections" in page
    assert "applying a suggested prefetch confidence turns this off" in page
    assert client.post("/console/settings/?tenant=acme",
                       settings_post(world.tenant, small_tenant_cut=False)).status_code == 302
    world.tenant.refresh_from_db()
    assert world.tenant.small_tenant_cut is False
    assert "data-small-tenant" not in client.get("/console/settings/?tenant=acme").content.decode()


def test_settings_explain_each_field_and_reject_out_of_range_values(world, settings_post):
    client = world.client("admin")
    page = client.get("/console/settings/?tenant=acme").content.decode()
    assert "Every trail expires this many days after it is recorded." in page
    assert "1 – 3,650" in page
    bad = client.post("/console/settings/?tenant=acme",
                      settings_post(world.tenant, query_retention_days=0, similarity_threshold=1.5))
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "Nothing was saved" in text
    assert "greater than or equal to 1" in text and "less than or equal to 1.0" in text
    world.tenant.refresh_from_db()
    assert world.tenant.query_retention_days == 30
    ok = client.post("/console/settings/?tenant=acme", settings_post(world.tenant, query_retention_days=14))
    assert ok.status_code == 302
    world.tenant.refresh_from_db()
    assert world.tenant.query_retention_days == 14
    entry = AuditEntry.objects.get(tenant=world.tenant, action=AuditAction.SETTINGS_CHANGE)
    assert entry.details == {"query_retention_days": {"old": 30, "new": 14}}
    assert "Saved: query retention days." in client.get(ok["Location"]).content.decode()


def test_api_key_is_shown_once_then_revoked(world):
    client = world.client("admin")
    created = client.post("/console/api-keys/?tenant=acme", {"name": "support bot", "scope_prefixes": "group:, paper:"})
    assert created.status_code == 201 and created["Cache-Control"] == "no-store"
    raw = re.search(r'value="(tc_[^"]+)"', created.content.decode()).group(1)
    key = ApiKey.objects.get(tenant=world.tenant, name="support bot")
    assert key.scope_prefixes == ["group:", "paper:"]
    assert raw not in client.get("/console/api-keys/?tenant=acme").content.decode()
    from rest_framework.test import APIClient
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get("/api/v1/stats").status_code == 200
    assert "ago" in client.get("/console/api-keys/?tenant=acme").content.decode()  # last used
    r = client.post(f"/console/api-keys/{key.pk}/revoke/?tenant=acme")
    assert r.status_code == 302
    assert api.get("/api/v1/stats").status_code == 401
    actions = set(AuditEntry.objects.filter(tenant=world.tenant).values_list("action", flat=True))
    assert {AuditAction.KEY_CREATE, AuditAction.KEY_REVOKE} <= actions
    invalid = client.post("/console/api-keys/?tenant=acme", {"name": ""})
    assert invalid.status_code == 400


def test_audit_log_filters_by_action_actor_and_date(world):
    trails_purge(caller=tenant_caller(world.tenant, actor_label="operator:a@x.test"), trail_ids=[world.trails[0].pk])
    api_key_create(caller=tenant_caller(world.tenant, actor_label="operator:b@x.test"), name="k")
    client = world.client("compliance")
    body = client.get("/console/audit/?tenant=acme&action=trail.purge", **HTMX).content.decode()
    assert "operator:a@x.test" in body and "operator:b@x.test" not in body
    body = client.get("/console/audit/?tenant=acme&actor=b@x").content.decode()
    assert "operator:b@x.test" in body and "operator:a@x.test" not in body
    body = client.get("/console/audit/?tenant=acme&since=2000-01-01&until=2000-01-02").content.decode()
    assert "No audit entries match." in body


def test_superuser_overview_of_all_tenants(world):
    body = world.client("superuser").get("/console/?tenant=*").content.decode()
    assert "All tenants" in body and "Acme Docs" in body and "Globex" in body


def test_empty_tenant_shows_empty_states(world, make_tenant):
    from tenants.models import Membership
    empty = make_tenant(slug="empty")
    Membership.objects.create(user=world.users["admin"], tenant=empty, role="admin")
    client = world.client("admin")
    assert "No recalls in this window yet." in client.get("/console/?tenant=empty").content.decode()
    assert "No trails match these filters." in client.get("/console/trails/?tenant=empty").content.decode()
    assert "No sections yet." in client.get("/console/sections/?tenant=empty").content.decode()
    # (logging in may itself be audited, so ask for an action an empty tenant has none of)
    assert "No audit entries match." in client.get("/console/audit/?tenant=empty&action=trail.purge").content.decode()


def test_trail_list_pages_with_a_capped_count(world, settings):
    import adminui.rendering as rendering
    emb = [0.0] * 383 + [1.0]
    Trail.objects.bulk_create([
        Trail(tenant=world.tenant, scope="bulk", query=f"q {i}", query_normalised="x", embedding=emb,
              status=TrailStatus.ACTIVE, expires_at=world.trails[0].expires_at) for i in range(120)])
    old = rendering.COUNT_CAP
    rendering.COUNT_CAP = 100
    try:
        body = world.client("admin").get("/console/trails/?tenant=acme&scope=bulk").content.decode()
        assert "1–50 of 100+ trails" in body and "page=2" in body
        last = world.client("admin").get("/console/trails/?tenant=acme&scope=bulk&page=2").content.decode()
        assert "51–100 of 100+" in last and "page=3" not in last
    finally:
        rendering.COUNT_CAP = old
