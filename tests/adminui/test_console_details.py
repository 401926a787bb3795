"""What an operator reads on the pages: audit details as key/value rows (never a Python dict,
never a secret), sections with how many trails cite them and a link to those trails, the
trails list filtered by a cited section, forms laid out in rows, copy buttons for long ids."""

from __future__ import annotations

import re

from adminui.templatetags.console import audit_details
from cachecore.services.erasure import subject_erase
from tenants.caller import tenant_caller
from tenants.models import AuditAction
from tenants.services import audit_record


def test_audit_details_are_a_readable_list_without_secrets(world):
    subject_erase(caller=tenant_caller(world.tenant, actor_label="operator:c@x"), subject="user-7")
    audit_record(tenant=world.tenant, actor_label="operator:a@x", action=AuditAction.SETTINGS_CHANGE,
                 target="resolver_secret", details={"resolver_secret": {"old": "s3cr3t-old", "new": "s3cr3t-new"},
                                                    "coverage_floor": {"old": 0.32, "new": 0.45}})
    body = world.client("compliance").get("/console/audit/?tenant=acme").content.decode()
    table = body[body.index('id="audit-table"'):]
    assert "{&#x27;" not in table and "{'" not in table
    assert "<dt>recall log entries</dt>" in table and "<dt>trails</dt><dd>1</dd>" in table
    assert "s3cr3t" not in body and "(not shown)" in table
    assert "0.32 → <strong>0.45</strong>" in table
    assert re.search(r'data-copy="[0-9a-f]{64}"', table)  # the subject's hash: shortened, with a copy button


def test_audit_details_filter_shortens_lists_and_names_keys():
    rows = audit_details({"trail_ids": [f"{i:08d}-0000-0000-0000-000000000000" for i in range(5)], "count": 5,
                          "api_token": "tc_abc", "exports_before": []})
    assert rows == [
        {"label": "trails", "text": "00000000…, 00000001…, 00000002… and 2 more"},
        {"label": "trails changed", "text": "5"},
        {"label": "api token", "text": "(not shown)"},
        {"label": "export files written before", "text": "none"},
    ]


def test_sections_list_counts_citing_trails_and_links_to_them(world):
    body = world.client("support").get("/console/sections/?tenant=acme").content.decode()
    linux = body[body.index("manual/install.md#linux</code>"):]
    assert 'data-cited-by="2"' in linux[:2000]
    assert "/console/trails/?tenant=acme&section=manual%2Finstall.md%23linux" in linux[:2000]
    filtered = world.client("support").get("/console/trails/?tenant=acme&section=manual/install.md%23linux")
    page = filtered.context["page"]
    assert {t.query for t in page.items} == {"How do I install Acme Sync on Ubuntu?",
                                             "What happens on a sync conflict?"}
    assert 'id="section-filter"' in filtered.content.decode()


def test_section_filter_never_reaches_another_tenants_trails(world):
    response = world.client("outsider").get("/console/trails/?tenant=globex&section=manual/install.md%23linux")
    assert response.context["page"].items == []


def test_trail_detail_links_cited_sections_and_offers_copy_buttons(world):
    trail = world.trails[2]
    body = world.client("support").get(f"/console/trails/{trail.pk}/?tenant=acme").content.decode()
    assert "/console/sections/detail/?tenant=acme&id=manual%2Fsync.md%23conflicts" in body
    assert f'data-copy="{trail.pk}"' in body
    assert body.count('class="copy"') >= 1 + 2 * 2  # the id, recorded and current hash per section


def test_forms_are_laid_out_in_rows_with_labels(world):
    for url in ("/console/exports/?tenant=acme", "/console/api-keys/?tenant=acme"):
        body = world.client("admin").get(url).content.decode()
        form = body[body.index('class="settings form-rows"'):]
        form = form[:form.index("</form>")]
        ids = re.findall(r'<(?:input|select)[^>]*\bid="([^"]+)"', form)
        assert ids and all(f'for="{i}"' in form for i in ids), ids
        assert form.count("class=\"setting ") == len(ids)


def test_pages_name_their_icon_and_script(world):
    body = world.client("support").get("/console/?tenant=acme").content.decode()
    assert 'rel="icon"' in body and "adminui/console.js" in body and 'data-nav-toggle' in body


def test_the_recalls_chart_is_also_a_table_so_outcomes_are_not_told_by_colour_alone(world):
    body = world.client("support").get("/console/?tenant=acme&days=7").content.decode()
    table = body[body.index("The same as a table"):]
    assert "<th class=\"num\">Prefetch</th><th class=\"num\">Hint</th><th class=\"num\">Miss</th>" in table
    assert "<td class=\"num\">50.0%</td>" in table or "<td class=\"num\">50%</td>" in table  # 1 hit of 2 today
