"""Fixed-window counters shared by every process of this installation through Redis (the broker,
when it is Redis; keys under the installation's namespace, expiring with their window). When
Redis does not answer, each process counts in its own memory (limits then hold per process)
and asks Redis again after a few seconds: a limit never turns into an outage."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings

_REDIS_RETRY_SECONDS = 5.0


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int
    retry_after: int  # seconds until the window ends (0 when allowed)


class BrokerRedis:
    """Counters kept in the broker's Redis when the broker is one (shared by every process), with
    a short-timeout client made once per broker URL; a subclass sets ``_down_until`` after a
    failure, and ``_redis()`` answers None until then (the subclass counts in memory meanwhile)."""

    def __init__(self) -> None:
        self._client: Any = None
        self._client_url = ""
        self._down_until = 0.0

    def _redis(self) -> Any:
        url = getattr(settings, "CELERY_BROKER_URL", "")
        if not url.startswith(("redis://", "rediss://")) or time.monotonic() < self._down_until:
            return None
        if self._client is None or self._client_url != url:
            self._client = redis.Redis.from_url(url, socket_connect_timeout=0.2, socket_timeout=0.2)
            self._client_url = url
        return self._client


class _Counters(BrokerRedis):
    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._memory: dict[str, tuple[float, int]] = {}

    def _key(self, name: str, ident: str, window: int) -> str:
        db = settings.DATABASES["default"]["NAME"]
        return f"{settings.TRAILCACHE_INSTANCE}:rl:{db}:{name}:{ident}:{window}"

    def hit(self, name: str, ident: str, *, limit: int, period: int, cost: int = 1) -> Verdict:
        """Count ``cost`` against ``ident``'s window of ``period`` seconds; allowed while the
        count stays within ``limit``."""
        now = time.time()
        window = int(now // period)
        retry_after = max(1, int((window + 1) * period - now) + 1)
        key = self._key(name, ident, window)
        count = None
        client = self._redis()
        if client is not None:
            try:
                pipe = client.pipeline()
                pipe.incrby(key, cost)
                pipe.expire(key, period + 1)
                count = int(pipe.execute()[0])
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + _REDIS_RETRY_SECONDS
        if count is None:
            with self._lock:
                started, seen = self._memory.get(key, (now, 0))
                count = seen + cost
                self._memory[key] = (started, count)
                if len(self._memory) > 10_000:  # old windows go
                    for old in [k for k, (t, _) in self._memory.items() if now - t > 3600]:
                        del self._memory[old]
        allowed = count <= limit
        return Verdict(allowed, count, 0 if allowed else retry_after)

    # Counters in order, stopping at the first one over its limit (as hit() one after another
    # would), in one round trip.
    _HIT_ALL = """
    local out = {}
    for i, key in ipairs(KEYS) do
        local n = redis.call('INCRBY', key, ARGV[1])
        redis.call('EXPIRE', key, ARGV[2])
        out[i] = n
        if n > tonumber(ARGV[2 + i]) then break end
    end
    return out
    """

    def hit_all(self, counters: list[tuple[str, str, int]], *, period: int, cost: int = 1) -> Verdict:
        """Count ``cost`` against each (name, ident, limit) in order, in one Redis round trip (a
        script), stopping at the first over its limit, which is then the verdict: the same
        counts and answer as ``hit`` called for each in turn."""
        if not counters:
            return Verdict(True, 0, 0)
        now = time.time()
        window = int(now // period)
        retry_after = max(1, int((window + 1) * period - now) + 1)
        client = self._redis()
        if client is not None:
            try:
                if getattr(self, "_script_client", None) is not client:
                    self._script, self._script_client = client.register_script(self._HIT_ALL), client
                counts = self._script(keys=[self._key(n, i, window) for n, i, _ in counters],
                                      args=[cost, period + 1, *[limit for _, _, limit in counters]])
                last = int(counts[-1])
                allowed = last <= counters[len(counts) - 1][2]
                return Verdict(allowed, last, 0 if allowed else retry_after)
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + _REDIS_RETRY_SECONDS
        verdict = Verdict(True, 0, 0)
        for name, ident, limit in counters:
            verdict = self.hit(name, ident, limit=limit, period=period, cost=cost)
            if not verdict.allowed:
                break
        return verdict

    def peek(self, name: str, ident: str, *, period: int) -> int:
        """The current window's count (0 when unknown)."""
        window = int(time.time() // period)
        key = self._key(name, ident, window)
        client = self._redis()
        if client is not None:
            try:
                return int(client.get(key) or 0)
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + _REDIS_RETRY_SECONDS
        with self._lock:
            return self._memory.get(key, (0.0, 0))[1]

    def clear(self, name: str, ident: str, *, period: int) -> None:
        window = int(time.time() // period)
        key = self._key(name, ident, window)
        client = self._redis()
        if client is not None:
            try:
                client.delete(key)
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + _REDIS_RETRY_SECONDS
        with self._lock:
            self._memory.pop(key, None)

    def hold(self, name: str, ident: str, *, seconds: int) -> None:
        """Mark ``ident`` for ``seconds`` (a lockout)."""
        key = self._key(name, ident, 0)
        client = self._redis()
        if client is not None:
            try:
                client.set(key, "1", ex=seconds)
                return
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + _REDIS_RETRY_SECONDS
        with self._lock:
            self._memory[key] = (time.time() + seconds, 1)

    def held(self, name: str, ident: str) -> bool:
        key = self._key(name, ident, 0)
        client = self._redis()
        if client is not None:
            try:
                return bool(client.exists(key))
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + _REDIS_RETRY_SECONDS
        with self._lock:
            until, _ = self._memory.get(key, (0.0, 0))
            return time.time() < until

    def reset(self) -> None:
        """Forget every counter of this database (tests)."""
        client = self._redis()
        if client is not None:
            pattern = f"{settings.TRAILCACHE_INSTANCE}:rl:{settings.DATABASES['default']['NAME']}:*"
            try:
                for found in client.scan_iter(match=pattern, count=500):
                    client.delete(found)
            except (redis.RedisError, OSError):
                self._down_until = time.monotonic() + _REDIS_RETRY_SECONDS
        with self._lock:
            self._memory.clear()


counters = _Counters()
