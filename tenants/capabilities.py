"""What each console role may do: capability → roles that hold it (superusers hold every one).
The console gate (``tenants.selectors.operator_access``), an operator's ``Caller``
(``tenants.caller``) and the services' ``require_capability`` read this one table."""

from __future__ import annotations

from tenants.models import Role

SUPERUSER = "superuser"

# capability → roles that hold it. A capability missing here is held by nobody but superusers.
CAPABILITIES: dict[str, frozenset[str]] = {
    "dashboard.view": frozenset({Role.SUPPORT, Role.ADMIN, Role.COMPLIANCE}),
    "trails.view": frozenset({Role.SUPPORT, Role.ADMIN, Role.COMPLIANCE}),
    "trails.manage": frozenset({Role.SUPPORT, Role.ADMIN}),
    "sections.view": frozenset({Role.SUPPORT, Role.ADMIN}),
    "settings.manage": frozenset({Role.ADMIN}),
    "apikeys.manage": frozenset({Role.ADMIN}),
    "audit.view": frozenset({Role.COMPLIANCE, Role.ADMIN}),
    "exports.manage": frozenset({Role.COMPLIANCE, Role.ADMIN}),
    "subjects.erase": frozenset({Role.COMPLIANCE}),
}


def role_can(role: str | None, capability: str) -> bool:
    if role == SUPERUSER:
        return True
    return role is not None and role in CAPABILITIES.get(capability, frozenset())
