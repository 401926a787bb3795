"""Console logins: an account is locked after repeated failures (even the right password is
refused until the lock ends), an address guessing across accounts is throttled, both across
processes; logins and lockouts are audited in the operator's tenants; a refusal looks like a
wrong password."""

from __future__ import annotations

import pytest

from tenants import ratelimit
from tenants.models import AuditAction, AuditEntry, Role
from tenants.services import operator_create

PASSWORD = "right-password-for-tests"
NOW = 1_800_000_010.0


@pytest.fixture
def clock(monkeypatch):
    now = {"t": NOW}
    monkeypatch.setattr(ratelimit.time, "time", lambda: now["t"])
    return now


@pytest.fixture
def guard(settings, clock):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.TRAILCACHE_LOGIN_MAX_FAILURES = 3
    settings.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    settings.TRAILCACHE_LOGIN_LOCK_MINUTES = 15
    ratelimit.counters.reset()
    yield settings
    ratelimit.counters.reset()


@pytest.fixture
def operator(make_tenant):
    tenant = make_tenant()
    other = make_tenant()
    user = operator_create(email="ops@acme.test", password=PASSWORD, tenant=tenant, role=Role.ADMIN)
    operator_create(email="ops@acme.test", password=PASSWORD, tenant=other, role=Role.SUPPORT)
    return user, tenant, other


def _login(client, email, password, address="203.0.113.7"):
    return client.post("/console/login/", {"username": email, "password": password}, REMOTE_ADDR=address)


def _logged_in(response) -> bool:
    return response.status_code == 302


def test_an_account_is_locked_after_repeated_failures_even_for_the_right_password(client, guard, operator, clock):
    user, tenant, other = operator
    for _ in range(3):
        assert not _logged_in(_login(client, "ops@acme.test", "wrong"))
    refused = _login(client, "ops@acme.test", PASSWORD)
    assert not _logged_in(refused)
    wrong = _login(client, "ops@acme.test", "wrong")
    assert refused.content.count(b"errornote") == wrong.content.count(b"errornote")  # looks like any failure
    locks = AuditEntry.objects.filter(action=AuditAction.LOGIN_LOCKED, target="ops@acme.test")
    assert {e.tenant_id for e in locks} == {tenant.pk, other.pk}  # once per tenant of the operator
    assert locks.first().details["failures"] == 3 and "right-password" not in str(locks.first().details)

    ratelimit.counters.reset()  # (Redis keeps the lock for real minutes: the rest runs on the clock below)
    guard.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing there: each process counts in memory
    for _ in range(3):
        _login(client, "ops@acme.test", "wrong")
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD))
    clock["t"] += 15 * 60 + 1  # the lock ends
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD))
    login = AuditEntry.objects.get(action=AuditAction.LOGIN, target="ops@acme.test", tenant=tenant)
    assert login.details == {"address": "203.0.113.7"}


def test_a_successful_login_clears_the_failures_before_the_lock(client, guard, operator):
    for _ in range(2):
        _login(client, "ops@acme.test", "wrong")
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD))
    client.logout()
    for _ in range(2):
        _login(client, "ops@acme.test", "wrong")
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD))


def test_the_lock_is_per_account_and_the_username_case_does_not_matter(client, guard, operator, make_tenant):
    operator_create(email="second@acme.test", password=PASSWORD, tenant=make_tenant(), role=Role.SUPPORT)
    for email in ("OPS@acme.test", "ops@ACME.test", "ops@acme.test"):
        _login(client, email, "wrong")
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD))
    assert _logged_in(_login(client, "second@acme.test", PASSWORD))


def test_an_address_guessing_across_accounts_is_throttled(client, guard, operator):
    for n in range(6):
        _login(client, f"nobody-{n}@acme.test", "guess")
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD))  # the same address: refused
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD, address="198.51.100.9"))


def test_unknown_accounts_are_counted_but_nothing_is_audited(client, guard, db):
    for _ in range(4):
        _login(client, "ghost@acme.test", "guess")
    assert not AuditEntry.objects.exists()
