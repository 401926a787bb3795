"""Liveness with the database state, for load balancers and `make run`. The database down (or
without pgvector) → 503 with Retry-After, in the API's error shape plus the state."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from api.middleware import DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE_DETAIL


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
