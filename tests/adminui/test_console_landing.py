"""Where an operator lands without ``?tenant=``: the tenant they last used, else the demo
tenant, else the first of theirs with data; never a throw-away tenant that merely sorts first."""

from __future__ import annotations

from tenants.models import Membership, Role
from tenants.services import tenant_create
from tests.adminui.conftest import record


def landed(client, url: str = "/console/") -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.context["tenant"].slug


def test_superuser_skips_an_empty_tenant_that_sorts_first(world):
    tenant_create(slug="aaa-scratch", name="Scratch")  # no trails: sorts first, shows nothing
    assert landed(world.client("superuser")) == "acme"


def test_the_demo_tenant_is_the_landing_before_anything_was_used(world):
    demo = tenant_create(slug="demo", name="Demo Docs Inc.")
    record(demo, "How do I reset my password?", [])
    assert landed(world.client("superuser")) == "demo"
    Membership.objects.create(user=world.users["admin"], tenant=demo, role=Role.SUPPORT)
    assert landed(world.client("admin")) == "demo"


def test_the_tenant_last_used_is_remembered_across_pages_and_logins(world):
    client = world.client("superuser")
    assert landed(client, "/console/trails/?tenant=globex") == "globex"
    assert landed(client) == "globex"
    assert landed(client, "/console/sections/") == "globex"
    client.post("/console/logout/")
    client.force_login(world.users["superuser"])
    assert landed(client) == "globex"
    assert landed(client, "/console/?tenant=*") == "acme"  # all tenants is a view, not a tenant
    assert landed(client) == "globex"


def test_a_remembered_tenant_is_one_the_operator_may_still_see_and_their_own(world):
    superuser = world.client("superuser")
    landed(superuser, "/console/?tenant=globex")
    cookie = superuser.cookies["tc_tenant"]
    assert cookie["httponly"] and cookie["path"] == "/console/"
    other = world.client("admin")
    other.cookies["tc_tenant"] = cookie.value  # signed for the superuser: ignored for anyone else
    assert landed(other) == "acme"
    forged = world.client("admin")
    forged.cookies["tc_tenant"] = f"{world.users['admin'].pk}:globex"  # unsigned: ignored
    assert landed(forged) == "acme"
