"""Refuse API bodies over the limit with 413 before anything reads them; refuse path and query
values that cannot be stored (NUL, lone surrogates, too long) with 400 before any view runs;
answer 503 with Retry-After, never a 500 page, while the database is unreachable; answer 429 to
a tenant over its budget of requests in progress."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import redis
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from api.inputs import MAX_PATH_VALUE_CHARS, MAX_QUERY_VALUE_CHARS, InputRefused, check_value, string_problem
from cachecore.engine.limits import MAX_BODY_BYTES
from tenants.ratelimit import BrokerRedis

log = logging.getLogger(__name__)


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


# While PostgreSQL is unreachable (restarting, failing over, refusing connections) every request
# answers 503 with Retry-After: the API, /healthz and anything else outside the console in the error
# shape, the console with a short plain page. The next request connects again (CONN_HEALTH_CHECKS).
DATABASE_RETRY_AFTER_SECONDS = 5
DATABASE_UNAVAILABLE_DETAIL = "the database is unavailable; retry after a few seconds"
_DATABASE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, psycopg.OperationalError,
                                                      psycopg.InterfaceError)


def is_database_unavailable(exc: BaseException | None) -> bool:
    """A connection that could not be opened or broke mid-request (Django's or psycopg's
    ``OperationalError``/``InterfaceError``): a transient fault of the database, not of the request."""
    return isinstance(exc, _DATABASE_ERRORS)


def database_unavailable_response(request: HttpRequest) -> HttpResponse:
    """The 503 for a request that met the database down."""
    if request.path.startswith("/console/"):
        response: HttpResponse = HttpResponse(
            "Service unavailable: the database cannot be reached. Try again in a few seconds.\n",
            status=503, content_type="text/plain; charset=utf-8")
    else:
        response = JsonResponse({"error": "database_unavailable", "detail": DATABASE_UNAVAILABLE_DETAIL,
                                 "fields": {}}, status=503)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Outermost: a database fault in a view becomes the 503 above (``process_exception``); one
    raised by another middleware (Django has already turned it into a 500 by then) is recognised
    through ``got_request_exception`` (``mark_database_fault``) and replaced on the way out."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 500 and getattr(request, "_database_fault", False):
            return database_unavailable_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_database_unavailable(exception):
            log.warning("database unavailable on %s %s: %s", request.method, request.path,
                        str(exception).strip().splitlines()[0] if str(exception).strip() else type(exception).__name__)
            return database_unavailable_response(request)
        return None


def mark_database_fault(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """``got_request_exception`` receiver (connected in ``ApiConfig.ready``): Django sends it
    while handling the exception, so ``sys.exc_info()`` is that exception."""
    if request is not None and is_database_unavailable(sys.exc_info()[1]):
        request._database_fault = True  # type: ignore[attr-defined]


class _Slots(BrokerRedis):
    """Requests in progress per tenant, shared by every web process through Redis (the broker,
    when it is Redis): a sorted set of slot tokens per tenant, scored by when they were taken,
    so a slot a crashed process never gave back drops out after ``STALE_SECONDS`` (longer than
    gunicorn lets any request run). When Redis does not answer, each process counts its own
    (the budget then holds per process) and asks Redis again after a few seconds.

    Redis rather than a counter in the process: the default deployment runs one sync worker
    per core, each serving one request at a time, so only a count across processes can see
    that one tenant holds every worker."""

    STALE_SECONDS = 120
    _RETRY_SECONDS = 5.0

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._memory: dict[str, int] = {}

    def _key(self, tenant_id: str) -> str:
        return f"{settings.TRAILCACHE_INSTANCE}:slots:{settings.DATABASES['default']['NAME']}:{tenant_id}"

    def take(self, tenant_id: str, limit: int) -> tuple[bool, str | None]:
        """Whether the tenant may start one more request; the token to give back (None: memory)."""
        client = self._redis()
        if client is not None:
            token, key, now = uuid.uuid4().hex, self._key(tenant_id), time.time()
            try:
                pipe = client.pipeline()
                pipe.zremrangebyscore(key, "-inf", now - self.STALE_SECONDS)
                pipe.zadd(key, {token: now})
                pipe.zcard(key)
                pipe.expire(key, self.STALE_SECONDS)
                held = int(pipe.execute()[2])
                if held > limit:
                    client.zrem(key, token)
                    return False, None
                return True, token
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + self._RETRY_SECONDS
        with self._lock:
            held = self._memory.get(tenant_id, 0)
            if held >= limit:
                return False, None
            self._memory[tenant_id] = held + 1
            return True, None

    def give_back(self, tenant_id: str, token: str | None) -> None:
        if token is not None:
            client = self._redis()
            if client is not None:
                with contextlib.suppress(redis.RedisError, OSError):
                    client.zrem(self._key(tenant_id), token)
            return
        with self._lock:
            held = self._memory.get(tenant_id, 0) - 1
            if held > 0:
                self._memory[tenant_id] = held
            else:
                self._memory.pop(tenant_id, None)


slots = _Slots()


class TenantConcurrencyMiddleware:
    """At most ``TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS`` API requests of one tenant in
    progress at once (0: no budget), so that one tenant (a slow resolver, a burst of large
    records) cannot take every web worker: beyond it, 429 in the error shape with Retry-After.
    The tenant is the one of a valid API key (checked as the API's authentication checks it);
    a request without one is left to the authentication to refuse."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.TRAILCACHE_TENANT_MAX_CONCURRENT_REQUESTS
        if limit <= 0 or not request.path.startswith("/api/"):
            return self.get_response(request)
        keyword, _, raw = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if keyword.lower() != "bearer" or not raw.strip():
            return self.get_response(request)
        from api.authentication import key_for_bearer

        found = key_for_bearer(raw.strip())
        if found is None:
            return self.get_response(request)
        tenant_id = str(found[1].tenant_id)
        allowed, token = slots.take(tenant_id, limit)
        if not allowed:
            response = JsonResponse({
                "error": "too_many_concurrent_requests",
                "detail": f"this tenant already has {limit} requests in progress; retry when one has finished",
                "fields": {},
            }, status=429)
            response["Retry-After"] = "1"
            return response
        try:
            return self.get_response(request)
        finally:
            slots.give_back(tenant_id, token)
