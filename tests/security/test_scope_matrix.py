"""The scope matrix (issue 21 item 5): every operation, for every persona — a tenant-wide key, a
key limited to ``public:`` acting inside its scopes, the same key reaching outside them, another
tenant's key, and each console role — with the answer asserted AND, on every refusal, the proof
that nothing was written (the tenant's rows, field by field, before and after).

The world: tenant ``acme`` with section ``pub#1`` (scopes ``public:``) and ``int#1`` (scopes
``internal:``), a trail and a recall in ``public:x`` and in ``internal:x``, one export job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from cachecore.models import Citation, Job, JobKind, RecallEvent, Section, Trail
from tenants.caller import Caller, caller_for_key, caller_for_operator, tenant_caller
from tenants.models import ApiKey, AuditEntry, Role, Tenant, all_key_permissions
from tenants.services import api_key_create, operator_create
from tests.conftest import ApiCaller

PUBLIC_TEXT = "Public: the opening hours are nine to five."
INTERNAL_TEXT = "Internal: the salary bands of 2025."
QUERY_PUBLIC = "When are you open?"
QUERY_INTERNAL = "What are the salary bands?"


@dataclass
class World:
    tenant: Tenant
    wide: ApiCaller
    limited: ApiCaller
    other: ApiCaller
    trail_public: str
    trail_internal: str
    recall_public: str
    recall_internal: str
    export_id: str


def snapshot(tenant: Tenant) -> dict[str, Any]:
    """Everything an operation could write, for one tenant."""
    return {
        "sections": list(Section.objects.filter(tenant=tenant).order_by("external_id", "namespace")
                         .values_list("external_id", "sha256", "text", "scopes", "namespace")),
        "trails": list(Trail.objects.filter(tenant=tenant).order_by("id")
                       .values_list("id", "scope", "status", "positive_feedback", "negative_feedback")),
        "citations": Citation.objects.filter(tenant=tenant).count(),
        "recalls": list(RecallEvent.objects.filter(tenant=tenant).order_by("id")
                        .values_list("id", "feedback", "recorded_trail_id")),
        "jobs": list(Job.objects.filter(tenant=tenant).order_by("id").values_list("id", "kind", "status")),
        "audit": AuditEntry.objects.filter(tenant=tenant).count(),
    }


@pytest.fixture
def world(make_tenant, make_caller) -> World:
    tenant = make_tenant("acme")
    wide = make_caller(tenant=tenant)
    limited = make_caller(tenant=tenant, scopes=["public:"])  # every permission: scopes alone restrict it
    other = make_caller()
    wide.upsert({"pub#1": PUBLIC_TEXT}, scopes=["public:"])
    wide.upsert({"int#1": INTERNAL_TEXT}, scopes=["internal:"])
    trails = {}
    for scope, query, cited in (("public:x", QUERY_PUBLIC, "pub#1"), ("internal:x", QUERY_INTERNAL, "int#1")):
        response = wide.record(query=query, cited=[cited], scope=scope, subject="alice")
        assert response.status_code == 201, response.content
        trails[scope] = response.json()["trail_id"]
    recall_public = wide.recall(QUERY_PUBLIC, scope="public:x")
    recall_internal = wide.recall(QUERY_INTERNAL, scope="internal:x")
    assert recall_public["outcome"] == recall_internal["outcome"] == "prefetch"
    export = wide.post("/api/v1/exports", {"format": "csv"})
    assert export.status_code == 202, export.content
    return World(tenant, wide, limited, other, trails["public:x"], trails["internal:x"],
                 recall_public["recall_id"], recall_internal["recall_id"], export.json()["export_id"])


def _refused(world: World, response: Any, status: int, error: str | None = None) -> None:
    assert response.status_code == status, response.content
    if error:
        assert response.json()["error"] == error


# ---- the API ------------------------------------------------------------------------------------

def _record(caller: ApiCaller, scope: str, cited: str) -> Any:
    return caller.record(query="Another question about it?", cited=[cited], scope=scope)


def test_record(world):
    before = snapshot(world.tenant)
    _refused(world, _record(world.limited, "public:y", "int#1"), 422, "unknown_sections")  # outside: cite
    _refused(world, _record(world.limited, "internal:y", "int#1"), 403, "scope_forbidden")  # outside: scope
    _refused(world, _record(world.other, "public:x", "pub#1"), 422, "unknown_sections")  # another tenant
    assert snapshot(world.tenant) == before
    assert _record(world.limited, "public:y", "pub#1").status_code == 201  # inside
    assert _record(world.wide, "internal:y", "int#1").status_code == 201  # tenant-wide
    assert Trail.objects.filter(tenant=world.tenant).count() == len(before["trails"]) + 2


def test_recall(world):
    inside = world.limited.recall(QUERY_PUBLIC, scope="public:x")
    assert inside["outcome"] == "prefetch" and [s["id"] for s in inside["sections"]] == ["pub#1"]
    wide = world.wide.recall(QUERY_INTERNAL, scope="internal:x")
    assert [s["text"] for s in wide["sections"]] == [INTERNAL_TEXT]
    before = snapshot(world.tenant)
    _refused(world, world.limited.post("/api/v1/recall", {"scope": "internal:x", "query": QUERY_INTERNAL}), 403,
             "scope_forbidden")
    assert snapshot(world.tenant) == before
    # Another tenant's key is served nothing of this tenant, in the same scope.
    foreign = world.other.recall(QUERY_PUBLIC, scope="public:x")
    assert foreign["outcome"] == "miss" and foreign["sections"] == []
    assert snapshot(world.tenant) == before


def test_recall_checks_the_sections_scopes_when_serving(world):
    """A section rescoped after its trail was recorded counts as missing for that recall."""
    assert world.wide.put("/api/v1/sections", {"sections": [
        {"id": "pub#1", "text": PUBLIC_TEXT, "scopes": ["public:other"]}]}).status_code == 200
    result = world.limited.recall(QUERY_PUBLIC, scope="public:x")
    assert result["outcome"] != "prefetch" and result["sections"] == []
    assert PUBLIC_TEXT not in str(result)
    # Once it admits the scope again, it is served again.
    assert world.wide.put("/api/v1/sections", {"sections": [
        {"id": "pub#1", "text": PUBLIC_TEXT, "scopes": ["public:x", "public:other"]}]}).status_code == 200
    assert world.limited.recall(QUERY_PUBLIC, scope="public:x")["sections"][0]["text"] == PUBLIC_TEXT


def test_feedback(world):
    before = snapshot(world.tenant)
    unknown = world.limited.post("/api/v1/recalls/00000000-0000-4000-8000-000000000000/feedback",
                                 {"accepted": False})
    for caller, recall_id in ((world.limited, world.recall_internal), (world.other, world.recall_public)):
        response = caller.post(f"/api/v1/recalls/{recall_id}/feedback", {"accepted": False})
        _refused(world, response, 404, "not_found")
        assert response.json() == unknown.json()
    assert snapshot(world.tenant) == before
    assert world.limited.post(f"/api/v1/recalls/{world.recall_public}/feedback", {"accepted": True}).status_code == 200
    assert world.wide.post(f"/api/v1/recalls/{world.recall_internal}/feedback", {"accepted": True}).status_code == 200
    assert set(RecallEvent.objects.filter(tenant=world.tenant).values_list("feedback", flat=True)) == {True}


def test_section_read(world):
    never = world.limited.get("/api/v1/sections/never%231").json()
    _refused(world, world.limited.get("/api/v1/sections/int%231"), 404, "not_found")
    assert world.limited.get("/api/v1/sections/int%231").json() == never
    _refused(world, world.other.get("/api/v1/sections/pub%231"), 404, "not_found")
    inside = world.limited.get("/api/v1/sections/pub%231").json()
    assert inside["text"] == PUBLIC_TEXT and "scopes" not in inside and "namespace" not in inside
    assert world.wide.get("/api/v1/sections/int%231").json()["scopes"] == ["internal:"]
    # Naming a namespace is for tenant-wide keys: a limited key is refused whatever the id.
    for section in ("pub%231", "int%231", "never%231"):
        _refused(world, world.limited.get(f"/api/v1/sections/{section}?namespace=public:"), 403, "scope_forbidden")
    _refused(world, world.wide.get("/api/v1/sections/pub%231?namespace=public:"), 404, "not_found")


def test_section_write(world):
    before = snapshot(world.tenant)
    widen = world.limited.put("/api/v1/sections", {"sections": [{"id": "pub#1", "text": PUBLIC_TEXT,
                                                                 "scopes": ["*"]}]})
    _refused(world, widen, 403, "scope_forbidden")
    # Another tenant's key writes its own tenant's pub#1, never this one's.
    assert world.other.put("/api/v1/sections", {"sections": [{"id": "pub#1", "text": "Theirs."}]}).status_code == 200
    assert snapshot(world.tenant) == before
    # An id that exists outside the key's scopes answers as a fresh id does (docs/scopes.md, "Id
    # namespaces"): the key gets its own section, the tenant's int#1 and its trail stay as they were.
    fresh = world.limited.put("/api/v1/sections", {"sections": [{"id": "fresh#1", "text": "Rewritten."}]})
    taken = world.limited.put("/api/v1/sections", {"sections": [{"id": "int#1", "text": "Rewritten."}]})
    assert (taken.status_code, taken.content) == (fresh.status_code, fresh.content) == (
        200, b'{"created":1,"updated":0,"unchanged":0,"invalidated_trails":0}')
    after = snapshot(world.tenant)
    own = Section.objects.get(tenant=world.tenant, external_id="int#1", namespace="public:")
    assert own.text == "Rewritten." and own.scopes == ["public:"]
    assert {**after, "sections": [r for r in after["sections"] if r[0] != "fresh#1" and r[4] == ""]} == before
    assert world.wide.get("/api/v1/sections/int%231").json()["text"] == INTERNAL_TEXT
    assert world.limited.put("/api/v1/sections", {"sections": [{"id": "pub#1", "text": "New public."}]}
                             ).json()["updated"] == 1
    assert world.wide.put("/api/v1/sections", {"sections": [{"id": "int#1", "text": "New internal."}]}
                          ).json()["updated"] == 1
    assert Section.objects.get(tenant=world.tenant, external_id="pub#1").scopes == ["public:"]
    assert own.__class__.objects.get(pk=own.pk).text == "Rewritten."  # the tenant-wide write was the shared one


def test_section_delete(world):
    before = snapshot(world.tenant)
    never = world.limited.delete("/api/v1/sections/never%231")
    for caller, section in ((world.limited, "int%231"), (world.other, "pub%231")):
        response = caller.delete(f"/api/v1/sections/{section}")
        _refused(world, response, 404, "not_found")
        assert response.json() == never.json()
    assert snapshot(world.tenant) == before
    assert world.limited.delete("/api/v1/sections/pub%231").status_code == 204
    assert world.wide.delete("/api/v1/sections/int%231").status_code == 204
    assert not Section.objects.filter(tenant=world.tenant).exists()


def test_trail_read(world):
    for caller, trail in ((world.limited, world.trail_internal), (world.other, world.trail_public)):
        _refused(world, caller.get(f"/api/v1/trails/{trail}"), 404, "not_found")
    assert world.limited.get(f"/api/v1/trails/{world.trail_public}").json()["cited"][0]["hash"]
    assert world.wide.get(f"/api/v1/trails/{world.trail_internal}").json()["cited"][0]["hash"]
    # A section of its trail rescoped out of its reach: its hash is no longer shown to the key.
    world.wide.put("/api/v1/sections", {"sections": [{"id": "pub#1", "text": PUBLIC_TEXT, "scopes": ["internal:"]}]})
    assert world.limited.get(f"/api/v1/trails/{world.trail_public}").json()["cited"] == [{"id": "pub#1",
                                                                                         "hash": None}]
    assert world.wide.get(f"/api/v1/trails/{world.trail_public}").json()["cited"][0]["hash"]


def test_trail_delete(world):
    before = snapshot(world.tenant)
    for caller, trail in ((world.limited, world.trail_internal), (world.other, world.trail_public)):
        _refused(world, caller.delete(f"/api/v1/trails/{trail}"), 404, "not_found")
    assert snapshot(world.tenant) == before
    assert world.limited.delete(f"/api/v1/trails/{world.trail_public}").status_code == 204
    assert world.wide.delete(f"/api/v1/trails/{world.trail_internal}").status_code == 204
    assert not Trail.objects.filter(tenant=world.tenant).exists()


def test_exports(world, settings):
    before = snapshot(world.tenant)
    _refused(world, world.limited.post("/api/v1/exports", {"format": "csv"}), 403, "scope_forbidden")
    _refused(world, world.limited.get(f"/api/v1/exports/{world.export_id}"), 403, "scope_forbidden")
    _refused(world, world.limited.get(f"/api/v1/exports/{world.export_id}/download"), 403, "scope_forbidden")
    _refused(world, world.other.get(f"/api/v1/exports/{world.export_id}"), 404, "not_found")
    _refused(world, world.other.get(f"/api/v1/exports/{world.export_id}/download"), 404, "not_found")
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 1  # the one of the world is queued
    capped = world.wide.post("/api/v1/exports", {"format": "csv"})
    _refused(world, capped, 429, "throttled")
    assert capped["Retry-After"] == "30"
    assert snapshot(world.tenant) == before
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 2
    assert world.wide.post("/api/v1/exports", {"format": "csv"}).status_code == 202
    assert world.wide.get(f"/api/v1/exports/{world.export_id}").status_code == 200


def test_erasure(world):
    before = snapshot(world.tenant)
    _refused(world, world.limited.delete("/api/v1/subjects/alice"), 403, "scope_forbidden")
    assert world.other.delete("/api/v1/subjects/alice").json() == {"deleted": 0}  # its own tenant: none
    assert snapshot(world.tenant) == before
    assert world.wide.delete("/api/v1/subjects/alice").json()["deleted"] >= 2
    assert not Trail.objects.filter(tenant=world.tenant, subject="alice").exists()


def test_stats(world):
    _refused(world, world.limited.get("/api/v1/stats?scope=internal:x"), 403, "scope_forbidden")
    inside = world.limited.get("/api/v1/stats").json()
    assert inside["recalls"] == 1  # its own scopes only
    assert world.limited.get("/api/v1/stats?scope=public:x").json()["recalls"] == 1
    assert world.wide.get("/api/v1/stats").json()["recalls"] == 2
    assert world.other.get("/api/v1/stats").json()["recalls"] == 0


def test_a_key_without_the_permission_is_refused_by_the_service_too(world):
    """The permission lives below the API too: the service refuses a key's caller without it."""
    from cachecore.errors import PermissionMissing
    from cachecore.services.sections import sections_upsert

    key, _ = api_key_create(caller=tenant_caller(world.tenant), name="reader", permissions=["recall", "sections:read"])
    before = snapshot(world.tenant)
    with pytest.raises(PermissionMissing):
        sections_upsert(caller=caller_for_key(ApiKey.objects.select_related("tenant").get(pk=key.pk)),
                        sections=[{"id": "pub#1", "text": "Rewritten."}])
    assert snapshot(world.tenant) == before


# ---- the console --------------------------------------------------------------------------------

ROLES = (Role.SUPPORT, Role.ADMIN, Role.COMPLIANCE)


@pytest.fixture
def operators(world, make_tenant, settings) -> dict[str, Client]:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    clients = {}
    for role in ROLES:
        clients[role] = Client()
        clients[role].force_login(operator_create(email=f"{role}@acme.test", password="pw-123456789",
                                                  tenant=world.tenant, role=role))
    outsider = make_tenant("globex")
    clients["outsider"] = Client()
    clients["outsider"].force_login(operator_create(email="admin@globex.test", password="pw-123456789",
                                                    tenant=outsider, role=Role.ADMIN))
    return clients


def _console_operations(world: World) -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    return {
        "section read": ("get", "/console/sections/detail/?tenant=acme&id=int%231", None),
        "section list": ("get", "/console/sections/?tenant=acme&scope=internal:x", None),
        "trail read": ("get", f"/console/trails/{world.trail_internal}/?tenant=acme", None),
        "trail quarantine": ("post", "/console/trails/actions/?tenant=acme",
                             {"action": "quarantine", "ids": world.trail_internal, "confirm": "on"}),
        "export": ("post", "/console/exports/?tenant=acme", {"format": "csv"}),
        "erasure": ("post", "/console/subjects/erase/?tenant=acme", {"subject": "alice", "confirm": "on"}),
        "stats": ("get", "/console/?tenant=acme", None),
    }


# What each role is answered (200 read, 302 done, 403 not its role, 404 not its tenant).
CONSOLE_EXPECTED = {
    "section read":     {Role.SUPPORT: 200, Role.ADMIN: 200, Role.COMPLIANCE: 403, "outsider": 404},
    "section list":     {Role.SUPPORT: 200, Role.ADMIN: 200, Role.COMPLIANCE: 403, "outsider": 404},
    "trail read":       {Role.SUPPORT: 200, Role.ADMIN: 200, Role.COMPLIANCE: 200, "outsider": 404},
    "trail quarantine": {Role.SUPPORT: 302, Role.ADMIN: 302, Role.COMPLIANCE: 403, "outsider": 404},
    "export":           {Role.SUPPORT: 403, Role.ADMIN: 302, Role.COMPLIANCE: 302, "outsider": 404},
    "erasure":          {Role.SUPPORT: 403, Role.ADMIN: 403, Role.COMPLIANCE: 302, "outsider": 404},
    "stats":            {Role.SUPPORT: 200, Role.ADMIN: 200, Role.COMPLIANCE: 200, "outsider": 404},
}


@pytest.mark.parametrize("operation", list(CONSOLE_EXPECTED))
@pytest.mark.parametrize("who", [*ROLES, "outsider"])
def test_console(world, operators, settings, operation, who):
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 10
    method, url, data = _console_operations(world)[operation]
    before = snapshot(world.tenant)
    response = getattr(operators[who], method)(url, data) if data is not None else getattr(operators[who], method)(url)
    expected = CONSOLE_EXPECTED[operation][who]
    assert response.status_code == expected, (operation, who, response.status_code)
    if expected != 302:
        assert snapshot(world.tenant) == before  # a read or a refusal writes nothing
    else:
        assert snapshot(world.tenant) != before
    if operation == "section list" and expected == 200:
        # Filtered by scope: the internal section is listed, the public one is not.
        body = response.content.decode()
        assert "int#1" in body and "pub#1" not in body and 'data-scopes="internal:"' in body


def test_the_consoles_export_form_hits_the_export_cap(world, operators, settings):
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 1  # the world's export is queued
    before = snapshot(world.tenant)
    response = operators[Role.COMPLIANCE].post("/console/exports/?tenant=acme", {"format": "csv"})
    assert response.status_code == 429
    assert "exports of this tenant are queued or running" in response.content.decode()
    assert snapshot(world.tenant) == before
    assert Job.objects.filter(tenant=world.tenant, kind=JobKind.EXPORT).count() == 1


def test_the_consoles_section_page_shows_its_scopes(world, operators):
    body = operators[Role.ADMIN].get("/console/sections/detail/?tenant=acme&id=pub%231").content.decode()
    assert 'data-scopes="public:"' in body and PUBLIC_TEXT in body
    listing = operators[Role.ADMIN].get("/console/sections/?tenant=acme").content.decode()
    assert 'data-scopes="public:"' in listing and 'data-scopes="internal:"' in listing


def test_the_persona_keys_are_what_they_say(world):
    """The matrix's keys: the limited one has every permission (scopes alone restrict it)."""
    keys = {tuple(k.scope_prefixes): k.permissions for k in ApiKey.objects.filter(tenant=world.tenant)}
    assert keys == {(): all_key_permissions(), ("public:",): all_key_permissions()}


# ---- administering the tenant: settings, the operating point, API keys, the audit log -----------
# No API route administers a tenant, so for the key personas the matrix asks the services
# themselves (where the rule lives: tenants.caller.require_capability), with the caller each
# interface would build; the console's roles are asked through the console and through the
# services (a role's caller is refused below the gate too).

def admin_snapshot(tenant: Tenant) -> dict[str, Any]:
    """``snapshot`` and what administration writes: the tenant's settings and its keys."""
    from tenants.services import SETTINGS_FIELDS

    return {**snapshot(tenant),
            "settings": Tenant.objects.filter(pk=tenant.pk).values(*SETTINGS_FIELDS).get(),
            "keys": list(ApiKey.objects.filter(tenant=tenant).order_by("id")
                         .values_list("id", "name", "permissions", "scope_prefixes", "revoked_at"))}


@pytest.fixture
def admin_world(world) -> World:
    """The world, a victim key to change, and labelled recalls that make the operating point move
    (uncited prefetches just above the cut): applying it writes. (The labels are judged at the cut
    recall applies: two sections would raise it over them with ``small_tenant_cut``, so it is off.)"""
    world.victim, _ = api_key_create(caller=tenant_caller(world.tenant), name="victim")
    world.tenant.small_tenant_cut = False
    world.tenant.save(update_fields=["small_tenant_cut"])
    trail = Trail.objects.get(pk=world.trail_public)
    cut = world.tenant.prefetch_confidence
    RecallEvent.objects.bulk_create([
        RecallEvent(tenant=world.tenant, scope="public:x", query="q", trail=trail, outcome="prefetch",
                    reason="match", confidence=c, latency_ms=1.0, served_ids=["pub#1"], offered_ids=["pub#1"],
                    offered_cited=ok)
        for c, ok in [(0.97, True)] * 100 + [(round(cut + 0.02, 2), False)] * 20
    ])
    return world


def _key_caller(tenant: Tenant, prefixes: list[str]) -> Caller:
    return caller_for_key(ApiKey.objects.select_related("tenant").get(tenant=tenant, scope_prefixes=prefixes,
                                                                      name="test"))


def _role_caller(world: World, role: str, tenant: Tenant | None = None) -> Caller:
    user = operator_create(email=f"svc-{role}@{(tenant or world.tenant).slug}.test", password="pw-123456789",
                           tenant=tenant or world.tenant, role=role)
    return caller_for_operator(user=user, tenant=tenant or world.tenant, role=role)


def _admin_operations() -> dict[str, Any]:
    from cachecore.services.calibration import operating_point_apply
    from tenants.selectors import api_keys_for_tenant, audit_entries_for_tenant
    from tenants.services import api_key_permissions_update, api_key_revoke, tenant_settings_update

    return {
        "settings change": lambda w, c: tenant_settings_update(caller=c, changes={"trail_ttl_days": 45}),
        "calibration apply": lambda w, c: operating_point_apply(caller=c),
        "key create": lambda w, c: api_key_create(caller=c, name="bot", permissions=["recall"]),
        "key permissions": lambda w, c: api_key_permissions_update(caller=c, key_id=w.victim.pk,
                                                                   permissions=["recall"]),
        "key revoke": lambda w, c: api_key_revoke(caller=c, key_id=w.victim.pk),
        "key list": lambda w, c: list(api_keys_for_tenant(caller=c)),
        "audit read": lambda w, c: list(audit_entries_for_tenant(caller=c)),
    }


# persona → its caller; what each persona is answered, per operation: "done", or the refusal.
SERVICE_PERSONAS = {
    "tenant-wide key": lambda w: _key_caller(w.tenant, []),
    "limited key": lambda w: _key_caller(w.tenant, ["public:"]),
    "other tenant's key": lambda w: _key_caller(w.other.tenant, []),
    Role.SUPPORT: lambda w: _role_caller(w, Role.SUPPORT),
    Role.ADMIN: lambda w: _role_caller(w, Role.ADMIN),
    Role.COMPLIANCE: lambda w: _role_caller(w, Role.COMPLIANCE),
}
WRITES = ("settings change", "calibration apply", "key create", "key permissions", "key revoke")
READS = ("key list", "audit read")
ALLOWED = {Role.ADMIN: set(WRITES) | set(READS), Role.COMPLIANCE: {"audit read"}}


@pytest.mark.parametrize("operation", [*WRITES, *READS])
@pytest.mark.parametrize("persona", list(SERVICE_PERSONAS))
def test_administration_by_every_caller(admin_world, operation, persona):
    from tenants.caller import CapabilityMissing

    world = admin_world
    caller = SERVICE_PERSONAS[persona](world)
    before = admin_snapshot(world.tenant)
    run = _admin_operations()[operation]
    if operation in ALLOWED.get(persona, ()):
        run(world, caller)
        assert (admin_snapshot(world.tenant) != before) == (operation in WRITES), (operation, persona)
        return
    with pytest.raises(CapabilityMissing):
        run(world, caller)
    assert admin_snapshot(world.tenant) == before


@pytest.mark.parametrize("operation", ["key permissions", "key revoke"])
def test_another_tenants_admin_cannot_reach_this_tenants_keys_through_the_services(admin_world, make_tenant,
                                                                                    operation):
    """Their own tenant's caller, this tenant's key id: 404, as a key that does not exist."""
    from django.http import Http404

    world = admin_world
    outsider = _role_caller(world, Role.ADMIN, tenant=make_tenant("initech"))
    before = admin_snapshot(world.tenant)
    with pytest.raises(Http404):
        _admin_operations()[operation](world, outsider)
    assert admin_snapshot(world.tenant) == before


def _console_admin_operations(world: World) -> dict[str, tuple[str, dict[str, Any]]]:
    from tests.adminui.conftest import settings_form_data

    return {
        "settings change": ("/console/settings/?tenant=acme", settings_form_data(world.tenant, trail_ttl_days=45)),
        "calibration apply": ("/console/settings/calibration/apply/?tenant=acme", {}),
        "key create": ("/console/api-keys/?tenant=acme", {"name": "bot", "scope_prefixes": ""}),
        "key permissions": (f"/console/api-keys/{world.victim.pk}/permissions/?tenant=acme",
                            {"permissions": ["recall"]}),
        "key revoke": (f"/console/api-keys/{world.victim.pk}/revoke/?tenant=acme", {}),
    }


CONSOLE_ADMIN_DONE = {"settings change": 302, "calibration apply": 302, "key create": 201, "key permissions": 302,
                      "key revoke": 302}
# Another tenant's admin, in their own tenant: their settings and keys (not this tenant's), and
# this tenant's key ids answer 404.
CONSOLE_OUTSIDER = {"settings change": 302, "calibration apply": 302, "key create": 201, "key permissions": 404,
                    "key revoke": 404}


@pytest.mark.parametrize("operation", WRITES)
@pytest.mark.parametrize("who", [*ROLES, "outsider"])
def test_console_administration(admin_world, operators, operation, who):
    world = admin_world
    url, data = _console_admin_operations(world)[operation]
    if who == "outsider":  # their own tenant in the query, this tenant's key ids in the path
        url = url.replace("tenant=acme", "tenant=globex")
    before = admin_snapshot(world.tenant)
    response = operators[who].post(url, data)
    if who == Role.ADMIN:
        assert response.status_code == CONSOLE_ADMIN_DONE[operation], response.content[:300]
        assert admin_snapshot(world.tenant) != before
        return
    expected = CONSOLE_OUTSIDER[operation] if who == "outsider" else 403
    assert response.status_code == expected, (operation, who, response.status_code)
    assert admin_snapshot(world.tenant) == before  # refused, or done to their own tenant only
