"""One caller, one restriction (issue 12 item 4): the scope-prefix rule in one place, every
restricted queryset (``visible_to``) per tenant and per prefix, reads across every tenant for
superusers only."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from cachecore.models import Citation, DailyStat, Job, JobKind, RecallEvent, Section, Trail
from cachecore.selectors.recalls import recall_daily_counts_all_tenants
from cachecore.selectors.stats import stats_all_tenants, stats_for_tenant
from cachecore.selectors.trails import top_trails_by_hits_all_tenants
from cachecore.services.jobs import job_create
from tenants.caller import Caller, SuperuserRequired, caller_for_key, caller_for_operator, tenant_caller
from tenants.models import ApiKey, Role
from tenants.scopes import scope_allowed
from tenants.selectors import SUPERUSER
from tenants.services import api_key_create, operator_create

QUERY = "Where does Acme read its configuration from?"


def test_the_scope_prefix_rule():
    assert scope_allowed([], "anything")
    assert scope_allowed(("team-a/",), "team-a/x") and not scope_allowed(["team-a/"], "team-b/x")
    assert scope_allowed(["a:", "b:"], "b:ee") and not scope_allowed(["a:", "b:"], "cat")


def test_callers_from_a_key_and_from_an_operator(make_tenant):
    tenant = make_tenant()
    key, _ = api_key_create(caller=tenant_caller(tenant), name="k", scope_prefixes=["p:"], permissions=["recall"])
    caller = caller_for_key(ApiKey.objects.select_related("tenant").get(pk=key.pk))
    assert caller.tenant == tenant and caller.scope_prefixes == ("p:",) and caller.permissions == {"recall"}
    assert caller.actor_label == f"apikey:tc_{key.prefix}" and not caller.is_superuser and caller.key.pk == key.pk
    user = operator_create(email="s@x.test", password="x" * 12, tenant=tenant, role=Role.SUPPORT)
    support = caller_for_operator(user=user, tenant=tenant, role=Role.SUPPORT)
    assert support.has("trails.view") and not support.has("apikeys.manage") and not support.scope_limited
    assert support.actor_label == "operator:s@x.test" and support.user == user
    root = caller_for_operator(user=user, tenant=tenant, role=SUPERUSER)
    assert root.is_superuser and root.has("apikeys.manage")


def test_administration_is_for_operators_by_role_and_for_the_tenants_own_work(make_tenant):
    """require_capability: a role needs the capability; an API key, tenant-wide or limited, never
    administers; the tenant's own work (jobs, the beat, the CLI) may; a superuser may."""
    from tenants.caller import CapabilityMissing, require_capability

    tenant = make_tenant()
    user = operator_create(email="a@x.test", password="x" * 12, tenant=tenant, role=Role.ADMIN)
    for key_prefixes in ([], ["p:"]):
        key, _ = api_key_create(caller=tenant_caller(tenant), name="k", scope_prefixes=key_prefixes)
        with pytest.raises(CapabilityMissing, match="not API keys"):
            require_capability(caller_for_key(ApiKey.objects.select_related("tenant").get(pk=key.pk)),
                               "settings.manage")
    for role, allowed in ((Role.ADMIN, True), (Role.SUPPORT, False), (Role.COMPLIANCE, False), (SUPERUSER, True)):
        caller = caller_for_operator(user=user, tenant=tenant, role=role)
        if allowed:
            require_capability(caller, "apikeys.manage")
        else:
            with pytest.raises(CapabilityMissing, match=f"the {role} role may not"):
                require_capability(caller, "apikeys.manage")
    require_capability(caller_for_operator(user=user, tenant=tenant, role=Role.COMPLIANCE), "audit.view")
    require_capability(tenant_caller(tenant, actor_label="cli:test"), "settings.manage")
    with pytest.raises(CapabilityMissing):
        require_capability(Caller(tenant=tenant, scope_prefixes=("p:",)), "settings.manage")
    assert issubclass(CapabilityMissing, PermissionDenied)  # the console and DRF answer it 403


@pytest.fixture
def two_tenants(make_caller):
    a = make_caller()
    b = make_caller()
    for caller in (a, b):
        assert caller.put("/api/v1/sections", {"sections": [
            {"id": "doc#1", "text": "Acme reads /etc/acme.toml.", "scopes": ["team-a/"]},
            {"id": "doc#2", "text": "Acme writes /var/log/acme.log.", "scopes": ["team-b/"]},
        ]}).status_code == 200
        for scope, cited in (("team-a/x", ["doc#1"]), ("team-b/x", ["doc#2"])):
            assert caller.record(query=QUERY, cited=cited, scope=scope).status_code == 201
            caller.recall(QUERY, scope=scope)
    return a, b


def test_visible_to_restricts_per_tenant_and_per_prefix(two_tenants):
    a, b = two_tenants
    whole = tenant_caller(a.tenant)
    narrow = Caller(tenant=a.tenant, scope_prefixes=("team-a/",))
    assert {t.tenant_id for t in Trail.objects.visible_to(whole)} == {a.tenant.pk}
    assert Trail.objects.visible_to(whole).count() == 2
    assert set(Trail.objects.visible_to(narrow).values_list("scope", flat=True)) == {"team-a/x"}
    assert set(RecallEvent.objects.visible_to(whole).values_list("tenant", flat=True)) == {a.tenant.pk}
    assert set(RecallEvent.objects.visible_to(narrow).values_list("scope", flat=True)) == {"team-a/x"}
    assert set(Citation.objects.visible_to(narrow).values_list("section_id", flat=True)) == {"doc#1"}
    assert Citation.objects.visible_to(whole).count() == 2
    assert set(Section.objects.visible_to(whole).values_list("external_id", flat=True)) == {"doc#1", "doc#2"}
    assert set(Section.objects.visible_to(narrow).values_list("external_id", flat=True)) == {"doc#1"}
    assert not Section.objects.visible_to(Caller(tenant=a.tenant, scope_prefixes=("nobody/",))).exists()
    assert {s.tenant_id for s in Section.objects.visible_to(tenant_caller(b.tenant))} == {b.tenant.pk}
    job = job_create(tenant=a.tenant, kind=JobKind.EXPORT, params={}, actor_label="test")
    assert list(Job.objects.visible_to(whole)) == [job]
    assert not Job.objects.visible_to(tenant_caller(b.tenant)).exists()
    assert not Job.objects.visible_to(narrow).exists()  # a job spans the whole tenant
    assert not DailyStat.objects.visible_to(narrow).exclude(scope__startswith="team-a/").exists()
    # The API's stats for a scope-limited caller count only its scopes.
    assert stats_for_tenant(caller=narrow)["recalls"] == 1 and stats_for_tenant(caller=whole)["recalls"] == 2


def test_reads_across_every_tenant_are_for_superusers_only(two_tenants):
    a, b = two_tenants
    user = operator_create(email="root@x.test", password="x" * 12, tenant=None, role=None, superuser=True)
    root = caller_for_operator(user=user, tenant=a.tenant, role=SUPERUSER)
    for caller in (tenant_caller(a.tenant), caller_for_operator(user=user, tenant=a.tenant, role=Role.ADMIN)):
        with pytest.raises(SuperuserRequired):
            stats_all_tenants(caller=caller)
        with pytest.raises(PermissionDenied):
            recall_daily_counts_all_tenants(caller=caller, days=7)
        with pytest.raises(PermissionDenied):
            top_trails_by_hits_all_tenants(caller=caller)
    assert stats_all_tenants(caller=root)["recalls"] == 4
    assert sum(d["miss"] + d["hint"] + d["prefetch"] for d in recall_daily_counts_all_tenants(caller=root, days=7)) == 4
    assert isinstance(top_trails_by_hits_all_tenants(caller=root), list)
