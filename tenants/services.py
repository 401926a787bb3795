"""Writes for tenants: creation, API keys, settings, memberships, the audit log. What acts for a
caller takes ``caller: Caller`` and checks it (``tenants.caller.require_capability``); creating
tenants and operators is the installation's own work (the CLI), for no tenant's caller."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from tenants.caller import Caller, require_capability
from tenants.models import (
    ApiKey,
    AuditAction,
    AuditEntry,
    KeyPermission,
    Membership,
    Role,
    Tenant,
    default_key_permissions,
)
from tenants.scopes import scope_prefix_problem
from tenants.selectors import api_key_active_by_prefix
from tenants.settings_diff import settings_audit_details, settings_changed, settings_snapshot

KEY_PREFIX = "tc_"
_PREFIX_SHAPE = re.compile(r"[0-9a-f]{1,16}")


def _digest(raw_key: str) -> str:
    return hmac.new(settings.API_KEY_PEPPER.encode(), raw_key.encode(), hashlib.sha256).hexdigest()


def tenant_create(*, slug: str, name: str = "") -> Tenant:
    tenant = Tenant(slug=slug, name=name or slug)
    tenant.full_clean()
    tenant.save()
    return tenant


SETTINGS_FIELDS = (
    "trail_ttl_days", "pending_ttl_hours", "query_retention_days", "recall_log_retention_days",
    "similarity_threshold", "prefetch_confidence", "hint_confidence", "coverage_floor", "default_budget_tokens",
    "admission_policy", "match_mode", "polarity_guard", "merge_trails", "small_tenant_cut", "target_false_prefetch",
    "noise_allowance", "prefetch_paused", "auto_calibrate",
    "shadow_mode", "shadow_scope_prefixes",
    "resolver_url", "resolver_secret", "resolver_timeout_ms",
)


def tenant_settings_update(*, caller: Caller, changes: dict[str, Any]) -> Tenant:
    """Validate and save the caller's tenant's retention and matching settings on the locked row;
    audit what changed (old → new). Needs ``settings.manage`` (``require_capability``). Raises
    django ValidationError with per-field messages; nothing is saved then. ``caller.tenant``
    shows the saved values afterwards."""
    require_capability(caller, "settings.manage")
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        raise ValueError(f"not tenant settings: {sorted(unknown)}")
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=caller.tenant.pk)
        before = settings_snapshot(tenant, SETTINGS_FIELDS)
        for field, value in changes.items():
            setattr(tenant, field, value)
        tenant.full_clean()  # ValidationError: the transaction rolls back, nothing is saved
        after = settings_snapshot(tenant, SETTINGS_FIELDS)
        changed = settings_changed(before, after)
        if changed:
            tenant.save(update_fields=changed)
            audit_record(tenant=tenant, actor=caller.user, actor_label=caller.actor_label,
                         action=AuditAction.SETTINGS_CHANGE, target=", ".join(changed),
                         details=settings_audit_details(before, after))  # a secret: "(changed)", never its values
    for field in SETTINGS_FIELDS:
        setattr(caller.tenant, field, getattr(tenant, field))
    return tenant


def audit_record(
    *, tenant: Tenant, actor_label: str, action: AuditAction, target: str = "",
    details: dict[str, Any] | None = None, actor: Any = None,
) -> AuditEntry:
    """One audit entry; call inside the action's transaction."""
    return AuditEntry.objects.create(
        tenant=tenant, actor=actor, actor_label=actor_label, action=action, target=target[:300],
        details=details or {},
    )


def key_permissions_clean(permissions: Any) -> list[str]:
    """Known permissions, deduplicated, in the canonical order (KeyPermission); ValueError names
    an unknown one."""
    given = set(permissions)
    unknown = sorted(given - set(KeyPermission.values))
    if unknown:
        raise ValueError(f"unknown API key permissions: {', '.join(unknown)} "
                         f"(known: {', '.join(KeyPermission.values)})")
    return [p for p in KeyPermission.values if p in given]


def api_key_create(
    *, caller: Caller, name: str, scope_prefixes: list[str] | None = None, permissions: Any = None,
) -> tuple[ApiKey, str]:
    """A new key of the caller's tenant; returns (row, the raw key). The raw key is never stored:
    show it once. Needs ``apikeys.manage`` (``require_capability``). ``permissions``: None gives
    the least-privilege default (``DEFAULT_KEY_PERMISSIONS``: recall, record, feedback,
    sections:read); else exactly those given. Every scope prefix must end in ``:`` or ``/``
    (``tenants.scopes.scope_prefix_problem``): ValueError otherwise."""
    require_capability(caller, "apikeys.manage")
    tenant = caller.tenant
    prefix = secrets.token_hex(4)
    raw = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    chosen = default_key_permissions() if permissions is None else key_permissions_clean(permissions)
    prefixes = [p for p in (scope_prefixes or []) if p]
    problems = [problem for problem in map(scope_prefix_problem, prefixes) if problem]
    if problems:
        raise ValueError("; ".join(problems))
    key = ApiKey(tenant=tenant, name=name, prefix=prefix, digest=_digest(raw),
                 scope_prefixes=prefixes, permissions=chosen)
    key.full_clean()
    with transaction.atomic():
        key.save()
        audit_record(tenant=tenant, actor=caller.user, actor_label=caller.actor_label, action=AuditAction.KEY_CREATE,
                     target=f"{name} (tc_{prefix})",
                     details={"scope_prefixes": key.scope_prefixes, "permissions": key.permissions})
    return key, raw


@dataclass(frozen=True)
class ApiKeyChange:
    """A key after a change to it, and whether this call changed it."""

    key: ApiKey
    changed: bool


def _key_lock(caller: Caller, key_id: object) -> ApiKey:
    """The caller's tenant's key ``key_id``, locked for the change; another tenant's key or
    none: Http404 (its existence is not revealed)."""
    try:
        return ApiKey.objects.select_for_update().select_related("tenant").get(tenant=caller.tenant, pk=key_id)
    except (ApiKey.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
        raise Http404("no such key") from exc


def api_key_permissions_update(*, caller: Caller, key_id: object, permissions: Any) -> ApiKeyChange:
    """Set the permissions of a key of the caller's tenant (``apikeys.manage``), on the locked
    row; audited old → new when they change. Takes effect on the key's next request."""
    require_capability(caller, "apikeys.manage")
    new = key_permissions_clean(permissions)
    with transaction.atomic():
        key = _key_lock(caller, key_id)
        old = list(key.permissions)
        if set(old) == set(new):
            return ApiKeyChange(key, changed=False)
        key.permissions = new
        key.save(update_fields=["permissions"])
        audit_record(tenant=key.tenant, actor=caller.user, actor_label=caller.actor_label,
                     action=AuditAction.KEY_PERMISSIONS, target=f"{key.name} (tc_{key.prefix})",
                     details={"permissions": {"old": old, "new": new}})
    return ApiKeyChange(key, changed=True)


def api_key_revoke(*, caller: Caller, key_id: object) -> ApiKeyChange:
    """Revoke a key of the caller's tenant (``apikeys.manage``), on the locked row; audited.
    ``changed`` is False when it was revoked already."""
    require_capability(caller, "apikeys.manage")
    with transaction.atomic():
        key = _key_lock(caller, key_id)
        if key.revoked_at is not None:
            return ApiKeyChange(key, changed=False)
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_record(tenant=key.tenant, actor=caller.user, actor_label=caller.actor_label,
                     action=AuditAction.KEY_REVOKE, target=f"{key.name} (tc_{key.prefix})")
    return ApiKeyChange(key, changed=True)


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    """The active key for ``raw_key``, or None. Constant-time digest comparison."""
    if not raw_key.startswith(KEY_PREFIX):
        return None
    prefix, sep, _secret = raw_key[len(KEY_PREFIX):].partition("_")
    # Prefixes are hex (api_key_create): anything else is not a key, and never reaches the database.
    if not sep or not _PREFIX_SHAPE.fullmatch(prefix):
        return None
    key = api_key_active_by_prefix(prefix)
    if key is None or not hmac.compare_digest(key.digest, _digest(raw_key)):
        return None
    now = timezone.now()
    # last_used is coarse (a minute) so a busy key doesn't write on every request.
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def operator_create(*, email: str, password: str, tenant: Tenant | None, role: Role | str | None,
                    superuser: bool = False) -> Any:
    """A console operator (a Django user, username = email) with a role in a tenant."""
    User = get_user_model()
    with transaction.atomic():
        user, _ = User.objects.get_or_create(username=email, defaults={"email": email})
        user.email = email
        user.is_staff = superuser
        user.is_superuser = superuser
        user.set_password(password)
        user.save()
        if tenant is not None and role:
            Membership.objects.update_or_create(user=user, tenant=tenant, defaults={"role": role})
    return user
