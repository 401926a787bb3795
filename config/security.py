"""Content-Security-Policy on every response (Django 5.2 has none built in).

The console loads its scripts and styles from its own static files. What it still has inline,
and the policy allows narrowly: event-handler attributes (``onclick="…"``: ``script-src-attr``)
and ``style="…"`` attributes for bar widths and colours (``style-src-attr``) — never a
``<script>`` block — and the one ``<style>`` element htmx inserts for its request indicators,
allowed by its hash. Swagger UI (``/api/v1/docs/``) is served from this service's static files
(``drf-spectacular-sidecar``) with its bootstrap as a script file: its page gets the same
sources, only with inline styles (Swagger UI sets them) and ``data:`` images. Nothing may frame
the service."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

# sha256 of the <style> htmx 2 adds to <head> (".htmx-indicator{opacity:0;…}"): see
# adminui/static/adminui/htmx.min.js, function inserting `<style>` with the indicator classes.
HTMX_INDICATOR_STYLE_HASH = "'sha256-faU7yAF8NxuMTNEwVmBz+VcYeIoBQ2EMHW3WaVxCvnk='"

CONSOLE_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "script-src-attr 'unsafe-inline'",
    f"style-src 'self' {HTMX_INDICATOR_STYLE_HASH}",
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])

DOCS_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'none'",
])


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.TRAILCACHE_CSP and "Content-Security-Policy" not in response:
            docs = request.path.startswith("/api/v1/docs/")
            response["Content-Security-Policy"] = DOCS_POLICY if docs else CONSOLE_POLICY
        return response
