"""Console logins: throttled per client address, and delayed per (account, address) after
repeated failures, both counted across every web process (``tenants.ratelimit``); logins, and
each delay when it starts, are audited in each of the operator's tenants.

- The client address is the peer's (``REMOTE_ADDR``), unless the peer is one of
  ``TRAILCACHE_TRUSTED_PROXIES`` (networks; empty by default): then the ``X-Forwarded-For``
  entry nearest the service that is not itself a trusted proxy. Behind a load balancer every
  client would otherwise share one address, so that 20 wrong passwords from anyone would lock
  every operator out.
- ``TRAILCACHE_LOGIN_MAX_FAILURES`` (5) failures for one account from one address within the
  lock period (``TRAILCACHE_LOGIN_LOCK_MINUTES``, 15) delay that account's next login from that
  address by ``FIRST_DELAY_SECONDS``, and each further failure doubles the delay, up to the
  lock period: even the right password is refused meanwhile, from that address only. Knowing
  an operator's email no longer locks the operator out from everywhere.
- ``TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS`` (20) failures from one client address within that
  period refuse every login from it until the period ends (guessing across many accounts).
- ``TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT`` (30) failures for one account from every address
  within the period (an attacker rotating addresses, each failing once) delay that account's
  next login by ``ACCOUNT_DELAY_STEP_SECONDS``, and each further failure by that much more, up
  to ``TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS`` (60): guesses at one account are bounded
  (about one a minute), while the operator waits a minute at worst. That delay skips the
  addresses the account logged in from (``KNOWN_ADDRESS_DAYS``): the operator at its usual
  place is not delayed at all. Failures refused by a delay do not count.
A refused login looks like a wrong password: it tells nothing about the account."""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.dispatch import receiver

from tenants.models import AuditAction, Membership
from tenants.ratelimit import counters

FIRST_DELAY_SECONDS = 30
ACCOUNT_DELAY_STEP_SECONDS = 2
KNOWN_ADDRESS_DAYS = 30


def _account(username: str | None) -> str:
    return (username or "").strip().lower()[:254]


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return any(address in ipaddress.ip_network(n, strict=False) for n in settings.TRAILCACHE_TRUSTED_PROXIES)


def client_address(request: Any) -> str:
    """The client's address: the peer's, or, when the peer is a trusted proxy, the nearest
    ``X-Forwarded-For`` entry that is not a trusted proxy (entries further left are the
    client's own claims, never trusted)."""
    meta = getattr(request, "META", {}) or {}
    peer = meta.get("REMOTE_ADDR", "") or "unknown"
    current = _ip(peer)
    if current is None or not _trusted(current):
        return peer
    for entry in reversed(meta.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        forwarded = _ip(entry)
        if forwarded is None:
            break  # a malformed entry: stop at the last address a trusted proxy vouched for
        current = forwarded
        if not _trusted(forwarded):
            break
    return str(current)


def _address(request: Any) -> str:
    return client_address(request)


def _pair(account: str, address: str) -> str:
    return f"{account}|{address}"


def delay_after(failures: int) -> int:
    """Seconds a (account, address) waits after its ``failures``-th failure in the period."""
    over = failures - settings.TRAILCACHE_LOGIN_MAX_FAILURES
    if over < 0:
        return 0
    return min(_period(), FIRST_DELAY_SECONDS * 2 ** min(over, 32))


def account_delay_after(failures: int) -> int:
    """Seconds an account waits, from addresses it never logged in from, after its
    ``failures``-th failure in the period across every address: linear, and short."""
    over = failures - settings.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT
    if over < 0:
        return 0
    return min(settings.TRAILCACHE_LOGIN_ACCOUNT_MAX_DELAY_SECONDS, ACCOUNT_DELAY_STEP_SECONDS * (over + 1))


def _period() -> int:
    return settings.TRAILCACHE_LOGIN_LOCK_MINUTES * 60


class Refusal(StrEnum):
    """Which bound refused a login before its password was checked."""

    PAIR = "pair"  # the (account, address) delay
    ACCOUNT = "account"  # the account's delay across addresses
    ADDRESS = "address"  # the per-address throttle


# Set on the request by the backend when it refused the login (read by the failure count).
REFUSAL_ATTRIBUTE = "trailcache_login_refusal"


def _account_delayed(account: str, pair: str) -> bool:
    """The account's delay across addresses holds, and this address is not one it logged in from."""
    return bool(account) and counters.held("login-account-delay", account) and not counters.held("login-known", pair)


def login_refusal(*, username: str | None, request: Any) -> Refusal | None:
    """Which bound refuses a login before its password is even checked, if any."""
    account, address = _account(username), _address(request)
    pair = _pair(account, address)
    if counters.held("login-lock", pair):
        return Refusal.PAIR
    if _account_delayed(account, pair):
        return Refusal.ACCOUNT
    if counters.peek("login-address", address, period=_period()) >= settings.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS:
        return Refusal.ADDRESS
    return None


def login_refused(*, username: str | None, request: Any) -> bool:
    """Whether a login must be refused before its password is even checked."""
    return login_refusal(username=username, request=request) is not None


class ThrottledModelBackend(ModelBackend):
    """Django's model backend behind the lockout and the per-address throttle."""

    def authenticate(self, request: Any, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> Any:
        refusal = login_refusal(username=username or kwargs.get("email"), request=request)
        if refusal is not None:
            if request is not None:
                setattr(request, REFUSAL_ATTRIBUTE, refusal)
            raise PermissionDenied("too many failed logins")  # authenticate() answers None, signals a failure
        return super().authenticate(request, username=username, password=password, **kwargs)


def _audit(user: Any, action: AuditAction, details: dict[str, Any]) -> None:
    from tenants.services import audit_record

    with transaction.atomic():
        for membership in Membership.objects.filter(user=user).select_related("tenant"):
            audit_record(tenant=membership.tenant, actor=user, actor_label=f"operator:{user.get_username()}",
                         action=action, target=user.get_username(), details=details)


@receiver(user_login_failed, dispatch_uid="trailcache-login-failed")
def _count_failure(sender: Any, credentials: dict[str, Any], request: Any = None, **_: Any) -> None:
    account = _account(credentials.get("username"))
    address = _address(request)
    pair = _pair(account, address)
    period = _period()
    refusal = getattr(request, REFUSAL_ATTRIBUTE, None)
    if refusal == Refusal.ACCOUNT:
        return  # refused by the account's delay: no password was checked, nothing grows
    counters.hit("login-address", address, limit=settings.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS, period=period)
    if not account or counters.held("login-lock", pair):
        return  # refused while delayed: the delay runs its course, it does not grow
    if refusal is None:  # a password checked, and wrong: it counts for the account across addresses
        _count_account_failure(account, address)
    verdict = counters.hit("login-account", pair, limit=settings.TRAILCACHE_LOGIN_MAX_FAILURES, period=period)
    delay = delay_after(verdict.count)
    if delay:
        counters.hold("login-lock", pair, seconds=delay)
        user = _operator(account)
        if user is not None:
            _audit(user, AuditAction.LOGIN_LOCKED, {
                "failures": verdict.count, "delay_seconds": delay, "address": address,
            })


def _operator(account: str) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(username__iexact=account).first()


def _count_account_failure(account: str, address: str) -> None:
    """One failure for ``account`` across every address; past the bound, a short delay for it
    from addresses it never logged in from, audited."""
    verdict = counters.hit("login-account-all", account, limit=settings.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ACCOUNT,
                           period=_period())
    delay = account_delay_after(verdict.count)
    if not delay:
        return
    counters.hold("login-account-delay", account, seconds=delay)
    user = _operator(account)
    if user is not None:
        _audit(user, AuditAction.LOGIN_LOCKED, {
            "failures": verdict.count, "delay_seconds": delay, "address": address, "across_addresses": True,
        })


@receiver(user_logged_in, dispatch_uid="trailcache-logged-in")
def _logged_in(sender: Any, request: Any, user: Any, **_: Any) -> None:
    pair = _pair(_account(user.get_username()), _address(request))
    counters.clear("login-account", pair, period=_period())
    # An address this account logged in from: not delayed by failures from elsewhere.
    counters.hold("login-known", pair, seconds=KNOWN_ADDRESS_DAYS * 86400)
    _audit(user, AuditAction.LOGIN, {"address": _address(request)})
