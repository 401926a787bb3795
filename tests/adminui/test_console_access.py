"""Who may do what: every page and every action × support / admin / compliance / outsider
(admin of another tenant) / anonymous / superuser. Denied by default, outsiders get 404.
A test below keeps PAGES and ACTIONS covering every console route."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote, urlsplit

import pytest
from django.urls import URLPattern, resolve

from adminui import urls as console_urls
from cachecore.models import Job, JobKind, RecallEvent, Trail, TrailStatus
from cachecore.services.erasure import subject_erase_request
from cachecore.services.exports import export_request
from cachecore.services.jobs import job_execute
from tenants.caller import tenant_caller
from tenants.models import ApiKey, AuditEntry, Tenant
from tenants.services import api_key_create
from tests.adminui.conftest import settings_form_data

ROLES = ("support", "admin", "compliance")
PERSONAS = (*ROLES, "outsider", "anonymous", "superuser")

# page → (url builder, roles allowed)
PAGES: dict[str, tuple[Callable, set[str]]] = {
    "dashboard": (lambda w: "/console/?tenant=acme", {"support", "admin", "compliance"}),
    "trails": (lambda w: "/console/trails/?tenant=acme", {"support", "admin", "compliance"}),
    "trail": (lambda w: f"/console/trails/{w.trails[0].pk}/?tenant=acme", {"support", "admin", "compliance"}),
    "sections": (lambda w: "/console/sections/?tenant=acme", {"support", "admin"}),
    "section": (lambda w: f"/console/sections/detail/?tenant=acme&id={quote('manual/install.md#linux', safe='')}",
                {"support", "admin"}),
    "settings": (lambda w: "/console/settings/?tenant=acme", {"admin"}),
    "apikeys": (lambda w: "/console/api-keys/?tenant=acme", {"admin"}),
    "audit": (lambda w: "/console/audit/?tenant=acme", {"admin", "compliance"}),
    "exports": (lambda w: "/console/exports/?tenant=acme", {"admin", "compliance"}),
    "export": (lambda w: f"/console/exports/{w.export_job.pk}/?tenant=acme", {"admin", "compliance"}),
    "export_download": (lambda w: f"/console/exports/{w.export_job.pk}/download/?tenant=acme",
                        {"admin", "compliance"}),
    "subject_erase": (lambda w: "/console/subjects/erase/?tenant=acme", {"compliance"}),
    "subject_erase_job": (lambda w: f"/console/subjects/erase/{w.erase_job.pk}/?tenant=acme", {"compliance"}),
}


@pytest.fixture
def jobs_world(world, settings, tmp_path):
    """The console world plus a finished export (its file on disk) and an erasure job."""
    settings.MEDIA_ROOT = tmp_path / "media"
    world.export_job = export_request(caller=tenant_caller(world.tenant, actor_label="test"), format="csv")
    job_execute(job_id=str(world.export_job.pk))
    world.erase_job = subject_erase_request(caller=tenant_caller(world.tenant, actor_label="test"), subject="nobody")
    return world


def expected_status(persona: str, allowed: set[str], ok: int = 200) -> int:
    if persona == "anonymous":
        return 302
    if persona == "outsider":
        return 404
    if persona == "superuser" or persona in allowed:
        return ok
    return 403


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("page", PAGES)
def test_page_access_matrix(jobs_world, page, persona):
    world = jobs_world
    build, allowed = PAGES[page]
    url = build(world)
    response = world.client(persona).get(url)
    assert response.status_code == expected_status(persona, allowed), (page, persona)
    if persona == "anonymous":
        assert response["Location"].startswith("/console/login/?next=")
    if response.status_code == 200 and page == "export_download":
        assert response["Content-Disposition"].startswith("attachment")
        assert b"trail_id" in b"".join(response.streaming_content)
    elif response.status_code == 200:
        assert b"<html" in response.content


def _trail_post(action: str, *, confirm: bool = True) -> Callable:
    def build(w):
        data = {"action": action, "ids": [str(w.trails[0].pk)], "next": "/console/trails/?tenant=acme"}
        if confirm:
            data["confirm"] = "1"
        return "/console/trails/actions/?tenant=acme", data
    return build


def _trail_status(w) -> str | None:
    return Trail.objects.filter(pk=w.trails[0].pk).values_list("status", flat=True).first()


def _release_post(w):
    Trail.objects.filter(pk=w.trails[0].pk).update(status=TrailStatus.QUARANTINED)  # something to release
    return _trail_post("release")(w)


def _labels(tenant: Tenant, *, cited: int = 100, uncited: int = 20) -> float:
    """Labelled recalls that make the suggested prefetch confidence differ from the current one:
    cited ones at 0.97, uncited ones just above the current cut. Returns the current cut. (The
    labels are judged at the cut recall applies: the world's few sections would raise it over them
    with ``small_tenant_cut``, so it is off.)"""
    tenant.small_tenant_cut = False
    tenant.save(update_fields=["small_tenant_cut"])
    trail = Trail.objects.filter(tenant=tenant).first()
    cut = tenant.prefetch_confidence
    RecallEvent.objects.bulk_create([
        RecallEvent(tenant=tenant, scope="default", query="q", trail=trail, outcome="prefetch", reason="match",
                    confidence=c, latency_ms=1.0, served_ids=["x"], offered_ids=["x"], offered_cited=ok)
        for c, ok in [(0.97, True)] * cited + [(round(cut + 0.02, 2), False)] * uncited
    ])
    return cut


def _calibration_post(w):
    w.cut_before = _labels(w.tenant)
    return "/console/settings/calibration/apply/?tenant=acme", {}


def _job_post(kind: JobKind, url: str, data: dict) -> Callable:
    def build(w):
        w.jobs_before = Job.objects.filter(tenant=w.tenant, kind=kind).count()
        return url, data
    return build


def _job_added(kind: JobKind) -> Callable:
    return lambda w: Job.objects.filter(tenant=w.tenant, kind=kind).count() > w.jobs_before


# action → (request builder, roles allowed, status when done, "did it happen?" probe)
ACTIONS: dict[str, tuple[Callable, set[str], int, Callable]] = {
    "trail.quarantine": (_trail_post("quarantine"), {"support", "admin"}, 302,
                         lambda w: _trail_status(w) == TrailStatus.QUARANTINED),
    "trail.purge": (_trail_post("purge"), {"support", "admin"}, 302, lambda w: _trail_status(w) is None),
    "trail.purge.ask": (_trail_post("purge", confirm=False), {"support", "admin"}, 200,
                        lambda w: _trail_status(w) == TrailStatus.ACTIVE),
    "settings.change": (lambda w: ("/console/settings/?tenant=acme", settings_form_data(w.tenant, trail_ttl_days=45)),
                        {"admin"}, 302,
        lambda w: Tenant.objects.get(slug="acme").trail_ttl_days == 45),
    "apikey.create": (lambda w: ("/console/api-keys/?tenant=acme", {"name": "bot", "scope_prefixes": ""}),
                      {"admin"}, 201, lambda w: ApiKey.objects.filter(tenant=w.tenant, name="bot").exists()),
    "apikey.revoke": (lambda w: (f"/console/api-keys/{w.key.pk}/revoke/?tenant=acme", {}), {"admin"}, 302,
                      lambda w: ApiKey.objects.get(pk=w.key.pk).revoked_at is not None),
    "apikey.permissions": (lambda w: (f"/console/api-keys/{w.key.pk}/permissions/?tenant=acme",
                                      {"permissions": ["recall"]}), {"admin"}, 302,
                           lambda w: ApiKey.objects.get(pk=w.key.pk).permissions == ["recall"]),
    "trail.release": (_release_post, {"support", "admin"}, 302, lambda w: _trail_status(w) == TrailStatus.ACTIVE),
    "calibration.apply": (_calibration_post, {"admin"}, 302,
                          lambda w: Tenant.objects.get(slug="acme").prefetch_confidence > w.cut_before),
    "export.request": (_job_post(JobKind.EXPORT, "/console/exports/?tenant=acme", {"format": "csv"}),
                       {"admin", "compliance"}, 302, _job_added(JobKind.EXPORT)),
    "subject.erase": (_job_post(JobKind.SUBJECT_ERASE, "/console/subjects/erase/?tenant=acme",
                                {"subject": "user-7", "confirm": "on"}),
                      {"compliance"}, 302, _job_added(JobKind.SUBJECT_ERASE)),
}


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("action", ACTIONS)
def test_action_access_matrix(jobs_world, action, persona):
    world = jobs_world
    world.key, _ = api_key_create(caller=tenant_caller(world.tenant), name="victim")
    build, allowed, ok, happened = ACTIONS[action]
    url, data = build(world)
    client = world.client(persona)  # logging in may write its own audit entry: counted before
    audit_before = AuditEntry.objects.filter(tenant=world.tenant).count()
    response = client.post(url, data)
    expected = expected_status(persona, allowed, ok)
    assert response.status_code == expected, (action, persona, response.content[:500])
    if persona == "superuser" or persona in allowed:
        assert happened(world)
    else:
        assert not happened(world) or action == "trail.purge.ask"
        assert AuditEntry.objects.filter(tenant=world.tenant).count() == audit_before


def test_outsider_gets_404_for_another_tenants_objects_even_through_their_own_tenant(world):
    client = world.client("outsider")
    assert client.get(f"/console/trails/{world.trails[0].pk}/?tenant=globex").status_code == 404
    assert client.get("/console/sections/detail/?tenant=globex&id=manual%2Finstall.md%23linux").status_code == 404
    response = client.post("/console/trails/actions/?tenant=globex",
                           {"action": "purge", "ids": [str(world.trails[0].pk)], "confirm": "1"})
    assert response.status_code == 302
    assert Trail.objects.filter(pk=world.trails[0].pk).exists()
    other_key, _ = api_key_create(caller=tenant_caller(world.tenant), name="acme key")
    assert client.post(f"/console/api-keys/{other_key.pk}/revoke/?tenant=globex").status_code == 404
    assert ApiKey.objects.get(pk=other_key.pk).revoked_at is None


def test_member_sees_only_their_tenants_in_the_switcher(world):
    body = world.client("support").get("/console/trails/?tenant=acme").content.decode()
    assert 'value="acme"' in body and "globex" not in body


def test_unknown_tenant_is_404_and_all_tenants_is_for_superusers_only(world):
    assert world.client("admin").get("/console/?tenant=nope").status_code == 404
    assert world.client("admin").get("/console/?tenant=*").status_code == 404
    assert world.client("superuser").get("/console/?tenant=*").status_code == 200
    assert world.client("superuser").get("/console/trails/?tenant=*").status_code == 404


def test_operator_without_membership_gets_404(world, django_user_model):
    loner = django_user_model.objects.create_user(username="loner@x.test", password="x" * 12)
    client = world.client("anonymous")
    client.force_login(loner)
    assert client.get("/console/").status_code == 404


def test_the_matrices_cover_every_console_route(jobs_world):
    """A new console URL must join PAGES (GET) or ACTIONS (POST) to pass this; a view that
    starts accepting POST must join ACTIONS."""
    world = jobs_world
    world.key, _ = api_key_create(caller=tenant_caller(world.tenant), name="victim")

    def route(url: str) -> str:
        return resolve(urlsplit(url).path).url_name

    pages = {route(build(world)): build(world) for build, _ in PAGES.values()}
    posted = {route(build(world)[0]) for build, *_ in ACTIONS.values()}
    every = {p.name for p in console_urls.urlpatterns} - {"login", "logout"}
    assert every - set(pages) - posted == set()
    client = world.client("superuser")
    for name, url in pages.items():  # every page outside ACTIONS refuses a POST
        if name not in posted:
            assert client.post(url).status_code == 405, name


def test_every_console_view_goes_through_the_access_gate():
    open_views = {"login", "logout"}
    for pattern in console_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if pattern.name in open_views:
            continue
        assert hasattr(pattern.callback, "console_capability"), pattern.name


@pytest.mark.parametrize("action", ACTIONS)
def test_csrf_is_enforced_on_every_post(world, action):
    world.key, _ = api_key_create(caller=tenant_caller(world.tenant), name="victim")
    build, _allowed, _ok, happened = ACTIONS[action]
    url, data = build(world)
    client = world.client("superuser", enforce_csrf_checks=True)
    response = client.post(url, data)
    assert response.status_code == 403
    assert not happened(world) or action == "trail.purge.ask"


def test_csrf_token_from_the_page_works_as_htmx_sends_it(world):
    client = world.client("admin", enforce_csrf_checks=True)
    page = client.get("/console/trails/?tenant=acme")
    token = page.cookies["csrftoken"].value
    assert 'hx-headers=\'{"X-CSRFToken": "' in page.content.decode()
    response = client.post("/console/trails/actions/?tenant=acme",
                           {"action": "quarantine", "ids": [str(world.trails[0].pk)], "confirm": "1"},
                           HTTP_X_CSRFTOKEN=token, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert _trail_status(world) == TrailStatus.QUARANTINED


def test_logout_needs_post_and_login_page_renders(world):
    client = world.client("admin")
    assert client.get("/console/login/").status_code == 302  # already logged in → console
    assert world.client("anonymous").get("/console/login/").status_code == 200
    assert client.post("/console/logout/").status_code == 302
    assert client.get("/console/").status_code == 302


def test_login_with_email_and_password(world):
    client = world.client("anonymous")
    response = client.post("/console/login/", {"username": "support@acme.test", "password": "console-test-pass",
                                                "next": "/console/trails/?tenant=acme"})
    assert response.status_code == 302 and response["Location"] == "/console/trails/?tenant=acme"
    bad = world.client("anonymous").post("/console/login/", {"username": "support@acme.test", "password": "no"})
    assert bad.status_code == 200 and b"Email or password is wrong" in bad.content
