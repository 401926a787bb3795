"""The tenant's resolver: an HTTPS endpoint that answers the current hashes (and optionally the
text) of section ids the tenant does not mirror here.

Request: ``POST <resolver_url>`` with ``{"ids": [...]}``, signed:
``X-Trailcache-Timestamp: <unix seconds>`` and
``X-Trailcache-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>``.
Answer: ``{"sections": [{"id", "hash", "text"?}]}``; an id left out no longer exists.

A call is an outbound request to an address a tenant chose, so it is fenced
(``tenants.netpolicy``): https only (http to loopback only in development mode); the host is
resolved once, every address it resolves to must be public, and the connection goes to the
address that was checked (no second lookup); no redirects (any status but 200 is a failure);
one deadline for the whole call: the name lookup (in a small bounded pool of threads, waited on
for the time left), connect, the TLS handshake, and every send and read (the socket is wrapped so
each one's timeout is the time left, so a server trickling one byte at a time, or answering
``100 Continue`` forever, fails at the deadline); caps on the header block's size (every status
line and header, ``100 Continue`` blocks included) and header count, and on the answer's size.
Failures reveal nothing about the target to the caller (details go to the log).
Batched (one call per recall), and a per-tenant circuit breaker shared by every process
through Redis (``SharedBreaker``): after ``FAILURES_TO_OPEN`` failures in a row, calls are
skipped for ``OPEN_SECONDS``.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import io
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import redis
from django.conf import settings

from cachecore.engine.text import content_hash
from tenants.models import Tenant
from tenants.netpolicy import address_problem, url_problem

FAILURES_TO_OPEN = 3
OPEN_SECONDS = 30.0
MAX_IDS_PER_CALL = 1000
_READ_CHUNK = 64 * 1024
MAX_HEADER_BYTES = 16 * 1024  # status lines and headers, 100 Continue blocks included
MAX_HEADERS = 50
_BUFFER = 8 * 1024  # the response reader's buffer: what it may read past the headers

# ``socket.getaddrinfo`` blocks for as long as the system's DNS takes; it runs in this pool and is
# waited on for the time left. A lookup that never ends holds one of these threads, not a web
# worker; when all are held, further lookups wait in the queue and fail at their own deadline.
_LOOKUPS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="resolver-dns")
Lookup = Callable[..., list]

log = logging.getLogger(__name__)


class ResolverUnavailable(Exception):
    pass


class _CallFailed(Exception):
    """Why a call failed, for the log only."""


@dataclass(frozen=True)
class Resolved:
    hash: str
    # Only text that hashes to ``hash``; anything else is dropped, never served.
    text: str | None


def sign(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class SharedBreaker:
    """A circuit breaker per key, shared by every process of this installation through Redis
    (the broker, when it is Redis: keys under the installation's namespace, with expiries so
    nothing is left behind). When Redis does not answer, each process keeps its own state in
    memory (the behaviour before), and asks Redis again after a few seconds."""

    _REDIS_RETRY_SECONDS = 5.0

    def __init__(self, name: str, *, failures_to_open: int, open_seconds: float) -> None:
        self.name = name
        self.failures_to_open = failures_to_open
        self.open_seconds = open_seconds
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._open_until: dict[str, float] = {}
        self._client: Any = None
        self._client_url = ""
        self._redis_down_until = 0.0

    # Redis ------------------------------------------------------------------------------
    def _redis(self) -> Any:
        url = getattr(settings, "CELERY_BROKER_URL", "")
        if not url.startswith(("redis://", "rediss://")) or time.monotonic() < self._redis_down_until:
            return None
        if self._client is None or self._client_url != url:
            self._client = redis.Redis.from_url(url, socket_connect_timeout=0.2, socket_timeout=0.2)
            self._client_url = url
        return self._client

    def _redis_failed(self) -> None:
        self._redis_down_until = time.monotonic() + self._REDIS_RETRY_SECONDS

    def _keys(self, key: str) -> tuple[str, str]:
        base = f"{settings.TRAILCACHE_INSTANCE}:breaker:{self.name}:{settings.DATABASES['default']['NAME']}:{key}"
        return f"{base}:failures", f"{base}:open"

    # API --------------------------------------------------------------------------------
    def allow(self, key: str) -> bool:
        client = self._redis()
        if client is not None:
            try:
                return not client.exists(self._keys(key)[1])
            except (redis.RedisError, OSError):  # Redis trouble: this process's memory instead
                self._redis_failed()
        with self._lock:
            return time.monotonic() >= self._open_until.get(key, 0.0)

    def success(self, key: str) -> None:
        client = self._redis()
        if client is not None:
            try:
                client.delete(*self._keys(key))
            except (redis.RedisError, OSError):
                self._redis_failed()
        with self._lock:
            self._failures.pop(key, None)
            self._open_until.pop(key, None)

    def failure(self, key: str) -> None:
        client = self._redis()
        if client is not None:
            failures, opened = self._keys(key)
            try:
                pipe = client.pipeline()
                pipe.incr(failures)
                pipe.expire(failures, int(self.open_seconds * 4))
                count = pipe.execute()[0]
                if count >= self.failures_to_open:
                    client.set(opened, "1", px=int(self.open_seconds * 1000))
                    client.delete(failures)
                return
            except (redis.RedisError, OSError):
                self._redis_failed()
        with self._lock:
            count = self._failures.get(key, 0) + 1
            self._failures[key] = count
            if count >= self.failures_to_open:
                self._open_until[key] = time.monotonic() + self.open_seconds
                self._failures.pop(key, None)

    def reset(self) -> None:
        """Forget every key of this breaker (tests)."""
        client = self._redis()
        if client is not None:
            pattern = f"{settings.TRAILCACHE_INSTANCE}:breaker:{self.name}:{settings.DATABASES['default']['NAME']}:*"
            try:
                for found in client.scan_iter(match=pattern, count=500):
                    client.delete(found)
            except (redis.RedisError, OSError):
                self._redis_failed()
        with self._lock:
            self._failures.clear()
            self._open_until.clear()


breaker = SharedBreaker("resolver", failures_to_open=FAILURES_TO_OPEN, open_seconds=OPEN_SECONDS)


def resolve(*, tenant: Tenant, section_ids: Sequence[str], lookup: Lookup | None = None) -> dict[str, Resolved]:
    """Current hashes (and text) of ``section_ids`` from the tenant's resolver. Ids it does not
    return are gone. Raises ResolverUnavailable on timeout, error, bad answer or open breaker.
    ``lookup`` resolves the host (``socket.getaddrinfo`` unless given)."""
    if not tenant.resolver_url:
        raise ResolverUnavailable("no resolver configured")
    key = str(tenant.pk)
    if not breaker.allow(key):
        raise ResolverUnavailable("circuit open after repeated failures")
    ids = list(dict.fromkeys(section_ids))[:MAX_IDS_PER_CALL]
    body = json.dumps({"ids": ids}).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Trailcache-Timestamp": timestamp,
        "X-Trailcache-Signature": sign(tenant.resolver_secret, timestamp, body),
        "User-Agent": "trailcache-resolver/1",
    }
    deadline = time.monotonic() + tenant.resolver_timeout_ms / 1000
    try:
        raw = _post(tenant.resolver_url, body, headers, deadline=deadline,
                    max_bytes=settings.TRAILCACHE_RESOLVER_MAX_BODY_BYTES,
                    lookup=lookup or socket.getaddrinfo)
        answered = _parse(json.loads(raw), wanted=set(ids))
    except (_CallFailed, OSError, http.client.HTTPException, ssl.SSLError, ValueError, UnicodeError,
            RecursionError) as exc:
        breaker.failure(key)
        log.warning("resolver call failed for tenant %s: %s: %s", tenant.pk, exc.__class__.__name__, exc)
        # The caller learns only that the resolver did not answer usefully: never where or why.
        raise ResolverUnavailable("the resolver did not give a usable answer") from None
    breaker.success(key)
    return answered


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _CallFailed("deadline passed")
    return left


class _DeadlineSocket:
    """A connected socket whose every send and read gets the time left before the deadline as
    its timeout, and which refuses to read more than ``limit`` bytes in all (http.client reads
    through ``makefile``: its ``SocketIO`` calls ``recv_into`` here)."""

    def __init__(self, sock: socket.socket, deadline: float, limit: int) -> None:
        self._sock = sock
        self._deadline = deadline
        self.limit = limit
        self.received = 0

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._sock.settimeout(_remaining(self._deadline))
        room = self.limit - self.received
        if room <= 0:
            raise _CallFailed("answer over the size cap")
        view = memoryview(buffer)
        wanted = min(nbytes or len(view), len(view), room)
        count = self._sock.recv_into(view[:wanted], wanted, flags)
        self.received += count
        return count

    def sendall(self, data: Any) -> None:
        self._sock.settimeout(_remaining(self._deadline))
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb", buffering: int = _BUFFER) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError("read only")
        return io.BufferedReader(socket.SocketIO(self, "rb"), buffering)  # type: ignore[arg-type]

    # http.client closes its connection as soon as the headers say it will close, while the body
    # is still to be read (a real socket stays open until its makefile is closed): the socket
    # itself is closed by ``_post`` once the answer is read.
    def _decref_socketios(self) -> None:
        pass

    def close(self) -> None:
        pass


def _lookup(lookup: Lookup, host: str, port: int, deadline: float) -> list:
    future = _LOOKUPS.submit(lookup, host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    try:
        return future.result(timeout=_remaining(deadline))
    except TimeoutError:
        future.cancel()
        raise _CallFailed("name lookup past the deadline") from None


def _checked_address(host: str, port: int, deadline: float, lookup: Lookup) -> tuple[int, tuple]:
    """Resolve ``host`` once; every address must be allowed. Returns the one to connect to."""
    infos = _lookup(lookup, host, port, deadline)
    _remaining(deadline)
    if not infos:
        raise _CallFailed("no address")
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        problem = address_problem(address)
        if problem:
            raise _CallFailed(f"{host} resolves to {problem}")
    family, _, _, _, sockaddr = infos[0]
    return family, sockaddr


def _post(url: str, body: bytes, headers: dict[str, str], *, deadline: float, max_bytes: int,
          lookup: Lookup) -> bytes:
    problem = url_problem(url)
    if problem:
        raise _CallFailed(problem)
    parts = urlsplit(url)
    host = parts.hostname or ""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    family, sockaddr = _checked_address(host, port, deadline, lookup)
    if not https and not ipaddress.ip_address(sockaddr[0].split("%", 1)[0]).is_loopback:
        raise _CallFailed("http only to loopback")
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(_remaining(deadline))
        sock.connect(sockaddr)
        if https:
            context = ssl.create_default_context()
            sock.settimeout(_remaining(deadline))
            sock = context.wrap_socket(sock, server_hostname=host)
        # Status lines and headers (100 Continue blocks included) may take MAX_HEADER_BYTES, plus
        # what the reader's buffer takes of the body; the body's own cap is set once they are in.
        wrapped = _DeadlineSocket(sock, deadline, limit=MAX_HEADER_BYTES + _BUFFER)
        connection = http.client.HTTPConnection(host, port, timeout=_remaining(deadline))
        connection.sock = wrapped  # the checked address, already connected: no second lookup
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path, body=body, headers=headers)
        try:
            response = connection.getresponse()
        except _CallFailed as exc:
            raise _CallFailed("header block over the size cap") if wrapped.received >= wrapped.limit else exc
        if len(response.headers) > MAX_HEADERS:
            raise _CallFailed("too many headers")
        wrapped.limit = wrapped.received + max_bytes
        if response.status != 200:  # redirects included: never followed
            raise _CallFailed(f"status {response.status}")
        declared = response.getheader("Content-Length")
        if declared and declared.isdigit() and int(declared) > max_bytes:
            raise _CallFailed("answer over the size cap")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = response.read1(_READ_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise _CallFailed("answer over the size cap")
            chunks.append(chunk)
        _remaining(deadline)
        return b"".join(chunks)
    finally:
        sock.close()


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
