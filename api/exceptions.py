"""One error shape for the whole API: ``{"error": code, "detail": message, "fields": {...}}``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from api.middleware import DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE_DETAIL, is_database_unavailable
from cachecore.errors import DomainError


def _flatten(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {k: _flatten(v) for k, v in detail.items()}
    if isinstance(detail, list):
        return [_flatten(v) for v in detail]
    return str(detail)


def _summary(fields: dict[str, Any]) -> str:
    parts = []
    for name, errors in fields.items():
        first = errors[0] if isinstance(errors, list) and errors else errors
        if isinstance(first, dict):
            first = "invalid items"
        parts.append(f"{name}: {first}")
    return "; ".join(parts) or "invalid input"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if is_database_unavailable(exc):
        # The database is down or restarting (api.middleware answers the same outside DRF).
        return Response({"error": "database_unavailable", "detail": DATABASE_UNAVAILABLE_DETAIL, "fields": {}},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)})
    if isinstance(exc, DomainError):
        body = {"error": exc.code, "detail": exc.message, "fields": exc.fields, **exc.extra}
        retry_after = getattr(exc, "retry_after", None)
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        return Response(body, status=exc.status_code, headers=headers)
    if isinstance(exc, RequestDataTooBig):
        return Response({"error": "payload_too_large", "detail": str(exc), "fields": {}}, status=413)
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        if not isinstance(fields, dict):
            fields = {"non_field_errors": fields if isinstance(fields, list) else [fields]}
        return Response({"error": "invalid", "detail": _summary(fields), "fields": fields},
                        status=status.HTTP_400_BAD_REQUEST)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = getattr(exc, "default_code", "error")
    if isinstance(exc, Http404):
        code = "not_found"
    detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
    response.data = {"error": code, "detail": str(detail), "fields": {}}
    return response
