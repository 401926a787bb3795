"""Refuse API bodies over the limit with 413 before anything reads them; refuse path and query
values that cannot be stored (NUL, lone surrogates, too long) with 400 before any view runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from api.inputs import MAX_PATH_VALUE_CHARS, MAX_QUERY_VALUE_CHARS, InputRefused, check_value, string_problem
from cachecore.engine.limits import MAX_BODY_BYTES


class ApiBodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > MAX_BODY_BYTES:
                return JsonResponse(
                    {"error": "payload_too_large", "detail": f"request body exceeds {MAX_BODY_BYTES} bytes",
                     "fields": {}},
                    status=413,
                )
        return self.get_response(request)


_CODES = {400: "bad_request", 403: "permission_denied", 404: "not_found", 405: "method_not_allowed",
          500: "server_error"}


class ApiInputMiddleware:
    """Path and query values of API routes are checked here, once, for every view (and, as a
    plain 400, NUL and lone surrogates on every other page)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (request.path.startswith("/api/") and response.status_code >= 400
                and response.get("Content-Type", "").startswith("text/html")):
            # Django's own pages (no route matched: an id holding a newline, say) in the error shape.
            code = _CODES.get(response.status_code, "error")
            return JsonResponse({"error": code, "detail": code.replace("_", " "), "fields": {}},
                                status=response.status_code)
        return response

    def process_view(self, request: HttpRequest, view: Callable[..., HttpResponse], args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> HttpResponse | None:
        if not request.path.startswith("/api/"):
            return _page_input_refused(request, kwargs)
        try:
            for name, value in kwargs.items():
                if isinstance(value, str):
                    check_value(name, value, max_chars=MAX_PATH_VALUE_CHARS)
            for name, values in request.GET.lists():
                check_value("query parameter", name, max_chars=MAX_QUERY_VALUE_CHARS)
                for value in values:
                    check_value(name, value, max_chars=MAX_QUERY_VALUE_CHARS)
        except InputRefused as exc:
            return JsonResponse({"error": "invalid", "detail": str(exc), "fields": exc.fields}, status=400)
        return None


def _page_input_refused(request: HttpRequest, kwargs: dict[str, Any]) -> HttpResponse | None:
    """The console's pages: a NUL or lone surrogate in the query or the path is a plain 400 (forms
    refuse them in bodies already), never a database error."""
    values = [v for v in kwargs.values() if isinstance(v, str)]
    for name, items in request.GET.lists():
        values.append(name)
        values.extend(items)
    for value in values:
        problem = string_problem(value)
        if problem:
            return HttpResponseBadRequest(f"Bad request: a query or path value {problem}.", content_type="text/plain")
    return None
