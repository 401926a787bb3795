"""Domain errors raised by services; the API maps each to one error shape and status."""

from __future__ import annotations


class DomainError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields or {}
        self.extra = extra


class InvalidInput(DomainError):
    status_code = 400
    code = "invalid"


class UnknownSections(DomainError):
    """Cited ids the tenant has never upserted."""

    status_code = 422
    code = "unknown_sections"

    def __init__(self, ids: list[str]) -> None:
        super().__init__(
            f"cited section ids unknown to this tenant: {', '.join(ids)}",
            fields={"cited": [f"unknown section id: {i}" for i in ids]},
            unknown_ids=ids,
        )


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class ScopeForbidden(DomainError):
    status_code = 403
    code = "scope_forbidden"


class PermissionMissing(DomainError):
    """The API key lacks the permission an endpoint needs (``permission`` names it)."""

    status_code = 403
    code = "permission_denied"

    def __init__(self, permission: str) -> None:
        permission = str(permission)
        super().__init__(f"this API key lacks the '{permission}' permission", permission=permission)


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class Unavailable(DomainError):
    """A dependency the request needs (the tenant's resolver) did not answer."""

    status_code = 503
    code = "unavailable"


class ExportQuotaExceeded(DomainError):
    """The tenant's export files take their whole byte quota (TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT)."""

    status_code = 409
    code = "export_quota_exceeded"


class ExportNotReady(DomainError):
    """The export's file is not written yet."""

    status_code = 409
    code = "not_ready"


class ExportGone(DomainError):
    """The export's file was deleted by retention."""

    status_code = 410
    code = "gone"


class TooManyActive(DomainError):
    """Too much of the tenant's background work of one kind is queued or running (the export
    cap): try again after ``retry_after`` seconds (the API sends it as Retry-After)."""

    status_code = 429
    code = "throttled"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
