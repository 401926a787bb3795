"""Liveness with the database state, for load balancers and `make run`."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
        database = {"status": "ok", "pgvector": row[0] if row else None}
        ok = row is not None
    except Exception as exc:  # any database failure is reported, not raised
        database = {"status": "error", "error": exc.__class__.__name__}
        ok = False
    return JsonResponse({"status": "ok" if ok else "error", "database": database}, status=200 if ok else 503)
