"""The tenant's resolver: an HTTPS endpoint that answers the current hashes (and optionally the
text) of section ids the tenant does not mirror here.

Request: ``POST <resolver_url>`` with ``{"ids": [...]}``, signed:
``X-Trailcache-Timestamp: <unix seconds>`` and
``X-Trailcache-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>``.
Answer: ``{"sections": [{"id", "hash", "text"?}]}``; an id left out no longer exists.
Batched (one call per recall), short timeout, and a per-tenant circuit breaker: after
``FAILURES_TO_OPEN`` failures in a row, calls are skipped for ``OPEN_SECONDS``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from cachecore.engine.text import content_hash
from tenants.models import Tenant

FAILURES_TO_OPEN = 3
OPEN_SECONDS = 30.0
MAX_IDS_PER_CALL = 1000


class ResolverUnavailable(Exception):
    pass


@dataclass(frozen=True)
class Resolved:
    hash: str
    # Only text that hashes to ``hash``; anything else is dropped, never served.
    text: str | None


def sign(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class _Breaker:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._open_until: dict[str, float] = {}

    def allow(self, key: str) -> bool:
        with self._lock:
            return time.monotonic() >= self._open_until.get(key, 0.0)

    def success(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)
            self._open_until.pop(key, None)

    def failure(self, key: str) -> None:
        with self._lock:
            count = self._failures.get(key, 0) + 1
            self._failures[key] = count
            if count >= FAILURES_TO_OPEN:
                self._open_until[key] = time.monotonic() + OPEN_SECONDS

    def reset(self) -> None:
        with self._lock:
            self._failures.clear()
            self._open_until.clear()


breaker = _Breaker()


def resolve(*, tenant: Tenant, section_ids: Sequence[str]) -> dict[str, Resolved]:
    """Current hashes (and text) of ``section_ids`` from the tenant's resolver. Ids it does not
    return are gone. Raises ResolverUnavailable on timeout, error, bad answer or open breaker."""
    if not tenant.resolver_url:
        raise ResolverUnavailable("no resolver configured")
    key = str(tenant.pk)
    if not breaker.allow(key):
        raise ResolverUnavailable("circuit open after repeated failures")
    ids = list(dict.fromkeys(section_ids))[:MAX_IDS_PER_CALL]
    body = json.dumps({"ids": ids}).encode()
    timestamp = str(int(time.time()))
    request = urllib.request.Request(
        tenant.resolver_url, data=body, method="POST",
        headers={
            "Content-Type": "application/json",
            "X-Trailcache-Timestamp": timestamp,
            "X-Trailcache-Signature": sign(tenant.resolver_secret, timestamp, body),
            "User-Agent": "trailcache-resolver/1",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=tenant.resolver_timeout_ms / 1000) as response:
            payload = json.loads(response.read(8 * 1024 * 1024))
        answered = _parse(payload, wanted=set(ids))
    except (OSError, urllib.error.URLError, ValueError, TimeoutError) as exc:
        breaker.failure(key)
        raise ResolverUnavailable(f"resolver failed: {exc.__class__.__name__}") from exc
    breaker.success(key)
    return answered


def _parse(payload: object, *, wanted: set[str]) -> dict[str, Resolved]:
    if not isinstance(payload, dict) or not isinstance(payload.get("sections"), list):
        raise ValueError("resolver answer must be {\"sections\": [...]}")
    out: dict[str, Resolved] = {}
    for item in payload["sections"]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not isinstance(item.get("hash"), str):
            raise ValueError("each section needs a string id and hash")
        if item["id"] not in wanted:
            continue
        digest = item["hash"].lower()
        text = item.get("text")
        verified = text if isinstance(text, str) and content_hash(text) == digest else None
        out[item["id"]] = Resolved(digest, verified)
    return out
