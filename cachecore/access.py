"""The caller's restrictions, as the services apply them (issue 21: one restriction point below
every interface). Every service that acts for a ``Caller`` calls these before it writes; the API,
the console, tasks and commands reach data only through those services, so each gets every rule.
Each raises a ``cachecore.errors`` exception, which the API and the console answer by one table."""

from __future__ import annotations

from cachecore.errors import PermissionMissing, ScopeForbidden
from tenants.caller import Caller


def require_permission(caller: Caller, permission: str) -> None:
    """An API key's caller must hold ``permission`` (PermissionMissing, 403). Operators are held
    to their role's capabilities by the console gate, and the tenant's own work to nothing."""
    if caller.key is not None and not caller.has(permission):
        raise PermissionMissing(permission)


def require_scope(caller: Caller, scope: str) -> None:
    """The caller may use ``scope`` (its prefixes admit it), else ScopeForbidden (403)."""
    if not caller.allows_scope(scope):
        raise ScopeForbidden(f"this API key may not use scope {scope!r}",
                             fields={"scope": ["outside this API key's scope prefixes"]})


def require_unrestricted(caller: Caller, what: str) -> None:
    """Work that spans the whole tenant (exports, erasure, jobs) is for a caller without scope
    limits: ScopeForbidden (403) otherwise."""
    if caller.scope_limited:
        raise ScopeForbidden(f"{what} needs an API key without scope limits")
