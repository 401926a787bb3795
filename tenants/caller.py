"""Who is asking: one frozen ``Caller`` for every request, built here only — by the API key
authentication (``api.authentication``: ``caller_for_key``) and by the console gate
(``adminui.access.console_view``: ``caller_for_operator``); services and tasks acting for a whole
tenant use ``tenant_caller``. Reads take a caller and go through ``visible_to(caller)``
(``cachecore.models``): its tenant, and its scope prefixes by the one rule of ``tenants.scopes``.
Reads across every tenant take a caller too and call ``require_superuser`` first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Q

from tenants.capabilities import CAPABILITIES, SUPERUSER, role_can
from tenants.models import ApiKey, Tenant
from tenants.scopes import namespace_of, scope_allowed, scope_q


@dataclass(frozen=True)
class Caller:
    """A tenant, the scope prefixes it is limited to (empty: every scope), what it may do (an API
    key's permissions, or an operator role's console capabilities), who it is for the audit log,
    whether it is a superuser, and the key or user it came from. DRF's ``request.user`` for the API."""

    tenant: Tenant
    scope_prefixes: tuple[str, ...] = ()
    permissions: frozenset[str] = frozenset()
    actor_label: str = "system"
    is_superuser: bool = False
    key: ApiKey | None = field(default=None, compare=False, repr=False)
    user: Any = field(default=None, compare=False, repr=False)
    # An operator's role in ``tenant`` and every tenant they may switch to (the console's
    # ``request.access`` is this same object).
    role: str = ""
    tenants: tuple[Tenant, ...] = field(default=(), compare=False, repr=False)
    # For DRF (IsAuthenticated reads request.user.is_authenticated).
    is_authenticated: bool = field(default=True, compare=False, repr=False)

    @property
    def scope_limited(self) -> bool:
        return bool(self.scope_prefixes)

    @property
    def namespace(self) -> str:
        """Its own id namespace (``tenants.scopes.namespace_of``; ``""`` when tenant-wide)."""
        return namespace_of(self.scope_prefixes)

    def allows_scope(self, scope: str) -> bool:
        return scope_allowed(self.scope_prefixes, scope)

    def scope_q(self, *, field: str = "scope") -> Q:
        return scope_q(self.scope_prefixes, field=field)

    def has(self, permission: str) -> bool:
        return permission in self.permissions

    def can(self, capability: str) -> bool:
        """An operator's console capability (``tenants.capabilities.CAPABILITIES``)."""
        return self.has(capability)


class SuperuserRequired(PermissionDenied):
    """A read across every tenant asked by a caller who is not a superuser."""


def require_superuser(caller: Caller) -> None:
    if not caller.is_superuser:
        raise SuperuserRequired("reads across every tenant are for superusers only")


class CapabilityMissing(PermissionDenied):
    """Administration of a tenant (settings, the operating point, API keys, the audit log) asked
    by a caller without the console capability for it (403)."""


def require_capability(caller: Caller, capability: str) -> None:
    """Administration of the whole tenant, named by a console capability
    (``tenants.capabilities.CAPABILITIES``): an operator needs it in their role (as the console gate
    asks); an API key never has one (its permissions are ``KeyPermission``s, none of which
    administers the tenant, and a scope-limited caller may not act for the whole tenant); the
    tenant's own work (``tenant_caller``: jobs, beat tasks, the CLI) may. CapabilityMissing else."""
    if caller.key is not None or caller.scope_limited:
        raise CapabilityMissing(f"administering the tenant ({capability}) is for the console's operators, "
                                "not API keys")
    if caller.role and not caller.can(capability):
        raise CapabilityMissing(f"the {caller.role} role may not do this ({capability})")


def caller_for_key(key: ApiKey) -> Caller:
    """The caller behind an API key: its tenant, scope prefixes and permissions."""
    return Caller(tenant=key.tenant, scope_prefixes=tuple(key.scope_prefixes),
                  permissions=frozenset(key.permissions), actor_label=f"apikey:tc_{key.prefix}", key=key)


def caller_for_operator(*, user: Any, tenant: Tenant, role: str, tenants: tuple[Tenant, ...] = ()) -> Caller:
    """A console operator in one tenant: every scope of it; permissions are the role's
    capabilities (``tenants.capabilities.CAPABILITIES``), all of them for a superuser; ``tenants``
    those they may switch to."""
    return Caller(tenant=tenant, permissions=frozenset(c for c in CAPABILITIES if role_can(role, c)),
                  actor_label=f"operator:{user.email or user.username}", is_superuser=role == SUPERUSER, user=user,
                  role=role, tenants=tuple(tenants))


def tenant_caller(tenant: Tenant, *, actor_label: str = "system", user: Any = None) -> Caller:
    """The whole tenant, for work that really acts for it (retention, fan-outs, jobs, the
    demo), not for a key: every scope, no key permission to check. ``user``: the operator a
    job runs for, for the audit log."""
    return Caller(tenant=tenant, actor_label=actor_label, user=user)
