"""API key authentication: ``Authorization: Bearer tc_<prefix>_<secret>``.

A key that authenticated is remembered by this process for ``TRAILCACHE_API_KEY_CACHE_SECONDS``
(5 by default; 0 turns it off): the next requests with it skip the database. So a revoked or
changed key (its permissions, scopes, its tenant's settings) is seen by every process within that
many seconds, and at once by the process that saved it (``forget_saved_key``/``forget_saved_tenant``,
connected in api.apps). Only the sha256 of a raw key is kept,
never the key; unknown keys are never remembered (each one is a database read, as before), nor
keys read inside a transaction (which may still roll back).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.db import connection
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from tenants.caller import Caller, caller_for_key
from tenants.models import ApiKey
from tenants.services import api_key_authenticate

# Keys remembered per process (least recently used dropped).
KEY_CACHE_MAX = 1024


class _KeyCache:
    def __init__(self) -> None:
        self._entries: OrderedDict[bytes, tuple[Caller, ApiKey, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: bytes) -> tuple[Caller, ApiKey] | None:
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None:
                return None
            if entry[2] <= time.monotonic():
                del self._entries[digest]
                return None
            self._entries.move_to_end(digest)
            return entry[0], entry[1]

    def put(self, digest: bytes, caller: Caller, key: ApiKey, seconds: float) -> None:
        with self._lock:
            self._entries[digest] = (caller, key, time.monotonic() + seconds)
            self._entries.move_to_end(digest)
            while len(self._entries) > KEY_CACHE_MAX:
                self._entries.popitem(last=False)

    def forget_key(self, key_pk: object) -> None:
        with self._lock:
            for digest in [d for d, (_, k, _) in self._entries.items() if k.pk == key_pk]:
                del self._entries[digest]

    def forget_tenant(self, tenant_pk: object) -> None:
        with self._lock:
            for digest in [d for d, (_, k, _) in self._entries.items() if k.tenant_id == tenant_pk]:
                del self._entries[digest]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


key_cache = _KeyCache()


def forget_saved_key(sender: type, instance: ApiKey, **_: object) -> None:
    """Signal receiver (api.apps): a key saved or deleted here is not answered from the cache."""
    key_cache.forget_key(instance.pk)


def forget_saved_tenant(sender: type, instance: object, **_: object) -> None:
    """Signal receiver (api.apps): a tenant saved here (its settings) is read again."""
    key_cache.forget_tenant(getattr(instance, "pk", None))


def key_for_bearer(raw: str) -> tuple[Caller, ApiKey] | None:
    """The caller and key behind a raw API key (None: invalid or revoked), from this process's
    cache when it answered the same key within the seconds; the authentication and the tenant
    concurrency budget (api.middleware) both ask here, so a request reads its key once."""
    # Only a committed key is remembered: inside a transaction (a test's, ATOMIC_REQUESTS) the
    # row read may still be rolled back.
    seconds = 0 if connection.in_atomic_block else settings.TRAILCACHE_API_KEY_CACHE_SECONDS
    digest = hashlib.sha256(raw.encode("utf-8", "surrogateescape")).digest()
    if seconds > 0:
        cached = key_cache.get(digest)
        if cached is not None:
            return cached
    key = api_key_authenticate(raw)
    if key is None:
        return None
    caller = caller_for_key(key)
    if seconds > 0:
        key_cache.put(digest, caller, key, seconds)
    return caller, key


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Caller, ApiKey] | None:
        """``request.user`` is the key's ``Caller`` (tenant, scope prefixes, permissions);
        ``request.auth`` the key itself."""
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, raw = header.partition(" ")
        raw = raw.strip()
        if keyword.lower() != self.keyword.lower() or not raw:
            raise exceptions.AuthenticationFailed("Authorization must be 'Bearer <api key>'.")
        found = key_for_bearer(raw)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return found

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to a missing or bad key.
        return self.keyword
