"""Console logins: an account is delayed after repeated failures from one address (even the right
password is refused from there until the delay ends, and the delay grows), an address guessing
across accounts is throttled, both across processes; X-Forwarded-For counts only from a trusted
proxy; logins and lockouts are audited in the operator's tenants; a refusal looks like a
wrong password."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenants import ratelimit
from tenants.models import AuditAction, AuditEntry, Role
from tenants.services import operator_create

PASSWORD = "right-password-for-tests"
NOW = 1_800_000_010.0
ROOT = Path(__file__).resolve().parents[2]


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


# An attacker rotating addresses: each address fails once or twice (no per-pair delay, no
# per-address throttle), yet the account's failures across addresses are bounded too, by a delay
# that grows slowly and stays short, so the real operator is delayed at worst, never locked out,
# and not even delayed from an address it logged in from before.

ROTATING = [f"198.51.{n // 250}.{n % 250 + 1}" for n in range(2000)]  # a new address for every attempt


@pytest.fixture
def account_guard(guard):
    guard.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # in memory, on the test's clock
    guard.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT = 4
    guard.TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS = 10
    return guard


def test_failures_across_many_addresses_delay_the_account(client, account_guard, operator, clock):
    for address in ROTATING[:4]:
        assert not _logged_in(_login(client, "ops@acme.test", "wrong", address=address))
    # The 5th address, never seen before, with the right password: delayed like any other.
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD, address=ROTATING[10]))
    clock["t"] += 10.5  # the delay ends (at most the configured maximum)
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD, address=ROTATING[10]))
    entries = AuditEntry.objects.filter(action=AuditAction.LOGIN_LOCKED, target="ops@acme.test")
    assert entries.exists()
    assert {e.details.get("across_addresses") for e in entries} == {True}
    assert entries.first().details["failures"] == 4


def test_the_account_delay_grows_slowly_and_bounds_the_guesses(client, account_guard, operator, clock):
    from tenants.login_guard import account_delay_after

    delays = [account_delay_after(n) for n in range(1, 40)]
    assert delays[:3] == [0, 0, 0] and 0 < delays[3] < delays[4]  # from the 4th failure, growing
    assert max(delays) == 10  # never more than TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS
    assert all(b - a <= 2 for a, b in zip(delays, delays[1:], strict=False))  # slowly: no doubling
    # Guessing as fast as allowed from a new address each time, for one lock period: bounded.
    tried = 0
    end = clock["t"] + 15 * 60
    addresses = iter(ROTATING)
    while clock["t"] < end:
        response = _login(client, "ops@acme.test", "wrong", address=next(addresses))
        tried += 1
        clock["t"] += 0.5
        assert not _logged_in(response)
    delays = [e.details["delay_seconds"] for e in AuditEntry.objects.filter(
        action=AuditAction.LOGIN_LOCKED, target="ops@acme.test", tenant=operator[1]).order_by("created_at", "id")]
    # Of 1,800 attempts, only those outside a delay had their password checked: the first 4 (and 4
    # again when the counting window turns), then one per delay, each audited.
    assert tried == 1800 and len(delays) < 15 * 60 // 10 + 10
    assert delays[:5] == [2, 4, 6, 8, 10] and set(delays[5:]) <= {2, 4, 6, 8, 10}


def test_an_address_the_operator_logged_in_from_is_not_delayed_by_failures_elsewhere(
        client, account_guard, operator, clock):
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD, address="192.0.2.10"))
    client.logout()
    for address in ROTATING[:8]:
        _login(client, "ops@acme.test", "wrong", address=address)
    assert not _logged_in(_login(client, "ops@acme.test", PASSWORD, address=ROTATING[50]))  # a new one: delayed
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD, address="192.0.2.10"))  # a known one: not


def test_logins_refused_by_the_account_delay_do_not_count_against_the_operators_address(
        client, account_guard, operator, clock):
    for address in ROTATING[:4]:
        _login(client, "ops@acme.test", "wrong", address=address)
    for _ in range(6):  # the operator, at a new address, tries again and again during the delay
        assert not _logged_in(_login(client, "ops@acme.test", PASSWORD, address="192.0.2.77"))
    clock["t"] += 10.5
    # No password was checked while delayed: no per-(account, address) delay grew from it.
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD, address="192.0.2.77"))


def test_only_passwords_checked_count_for_the_account_across_addresses(client, account_guard, operator):
    account_guard.TRAILCACHE_LOGIN_MAX_FAILURES = 100  # the per-(account, address) delay is another test's
    for n in range(6):  # one address guessing across accounts: throttled
        _login(client, f"nobody-{n}@acme.test", "guess", address="203.0.113.99")
    for _ in range(10):  # then at the operator: refused by the throttle, no password checked
        assert not _logged_in(_login(client, "ops@acme.test", "wrong", address="203.0.113.99"))
    assert _logged_in(_login(client, "ops@acme.test", PASSWORD, address=ROTATING[0]))  # not delayed


def _settings_with(env: dict[str, str]):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "DATABASE_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/unused",
                  "TRAILCACHE_DEV": "true", **env})
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT, s.TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS)")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=120)


def test_the_account_bound_is_configured_from_the_environment():
    assert _settings_with({}).stdout.split() == ["30", "60"]
    configured = _settings_with({"TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT": "7",
                                 "TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS": "45"})
    assert configured.stdout.split() == ["7", "45"], configured.stderr
    refused = _settings_with({"TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS": "0"})
    assert refused.returncode != 0 and "TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS must be >= 1" in refused.stderr
