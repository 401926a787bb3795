"""The operations endpoints (URLs in config/urls.py): ``GET /healthz``, liveness with the database
state for load balancers and `make run` (the database down, or without pgvector → 503 with
Retry-After, in the API's error shape plus the state), and ``GET /metrics`` (ops.metrics)."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from api.middleware import DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE_DETAIL
from ops.metrics import metrics_allowed, render


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
    except Exception as exc:  # any database failure is reported, not raised
        response = JsonResponse({"error": "database_unavailable", "detail": DATABASE_UNAVAILABLE_DETAIL, "fields": {},
                                 "status": "error", "database": {"status": "error", "error": exc.__class__.__name__}},
                                status=503)
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
        return response
    if row is None:
        return JsonResponse({"error": "pgvector_missing", "detail": "the pgvector extension is not installed",
                             "fields": {}, "status": "error", "database": {"status": "ok", "pgvector": None}},
                            status=503)
    return JsonResponse({"status": "ok", "database": {"status": "ok", "pgvector": row[0]}})


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus text format, for the configured token (or loopback in development mode)."""
    if metrics_allowed(request):
        return HttpResponse(render(), content_type=CONTENT_TYPE_LATEST)
    if settings.TRAILCACHE_METRICS_TOKEN:
        response = HttpResponse("metrics: a bearer token is required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = "Bearer"
        return response
    detail = ("metrics: only loopback addresses may scrape without TRAILCACHE_METRICS_TOKEN (development mode)\n"
              if settings.TRAILCACHE_DEV else
              "metrics: set TRAILCACHE_METRICS_TOKEN to scrape in production mode\n")
    return HttpResponse(detail, status=403, content_type="text/plain")
