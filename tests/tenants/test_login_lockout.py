"""Console logins: an account is delayed after repeated failures from one address (even the right
password is refused from there until the delay ends, and the delay grows), an address guessing
across accounts is throttled, both across processes; X-Forwarded-For counts only from a trusted
proxy; logins and lockouts are audited in the operator's tenants; a refusal looks like a
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


# Behind a load balancer every client shares its address: the lock is per (account, address), the
# client's address comes from X-Forwarded-For only when the peer is a configured trusted proxy, and
# the lock is a delay that grows with each further failure, never a hard lock for everyone.

PROXY = "10.0.0.2"


def _via_proxy(client, email, password, forwarded):
    return client.post("/console/login/", {"username": email, "password": password}, REMOTE_ADDR=PROXY,
                       HTTP_X_FORWARDED_FOR=forwarded)


def test_failures_from_one_address_do_not_lock_the_account_out_from_another(client, guard, operator):
    for _ in range(5):
        _login(client, "ops@acme.test", "wrong", address="203.0.113.66")
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD, address="203.0.113.66"))
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD, address="198.51.100.9"))


def test_behind_a_trusted_proxy_the_forwarded_client_address_counts(client, guard, operator):
    guard.TRAILCACHE_TRUSTED_PROXIES = ["10.0.0.0/8"]
    for n in range(6):  # an attacker guessing across accounts and at the operator's
        _via_proxy(client, f"nobody-{n}@acme.test", "guess", "192.0.2.50")
    for _ in range(3):
        _via_proxy(client, "ops@acme.test", "wrong", "192.0.2.50")
    assert not _logged_in(_via_proxy(client, "ops@acme.test", PASSWORD, "192.0.2.50"))
    # The operator, behind the same load balancer: not locked out.
    assert _logged_in(_via_proxy(client, "ops@acme.test", PASSWORD, "198.51.100.20, 10.0.0.7"))
    login = AuditEntry.objects.filter(action=AuditAction.LOGIN, target="ops@acme.test").first()
    assert login.details == {"address": "198.51.100.20"}


def test_a_forwarded_header_from_an_untrusted_peer_is_ignored(client, guard, operator):
    guard.TRAILCACHE_TRUSTED_PROXIES = ["10.0.0.0/8"]
    for n in range(3):  # a new forged address each time: still the one peer
        client.post("/console/login/", {"username": "ops@acme.test", "password": "wrong"},
                    REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    refused = client.post("/console/login/", {"username": "ops@acme.test", "password": PASSWORD},
                          REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR="192.0.2.99")
    assert not _logged_in(refused)


def test_the_lock_is_a_delay_that_grows_with_each_further_failure(client, guard, operator, clock):
    guard.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # in memory, on the test's clock
    guard.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS = 100  # the address throttle is another test's
    from tenants.login_guard import FIRST_DELAY_SECONDS

    for _ in range(3):
        _login(client, "ops@acme.test", "wrong")
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD))  # delayed
    clock["t"] += FIRST_DELAY_SECONDS + 0.5
    _login(client, "ops@acme.test", "wrong")  # the 4th failure: twice the delay
    clock["t"] += FIRST_DELAY_SECONDS + 0.5
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD))
    clock["t"] += FIRST_DELAY_SECONDS
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD))
    delays = [e.details["delay_seconds"] for e in AuditEntry.objects.filter(
        action=AuditAction.LOGIN_LOCKED, target="ops@acme.test").order_by("created_at", "id")]
    assert delays[0] == FIRST_DELAY_SECONDS and max(delays) == 2 * FIRST_DELAY_SECONDS
    entry = AuditEntry.objects.filter(action=AuditAction.LOGIN_LOCKED).first()
    assert entry.details["address"] == "203.0.113.7"


def test_the_delay_never_exceeds_the_lock_period(guard):
    from tenants.login_guard import delay_after

    assert delay_after(3) == delay_after(guard.TRAILCACHE_LOGIN_MAX_FAILURES)
    assert delay_after(2) == 0
    assert delay_after(1000) == 15 * 60
