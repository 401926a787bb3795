"""Console logins: throttled per address and locked per account after repeated failures, both
counted across every web process (``tenants.ratelimit``); logins, and a lockout when it starts,
are audited in each of the operator's tenants.

- ``TRAILCACHE_LOGIN_MAX_FAILURES`` (5) failures for one account within the lock period lock it
  for ``TRAILCACHE_LOGIN_LOCK_MINUTES`` (15): even the right password is refused meanwhile.
- ``TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS`` (20) failures from one client address within that
  period refuse every login from it until the period ends (guessing across many accounts).
A refused login looks like a wrong password: it tells nothing about the account."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.dispatch import receiver

from tenants.models import AuditAction, Membership
from tenants.ratelimit import counters


def _account(username: str | None) -> str:
    return (username or "").strip().lower()[:254]


def _address(request: Any) -> str:
    # The direct peer: behind a proxy, every client shares its address (only the per-account lock
    # then tells them apart); X-Forwarded-For is not trusted here.
    return (getattr(request, "META", {}) or {}).get("REMOTE_ADDR", "") or "unknown"


def _period() -> int:
    return settings.TRAILCACHE_LOGIN_LOCK_MINUTES * 60


def login_refused(*, username: str | None, request: Any) -> bool:
    """Whether a login must be refused before its password is even checked."""
    if counters.held("login-lock", _account(username)):
        return True
    failures = counters.peek("login-address", _address(request), period=_period())
    return failures >= settings.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS


class ThrottledModelBackend(ModelBackend):
    """Django's model backend behind the lockout and the per-address throttle."""

    def authenticate(self, request: Any, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> Any:
        if login_refused(username=username or kwargs.get("email"), request=request):
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
    period = _period()
    counters.hit("login-address", _address(request), limit=settings.TRAILCACHE_LOGIN_MAX_FAILURES_PER_ADDRESS,
                 period=period)
    if not account or counters.held("login-lock", account):
        return
    verdict = counters.hit("login-account", account, limit=settings.TRAILCACHE_LOGIN_MAX_FAILURES, period=period)
    if verdict.count >= settings.TRAILCACHE_LOGIN_MAX_FAILURES:
        counters.hold("login-lock", account, seconds=period)
        counters.clear("login-account", account, period=period)
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(username__iexact=account).first()
        if user is not None:
            _audit(user, AuditAction.LOGIN_LOCKED, {
                "failures": verdict.count, "locked_minutes": settings.TRAILCACHE_LOGIN_LOCK_MINUTES,
                "address": _address(request),
            })


@receiver(user_logged_in, dispatch_uid="trailcache-logged-in")
def _logged_in(sender: Any, request: Any, user: Any, **_: Any) -> None:
    counters.clear("login-account", _account(user.get_username()), period=_period())
    _audit(user, AuditAction.LOGIN, {"address": _address(request)})
