"""Refuse API bodies over the limit with 413 before anything reads them."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

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
