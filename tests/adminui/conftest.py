"""Console fixtures: a tenant with real data (written through the services), operators of
each role, an outsider (admin of another tenant) and a superuser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from cachecore.models import Trail
from cachecore.services.recall import recall
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller
from tenants.models import Role, Tenant
from tenants.services import operator_create, tenant_create

PASSWORD = "console-test-pass"

SECTIONS = {
    "manual/install.md#linux": "On Linux, install the package with apt install acme-sync on Debian and Ubuntu.",
    "manual/account.md#password": "To reset your password, choose Forgot password on the sign-in page.",
    "manual/sync.md#conflicts": "When the same file changes on two devices, Acme Sync keeps both copies.",
}


@dataclass
class ConsoleWorld:
    tenant: Tenant
    other: Tenant
    trails: list[Trail]
    other_trail: Trail
    users: dict[str, Any]

    def client(self, who: str, **kw: Any) -> Client:
        client = Client(**kw)
        if who != "anonymous":
            client.force_login(self.users[who])
        return client


def record(tenant: Tenant, query: str, cited: list[str], *, scope: str = "default", subject: str = "") -> Trail:
    return trail_record(
        caller=tenant_caller(tenant), scope=scope, query=query, cited=cited, subject=subject,
        steps=[{"tool": "search", "args": {"q": query}, "returned": cited}],
        signal={"source": "caller", "accepted": True},
    )


def settings_form_data(tenant: Tenant, **changes: object) -> dict[str, object]:
    """The settings form as the page submits it: every field with its current value."""
    from adminui.forms import CONSOLE_SETTINGS_FIELDS

    data = {f: getattr(tenant, f) for f in CONSOLE_SETTINGS_FIELDS}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not False and v is not None}  # unticked boxes aren't sent


@pytest.fixture
def settings_post() -> Any:
    return settings_form_data


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def world(db: None) -> ConsoleWorld:
    tenant = tenant_create(slug="acme", name="Acme Docs")
    other = tenant_create(slug="globex", name="Globex")
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": k, "text": v} for k, v in SECTIONS.items()])
    sections_upsert(caller=tenant_caller(other), sections=[{"id": "globex#1", "text": "Globex private text."}])
    trails = [
        record(tenant, "How do I install Acme Sync on Ubuntu?", ["manual/install.md#linux"], subject="user-7"),
        record(tenant, "How do I reset my password?", ["manual/account.md#password"]),
        record(tenant, "What happens on a sync conflict?", ["manual/sync.md#conflicts", "manual/install.md#linux"],
               scope="group:premium"),
    ]
    recall(caller=tenant_caller(tenant), scope="default", query="How do I install Acme Sync on Ubuntu?")
    recall(caller=tenant_caller(tenant), scope="default", query="unrelated question about invoices")
    other_trail = record(other, "Globex secret question", ["globex#1"])
    users = {
        role: operator_create(email=f"{role}@acme.test", password=PASSWORD, tenant=tenant, role=role)
        for role in (Role.SUPPORT, Role.ADMIN, Role.COMPLIANCE)
    }
    users["outsider"] = operator_create(email="admin@globex.test", password=PASSWORD, tenant=other, role=Role.ADMIN)
    users["superuser"] = operator_create(email="root@trailcache.test", password=PASSWORD, tenant=None, role=None,
                                         superuser=True)
    return ConsoleWorld(tenant=tenant, other=other, trails=trails, other_trail=other_trail, users=users)
