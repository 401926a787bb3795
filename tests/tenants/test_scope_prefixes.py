"""Prefix semantics (issue 21 item 3): a prefix admits a scope when it equals it or ends at a
delimiter of it; new keys' prefixes must end in ``:`` or ``/``; keys made before keep working
(``team-a`` admits ``team-a`` and its delimited children, never ``team-ab``)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from cachecore.models import Trail
from tenants.caller import Caller, tenant_caller
from tenants.models import ApiKey
from tenants.scopes import prefix_admits, prefix_within, prefixes_overlap, scope_allowed, scope_prefix_problem
from tenants.services import api_key_create


@pytest.mark.parametrize(("prefix", "scope", "admitted"), [
    ("team-a:", "team-a:x", True),
    ("team-a:", "team-a:", True),
    ("team-a:", "team-a", False),
    ("team-a:", "team-ab:x", False),
    ("team-a/", "team-a/x/y", True),
    # A prefix made before the delimiter rule: itself and its delimited children only.
    ("team-a", "team-a", True),
    ("team-a", "team-a:x", True),
    ("team-a", "team-a/x", True),
    ("team-a", "team-ab", False),
    ("team-a", "team-ab:x", False),
])
def test_a_prefix_admits_a_scope_only_at_a_delimiter(prefix, scope, admitted):
    assert prefix_admits(prefix, scope) is admitted
    assert scope_allowed([prefix], scope) is admitted


def test_lists_within_and_overlap():
    assert scope_allowed([], "anything")
    assert scope_allowed(["a:", "b/"], "b/c") and not scope_allowed(["a:", "b/"], "bc")
    assert prefix_within("public:docs:", "public:") and not prefix_within("public:", "public:docs:")
    assert prefixes_overlap("public:", "public:docs:") and prefixes_overlap("public:docs:", "public:")
    assert not prefixes_overlap("public:", "publicity:")


def test_the_database_filter_says_the_same(make_tenant, make_caller):
    api = make_caller()
    api.upsert({"d#1": "Some text to cite."})
    scopes = ["team-a", "team-a:x", "team-a/y", "team-ab", "team-ab:x", "team-b:x"]
    for scope in scopes:
        assert api.record(query=f"question in {scope}?", cited=["d#1"], scope=scope).status_code == 201
    for prefixes in (("team-a",), ("team-a:",), ("team-a/", "team-b:"), ("team-ab",)):
        caller = Caller(tenant=api.tenant, scope_prefixes=prefixes)
        seen = set(Trail.objects.visible_to(caller).values_list("scope", flat=True))
        assert seen == {s for s in scopes if scope_allowed(prefixes, s)}, prefixes


def test_new_keys_need_prefixes_ending_at_a_delimiter(make_tenant):
    tenant = make_tenant()
    assert scope_prefix_problem("team-a:") is None and scope_prefix_problem("team-a/") is None
    with pytest.raises(ValueError, match="must end in ':' or '/'"):
        api_key_create(caller=tenant_caller(tenant), name="bad", scope_prefixes=["team-a:", "team-b"])
    assert not ApiKey.objects.filter(tenant=tenant).exists()
    err = io.StringIO()
    with pytest.raises(CommandError, match="'team-b' must end in ':' or '/'"):
        call_command("create_api_key", "--tenant", tenant.slug, "--scopes", "team-b", stdout=io.StringIO(),
                     stderr=err)
    assert not ApiKey.objects.filter(tenant=tenant).exists()


def test_an_existing_key_without_a_delimiter_keeps_working(make_tenant, make_caller):
    tenant = make_tenant()
    wide = make_caller(tenant=tenant)
    wide.upsert({"d#1": "Some text to cite."})
    key, raw = api_key_create(caller=tenant_caller(tenant), name="old", scope_prefixes=["team-a:"],
                              permissions=["recall"])
    ApiKey.objects.filter(pk=key.pk).update(scope_prefixes=["team-a"])  # as made before the rule
    from tests.conftest import ApiCaller

    old = ApiCaller(tenant, raw)
    for scope in ("team-a", "team-a:x", "team-a/x"):
        assert old.post("/api/v1/recall", {"scope": scope, "query": "a question?"}).status_code == 200
    refused = old.post("/api/v1/recall", {"scope": "team-ab", "query": "a question?"})
    assert refused.status_code == 403 and refused.json()["error"] == "scope_forbidden"


def _admin(tenant):
    from django.test import Client

    from tenants.models import Role
    from tenants.services import operator_create

    client = Client()
    client.force_login(operator_create(email="a@acme.test", password="pw-123456789", tenant=tenant, role=Role.ADMIN))
    return client


@pytest.mark.parametrize(("prefixes", "message"), [
    ("group", "must end in"),                                   # no delimiter
    ("group:, team a:", "may hold only what a scope holds"),   # a character no scope holds
])
def test_the_console_refuses_such_a_prefix(make_tenant, prefixes, message):
    tenant = make_tenant("acme")
    response = _admin(tenant).post("/console/api-keys/?tenant=acme", {
        "name": "bot", "scope_prefixes": prefixes, "permissions_shown": "1", "permissions": ["recall"]})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ApiKey.objects.filter(tenant=tenant, name="bot").exists()


def test_the_console_gives_and_says_the_least_privilege_default(make_tenant):
    tenant = make_tenant("acme")
    client = _admin(tenant)
    page = client.get("/console/api-keys/?tenant=acme").content.decode()
    assert "Least privilege by default: recall, record, feedback, sections:read" in page
    assert client.post("/console/api-keys/?tenant=acme", {"name": "script", "scope_prefixes": ""}).status_code == 201
    assert ApiKey.objects.get(tenant=tenant, name="script").permissions == ["recall", "record", "feedback",
                                                                           "sections:read"]


def test_a_limited_callers_namespace_is_its_prefixes_canonical_form(make_tenant):
    from tenants.scopes import NAMESPACE_SEPARATOR, SHARED_NAMESPACE, namespace_of

    assert namespace_of(["public:", "docs/", "public:"]) == namespace_of(["docs/", "public:"]) == "docs/,public:"
    assert namespace_of([]) == SHARED_NAMESPACE == ""
    tenant = make_tenant()
    assert Caller(tenant=tenant, scope_prefixes=("team-b/", "team-a/")).namespace == "team-a/,team-b/"
    assert tenant_caller(tenant).namespace == ""
    # The separator never appears in a prefix: a new key's prefix holding it is refused.
    assert scope_prefix_problem(f"a:{NAMESPACE_SEPARATOR}b:") is not None
    with pytest.raises(ValueError, match="separates prefixes"):
        api_key_create(caller=tenant_caller(tenant), name="k", scope_prefixes=["a,b:"])


@pytest.mark.parametrize("prefix", ["team a:", "tëam:", "team\n:", "team:\n", "x" * 200 + ":"])
def test_new_keys_need_prefixes_made_of_what_a_scope_holds(make_tenant, prefix):
    """A prefix of other characters would admit no scope a request can name (the API refuses
    such scopes): a key limited to nothing it could use."""
    tenant = make_tenant()
    assert "may hold only what a scope holds" in scope_prefix_problem(prefix)
    with pytest.raises(ValueError, match="may hold only what a scope holds"):
        api_key_create(caller=tenant_caller(tenant), name="bad", scope_prefixes=["team-a:", prefix])
    assert not ApiKey.objects.filter(tenant=tenant).exists()


def test_shadow_prefixes_hold_what_a_scope_holds(make_tenant):
    from django.core.exceptions import ValidationError

    from tenants.models import Tenant
    from tenants.services import tenant_settings_update

    tenant = make_tenant()
    with pytest.raises(ValidationError) as refused:
        tenant_settings_update(caller=tenant_caller(tenant), changes={"shadow_scope_prefixes": ["beta:", "be ta:"]})
    assert "shadow_scope_prefixes" in refused.value.message_dict
    assert "may hold only what a scope holds" in str(refused.value.message_dict["shadow_scope_prefixes"])
    assert Tenant.objects.get(pk=tenant.pk).shadow_scope_prefixes == []
    # A prefix without a delimiter stays allowed here: shadow mode has always read it by the rule.
    tenant_settings_update(caller=tenant_caller(tenant), changes={"shadow_scope_prefixes": ["beta", "gamma:"]})
    assert Tenant.objects.get(pk=tenant.pk).shadow_scope_prefixes == ["beta", "gamma:"]


def test_the_console_settings_page_refuses_such_a_shadow_prefix(make_tenant):
    from tenants.models import Tenant
    from tests.adminui.conftest import settings_form_data

    tenant = make_tenant("acme")
    response = _admin(tenant).post("/console/settings/?tenant=acme",
                                   settings_form_data(tenant, shadow_scope_prefixes="beta:,be ta:"))
    assert response.status_code == 400
    assert "may hold only what a scope holds" in response.content.decode()
    assert Tenant.objects.get(pk=tenant.pk).shadow_scope_prefixes == []
