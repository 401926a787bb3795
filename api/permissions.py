"""Key permissions: each API view names the one it needs (``key_permission``: one permission, or
one per HTTP method); a key without it is answered 403 ``permission_denied`` in the error shape,
naming the permission. Checked before the body is read or anything is written."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from cachecore.errors import PermissionMissing
from tenants.caller import Caller


def required_permission(view: Any, method: str) -> str | None:
    needed = getattr(view, "key_permission", None)
    if isinstance(needed, dict):
        return needed.get(method.upper())
    return needed


class HasKeyPermission(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        caller = request.user
        if not isinstance(caller, Caller):
            return False  # IsAuthenticated (before this) has answered 401 already
        needed = required_permission(view, request.method)
        if needed and not caller.has(needed):
            raise PermissionMissing(needed)
        return True
