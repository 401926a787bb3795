"""What changed in a tenant's settings, and how the audit log says it: one definition for the
settings page, the API and the calibration (pure: dictionaries in, no database).

A secret is audited as changed, never with its values: the audit log is read by more people
(and kept longer) than the settings themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

SECRET_SETTINGS = frozenset({"resolver_secret"})
SECRET_CHANGED = "(changed)"


def settings_snapshot(tenant: Any, fields: Iterable[str]) -> dict[str, Any]:
    """The named settings' values on a tenant (or any object), in the given order."""
    return {field: getattr(tenant, field) for field in fields}


def settings_changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The settings whose value differs, in ``before``'s order."""
    return [field for field in before if field in after and before[field] != after[field]]


def settings_audit_details(before: Mapping[str, Any], after: Mapping[str, Any],
                           *, secret: frozenset[str] = SECRET_SETTINGS) -> dict[str, Any]:
    """The audit entry's details: ``{field: {"old", "new"}}`` for each changed setting,
    ``"(changed)"`` for a secret one."""
    return {
        field: SECRET_CHANGED if field in secret else {"old": before[field], "new": after[field]}
        for field in settings_changed(before, after)
    }
