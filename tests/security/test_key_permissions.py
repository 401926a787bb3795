"""API key permissions (issue 13 item 2): each endpoint needs its permission (403
``permission_denied`` naming it when the key lacks it, and nothing written); scope-limited keys
read only sections their scopes' trails cite and may not overwrite or delete sections other
scopes' trails cite; a record's ``recall_id`` must be one the key sees. Literal URLs."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from django.core.management import call_command

from cachecore.models import Job, Section, Trail, TrailStatus
from tenants.caller import tenant_caller
from tenants.models import ApiKey, AuditAction, AuditEntry, KeyPermission
from tenants.services import api_key_create
from tests.conftest import ApiCaller

QUERY = "Where does Acme read its configuration from?"
TEXT = "Acme reads its configuration from /etc/acme/acme.toml."
EVERY = list(KeyPermission.values)


def _key(tenant: Any, permissions: list[str], scopes: list[str] | None = None) -> ApiCaller:
    _, raw = api_key_create(caller=tenant_caller(tenant), name="k", permissions=permissions,
                            scope_prefixes=scopes or [])
    return ApiCaller(tenant, raw)


def _setup(full: ApiCaller) -> dict[str, str]:
    """A section, a trail citing it and a recall that served it, written by a key with every permission."""
    full.upsert({"doc#config": TEXT})
    trail_id = full.record(query=QUERY, cited=["doc#config"]).json()["trail_id"]
    recall_id = full.recall(QUERY)["recall_id"]
    return {"trail_id": trail_id, "recall_id": recall_id}


# permission → (method, url, body) builders; the expected success status
CALLS: dict[str, tuple[Callable[[dict[str, str]], tuple[str, str, Any]], int]] = {
    "recall": (lambda ids: ("post", "/api/v1/recall", {"scope": "default", "query": QUERY}), 200),
    "record": (lambda ids: ("post", "/api/v1/trails", {
        "scope": "default", "query": "How is Acme configured?", "cited": ["doc#config"],
        "steps": [{"tool": "search", "args": {"q": "acme"}, "returned": ["doc#config"]}],
        "signal": {"source": "caller", "accepted": True}}), 201),
    "record:get": (lambda ids: ("get", f"/api/v1/trails/{ids['trail_id']}", None), 200),
    "feedback": (lambda ids: ("post", f"/api/v1/recalls/{ids['recall_id']}/feedback", {"accepted": True}), 200),
    "sections:read": (lambda ids: ("get", f"/api/v1/sections/{quote('doc#config', safe='')}", None), 200),
    "sections:write": (lambda ids: ("put", "/api/v1/sections", {"sections": [{"id": "doc#new", "text": "New."}]}),
                       200),
    "sections:write:delete": (lambda ids: ("delete", f"/api/v1/sections/{quote('doc#config', safe='')}", None),
                              204),
    "export": (lambda ids: ("post", "/api/v1/exports", {"format": "csv"}), 202),
    "erase": (lambda ids: ("delete", "/api/v1/subjects/someone", None), 200),
}


def _permission(call: str) -> str:
    return call if call in EVERY else call.rsplit(":", 1)[0]


@pytest.mark.parametrize("call", CALLS)
def test_each_permission_is_needed_and_enough(make_caller, call, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    full = make_caller()
    ids = _setup(full)
    permission = _permission(call)
    build, ok = CALLS[call]
    method, url, body = build(ids)
    trails, sections, jobs = Trail.objects.count(), list(Section.objects.values_list("external_id", "sha256")), \
        Job.objects.count()

    without = _key(full.tenant, [p for p in EVERY if p != permission])
    denied = getattr(without, method)(url, body) if body is not None else getattr(without, method)(url)
    assert denied.status_code == 403, denied.content
    assert denied.json()["error"] == "permission_denied"
    assert denied.json()["permission"] == permission and permission in denied.json()["detail"]
    assert set(denied.json()) >= {"error", "detail", "fields"}
    assert Trail.objects.count() == trails and Job.objects.count() == jobs
    assert list(Section.objects.values_list("external_id", "sha256")) == sections

    only = _key(full.tenant, [permission])
    allowed = getattr(only, method)(url, body) if body is not None else getattr(only, method)(url)
    assert allowed.status_code == ok, allowed.content


def test_stats_need_no_permission_but_a_valid_key(make_caller):
    full = make_caller()
    assert _key(full.tenant, ["recall"]).get("/api/v1/stats").status_code == 200


def test_new_keys_get_least_privilege_unless_chosen(make_tenant):
    tenant = make_tenant()
    key, _ = api_key_create(caller=tenant_caller(tenant), name="default")
    assert key.permissions == ["recall", "record", "feedback", "sections:read"]
    assert ApiKey.objects.get(pk=key.pk).permissions == ["recall", "record", "feedback", "sections:read"]
    chosen, _ = api_key_create(caller=tenant_caller(tenant), name="chosen", permissions=["record", "recall", "recall"])
    assert chosen.permissions == ["recall", "record"]  # canonical order, no repeats
    with pytest.raises(ValueError, match="unknown API key permissions: admin"):
        api_key_create(caller=tenant_caller(tenant), name="bad", permissions=["recall", "admin"])
    entry = AuditEntry.objects.filter(tenant=tenant, action=AuditAction.KEY_CREATE, target__startswith="chosen").get()
    assert entry.details["permissions"] == ["recall", "record"]


def test_create_api_key_command_takes_permissions(make_tenant):
    tenant = make_tenant()
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_key", "--tenant", tenant.slug, "--permissions", "recall, sections:read",
                 "--name", "reader", stdout=out, stderr=err)
    key = ApiKey.objects.get(tenant=tenant, name="reader")
    assert key.permissions == ["recall", "sections:read"]
    assert "permissions: recall, sections:read" in err.getvalue()
    call_command("create_api_key", "--tenant", tenant.slug, "--name", "default", stdout=out, stderr=err)
    assert ApiKey.objects.get(tenant=tenant, name="default").permissions == ["recall", "record", "feedback",
                                                                           "sections:read"]
    assert "least-privilege default (recall, record, feedback, sections:read)" in err.getvalue()
    from django.core.management.base import CommandError
    with pytest.raises(CommandError, match="unknown API key permissions"):
        call_command("create_api_key", "--tenant", tenant.slug, "--permissions", "root", stdout=out, stderr=err)


# ---- sections and scope-limited keys ----------------------------------------------------------

@pytest.fixture
def scoped(make_caller):
    """A wide key; sections of team-b (b#1), of team-a (a#1), of both (shared#1), of every scope
    (open#1) and of tenant-wide keys only (loose#1, no scopes), each cited in its scopes; a key
    limited to team-a/."""
    wide = make_caller()
    for section_id, text, scopes in (("a#1", "Alpha text.", ["team-a/"]), ("b#1", "Beta text.", ["team-b/"]),
                                     ("shared#1", "Shared text.", ["team-a/", "team-b/"]),
                                     ("open#1", "Open text.", ["*"])):
        wide.upsert({section_id: text}, scopes=scopes)
    wide.upsert({"loose#1": "Loose text."})
    for scope, cited in (("team-a/x", ["a#1"]), ("team-b/x", ["b#1"]), ("team-a/y", ["shared#1"]),
                         ("team-b/y", ["shared#1"]), ("team-b/z", ["loose#1"])):
        assert wide.record(query=f"question about {cited[0]} in {scope}", cited=cited, scope=scope).status_code == 201
    narrow = _key(wide.tenant, EVERY, scopes=["team-a/"])
    return wide, narrow


def _state(tenant: Any) -> tuple[list[Any], list[Any]]:
    sections = list(Section.objects.filter(tenant=tenant, namespace="").order_by("external_id")
                    .values_list("external_id", "sha256", "scopes"))
    trails = list(Trail.objects.filter(tenant=tenant).order_by("scope", "query").values_list("scope", "status"))
    return sections, trails


def test_a_scope_limited_key_reads_only_sections_of_its_scopes(scoped):
    wide, narrow = scoped
    for visible in ("a%231", "shared%231", "open%231"):
        response = narrow.get(f"/api/v1/sections/{visible}")
        assert response.status_code == 200 and "scopes" not in response.json()  # scopes: tenant-wide keys only
    for hidden in ("b%231", "loose%231", "never%231"):
        response = narrow.get(f"/api/v1/sections/{hidden}")
        assert response.status_code == 404 and response.json() == narrow.get("/api/v1/sections/never%231").json()
    assert wide.get("/api/v1/sections/b%231").json()["scopes"] == ["team-b/"]
    assert wide.get("/api/v1/sections/loose%231").json()["scopes"] == []


def test_a_scope_limited_key_cannot_overwrite_or_delete_other_scopes_sections(scoped):
    wide, narrow = scoped
    before = _state(wide.tenant)
    for hidden in ("b%231", "loose%231"):
        assert narrow.delete(f"/api/v1/sections/{hidden}").json() == narrow.delete("/api/v1/sections/x%231").json()
    for seen in ("shared%231", "open%231"):  # it sees them, but they belong to other scopes too
        response = narrow.delete(f"/api/v1/sections/{seen}")
        assert response.status_code == 403 and response.json()["error"] == "scope_forbidden"
    # Nor widen its own: every scope, or a scope outside its prefixes.
    for scopes in (["*"], ["team-b/"], ["team-a/", "team-"]):
        put = narrow.put("/api/v1/sections", {"sections": [{"id": "a#1", "text": "Alpha text.", "scopes": scopes}]})
        assert put.status_code == 403 and put.json()["error"] == "scope_forbidden", scopes
    assert _state(wide.tenant) == before  # nothing written, no trail invalidated
    assert not AuditEntry.objects.filter(tenant=wide.tenant, action=AuditAction.SECTION_DELETE).exists()
    # An upsert of those ids writes the key's own sections (docs/scopes.md, "Id namespaces"),
    # answered as new ids are, and leaves the tenant's as they were.
    for section_id in ("b#1", "shared#1", "open#1", "loose#1"):
        put = narrow.put("/api/v1/sections", {"sections": [{"id": section_id, "text": "Overwritten."}]})
        assert put.json() == {"created": 1, "updated": 0, "unchanged": 0, "invalidated_trails": 0}, section_id
    assert _state(wide.tenant) == before
    assert set(Section.objects.filter(tenant=wide.tenant, namespace="team-a/").values_list("external_id", "text")) == {
        (i, "Overwritten.") for i in ("b#1", "shared#1", "open#1", "loose#1")}


def test_a_scope_limited_key_may_change_sections_of_its_scopes(scoped):
    wide, narrow = scoped
    put = narrow.put("/api/v1/sections", {"sections": [{"id": "a#1", "text": "Changed alpha."},
                                                       {"id": "new#1", "text": "Brand new."},
                                                       {"id": "mine#1", "text": "Narrower.", "scopes": ["team-a/x"]}]})
    assert put.status_code == 200, put.content
    assert put.json() == {"created": 2, "updated": 1, "unchanged": 0, "invalidated_trails": 1}
    assert Section.objects.get(tenant=wide.tenant, external_id="new#1").scopes == ["team-a/"]
    assert Section.objects.get(tenant=wide.tenant, external_id="mine#1").scopes == ["team-a/x"]
    assert Trail.objects.get(tenant=wide.tenant, scope="team-a/x").status == TrailStatus.STALE
    assert Trail.objects.get(tenant=wide.tenant, scope="team-b/x").status == TrailStatus.ACTIVE
    assert narrow.delete("/api/v1/sections/a%231").status_code == 204
    assert not Section.objects.filter(tenant=wide.tenant, external_id="a#1").exists()
    # A key without scope limits may change what every scope sees, and rescope it.
    assert wide.delete("/api/v1/sections/shared%231").status_code == 204
    rescoped = wide.put("/api/v1/sections", {"sections": [{"id": "b#1", "text": "Beta text.", "scopes": ["*"]}]})
    assert rescoped.json() == {"created": 0, "updated": 1, "unchanged": 0, "invalidated_trails": 0}
    assert narrow.get("/api/v1/sections/b%231").status_code == 200


def test_a_record_links_only_a_recall_of_the_keys_scopes(scoped):
    wide, narrow = scoped
    other = wide.recall("question about b#1 in team-b/x", scope="team-b/x")["recall_id"]
    own = narrow.recall("question about a#1 in team-a/x", scope="team-a/x")["recall_id"]
    assert narrow.get(f"/api/v1/sections/{'a%231'}").status_code == 200
    refused = narrow.record(query="Another alpha question?", cited=["a#1"], scope="team-a/z", recall_id=other)
    assert refused.status_code == 400 and refused.json()["fields"] == {"recall_id": ["no such recall for this tenant"]}
    assert not Trail.objects.filter(tenant=wide.tenant, scope="team-a/z").exists()
    linked = narrow.record(query="Another alpha question?", cited=["a#1"], scope="team-a/z", recall_id=own)
    assert linked.status_code == 201, linked.content
    # Feedback on the other scope's recall: not there for this key.
    assert narrow.post(f"/api/v1/recalls/{other}/feedback", {"accepted": False}).status_code == 404


def test_a_keys_permissions_change_takes_effect_on_its_next_request(make_caller):
    from tenants.services import api_key_permissions_update

    full = make_caller()
    key = ApiKey.objects.get(tenant=full.tenant)
    as_tenant = tenant_caller(full.tenant, actor_label="test")
    assert full.post("/api/v1/recall", {"scope": "default", "query": QUERY}).status_code == 200
    assert api_key_permissions_update(caller=as_tenant, key_id=key.pk, permissions=["record"]).changed is True
    assert full.post("/api/v1/recall", {"scope": "default", "query": QUERY}).status_code == 403
    assert api_key_permissions_update(caller=as_tenant, key_id=key.pk, permissions=["record"]).changed is False
    entry = AuditEntry.objects.get(tenant=full.tenant, action=AuditAction.KEY_PERMISSIONS)
    assert entry.details == {"permissions": {"old": EVERY, "new": ["record"]}}
