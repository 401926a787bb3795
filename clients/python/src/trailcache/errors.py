"""One exception class per error status, each carrying the API's error shape."""

from __future__ import annotations

from datetime import UTC
from typing import Any


class TrailcacheError(Exception):
    """Base of every error this client raises."""


class TransportError(TrailcacheError):
    """The service could not be reached or did not answer in time (after the retries)."""


class ResponseError(TrailcacheError):
    """The service answered something that is not what the API promises (not JSON, wrong shape)."""


class APIError(TrailcacheError):
    """An error status with ``{"error", "detail", "fields"}``; ``body`` holds every field sent."""

    status_code: int = 0

    def __init__(self, status_code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.status_code = status_code
        self.body = body
        self.headers = headers or {}
        self.error: str = str(body.get("error", "error"))
        self.detail: str = str(body.get("detail", ""))
        self.fields: dict[str, Any] = body.get("fields") or {}
        super().__init__(f"{status_code} {self.error}: {self.detail}" if self.detail else f"{status_code} {self.error}")


class BadRequestError(APIError):
    """400: invalid input, field by field in ``fields``."""


class AuthenticationError(APIError):
    """401: missing, invalid or revoked API key."""


class PermissionDeniedError(APIError):
    """403: a scope or permission outside the key's limits."""


class NotFoundError(APIError):
    """404: nothing of this tenant (within the key's scopes) at this address."""


class MethodNotAllowedError(APIError):
    """405."""


class ConflictError(APIError):
    """409: e.g. an export's download before the export is done."""


class GoneError(APIError):
    """410: e.g. an export file already deleted."""


class PayloadTooLargeError(APIError):
    """413: a body over 1 MiB."""


class UnknownSectionsError(APIError):
    """422: cited ids the tenant never upserted; ``unknown_ids`` lists them."""

    @property
    def unknown_ids(self) -> list[str]:
        return list(self.body.get("unknown_ids") or [])


class RateLimitError(APIError):
    """429: too many requests; ``retry_after`` seconds to wait (None when not sent)."""

    @property
    def retry_after(self) -> float | None:
        return parse_retry_after(self.headers.get("retry-after"))


class ServerError(APIError):
    """5xx."""


class ServiceUnavailableError(ServerError):
    """503: e.g. the tenant's resolver is down at record time."""


ERRORS_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    405: MethodNotAllowedError, 409: ConflictError, 410: GoneError, 413: PayloadTooLargeError,
    422: UnknownSectionsError, 429: RateLimitError, 503: ServiceUnavailableError,
}


def error_for(status_code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> APIError:
    cls = ERRORS_BY_STATUS.get(status_code) or (ServerError if status_code >= 500 else APIError)
    return cls(status_code, body, headers)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds (a number or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from datetime import datetime
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
