"""The recall log's write: stale marks, hit counters and the log entry, after the answer.

A recall decides on what it read, so its write (``WRITE_SQL``: one UPDATE of the trails it
served or found stale, one INSERT of its log entry) need not hold up the answer. Outside a
caller's transaction, ``log_recall`` hands the write to this process's writer thread and
returns; the thread runs the queued writes in batches, each batch in one transaction of its own
connection. Inside a caller's transaction the write is part of it, as before (a thread could
not see that transaction's rows, and a rollback must take the log entry with it).

What this changes, and what it does not:

- **Nothing is dropped.** The queue is bounded (``TRAILCACHE_RECALL_LOG_QUEUE``): when it is
  full, the recall writes its own entry inline, so a burst slows down instead of losing
  entries. A batch that fails on a deadlock runs again whole (it is one transaction); any other
  error leaves the batch's recalls unwritten and is logged.
- **A record or feedback that names a recall finds it.** ``recall_for_label`` first waits for
  this process's queue, then for another process's (it looks again every few milliseconds, at
  most ``TRAILCACHE_RECALL_LINK_WAIT_MS``). A recall's entry normally lands within a few
  milliseconds of its answer.
- **Stats stay exact.** Every recall's entry and counters are written once, whole or not at all.
- **What a crash may lose.** A web process that is killed (``SIGKILL``, OOM) loses the writes
  still queued: in a running service at most the last few milliseconds of its recalls. A process
  that exits normally (gunicorn's graceful stop, ``sys.exit``) writes its queue first. A crash of
  the database server loses at most about three ``wal_writer_delay`` (600 ms by default) of
  recalls, as before: the write commits with ``synchronous_commit = off``.
- Erasure and retention delete what is committed; a recall answered a few milliseconds before an
  erasure can land after it, as one that was in flight could before.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction

from cachecore.errors import NotFound
from cachecore.models import RecallEvent
from cachecore.selectors.recalls import recall_event_lock
from tenants.caller import Caller

logger = logging.getLogger(__name__)

# Writes per batch (one transaction, its statements pipelined).
BATCH = 64
# How often recall_for_label looks again for a recall another process has not written yet.
LINK_POLL_S = 0.005

# One UPDATE (one index scan in id order, so two recalls lock shared trails in the same order
# and cannot deadlock) marks stale trails and counts hits; the log entry goes with it.
WRITE_SQL = """
    WITH touched AS (
        UPDATE cachecore_trail SET
            status = CASE WHEN id = ANY(%(stale)s::uuid[]) AND status = 'active' THEN 'stale' ELSE status END,
            status_changed_at = CASE WHEN id = ANY(%(stale)s::uuid[]) AND status = 'active' THEN %(now)s
                                     ELSE status_changed_at END,
            hits = CASE WHEN id = ANY(%(hit)s::uuid[]) THEN hits + 1 ELSE hits END,
            last_hit_at = CASE WHEN id = ANY(%(hit)s::uuid[]) THEN %(now)s ELSE last_hit_at END
        WHERE tenant_id = %(tenant)s AND id = ANY(%(stale)s::uuid[] || %(hit)s::uuid[])
    )
    INSERT INTO cachecore_recallevent (
        id, tenant_id, scope, query, subject, trail_id, trail_ids, trail_confidences, passed_trail_ids,
        passed_confidences, outcome, shadow_outcome, miss_reason, reason,
        confidence, similarity, coverage, escalated, asked_again, latency_ms, served_ids, offered_ids, created_at
    )
    SELECT %(id)s, %(tenant)s, %(scope)s, %(query)s, %(subject)s,
           (SELECT id FROM cachecore_trail WHERE tenant_id = %(tenant)s AND id = %(trail)s::uuid),
           %(trail_ids)s::uuid[], %(trail_confidences)s::float8[], %(passed_trail_ids)s::uuid[],
           %(passed_confidences)s::float8[], %(outcome)s,
           %(shadow_outcome)s,
           %(miss_reason)s, %(reason)s, %(confidence)s, %(similarity)s, %(coverage)s, %(escalated)s,
           %(asked_again)s, %(latency)s, %(served)s::varchar[], %(offered)s::varchar[], %(now)s
"""


def _deadlock(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == "40P01"


def write_now(params: dict[str, Any]) -> None:
    """The write in this thread: a savepoint of its own inside a caller's transaction, else one
    round trip (PostgreSQL runs a multi-statement query as one implicit transaction, in which
    ``SET LOCAL`` holds). A deadlock against another writer runs it once more (it is all or
    nothing)."""
    for attempt in (1, 2):
        try:
            if connection.in_atomic_block:
                with transaction.atomic(), connection.cursor() as cur:
                    cur.execute("SET LOCAL synchronous_commit = off")
                    cur.execute(WRITE_SQL, params)
            else:
                with connection.cursor() as cur:
                    cur.execute("SET LOCAL synchronous_commit = off; " + WRITE_SQL, params)
            return
        except OperationalError as exc:
            if attempt == 2 or not _deadlock(exc):
                raise


def _write_batch(batch: list[dict[str, Any]]) -> None:
    """Several recalls' writes in one transaction, in the order they were answered."""
    for attempt in (1, 2, 3):
        try:
            with transaction.atomic(), connection.cursor() as cur:
                cur.execute("SET LOCAL synchronous_commit = off")
                cur.executemany(WRITE_SQL, batch)
            return
        except OperationalError as exc:
            if attempt == 3 or not _deadlock(exc):
                raise


class _Writer:
    """This process's writer thread and its bounded queue."""

    def __init__(self, capacity: int) -> None:
        # Writes, and the events flush() waits on (set once every write before them is done).
        self.queue: queue.Queue[dict[str, Any] | threading.Event] = queue.Queue(maxsize=capacity)
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._run, name="trailcache-recall-log", daemon=True)
        self.thread.start()

    def submit(self, params: dict[str, Any]) -> bool:
        """Queue one recall's write; False when the queue is full (the caller writes it)."""
        try:
            self.queue.put_nowait(params)
        except queue.Full:
            return False
        return True

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every write queued so far is done (True), or ``timeout`` seconds (False)."""
        done = threading.Event()
        deadline = time.monotonic() + timeout
        try:
            self.queue.put(done, timeout=timeout)
        except queue.Full:
            return False
        return done.wait(max(0.0, deadline - time.monotonic()))

    def _run(self) -> None:
        while True:
            first = self.queue.get()
            batch: list[dict[str, Any] | threading.Event] = [first]
            while len(batch) < BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            writes = [p for p in batch if isinstance(p, dict)]
            if writes:
                try:
                    _write_batch(writes)
                except Exception:   # noqa: BLE001 — the thread must outlive one bad batch
                    logger.exception("recall log: %d recall writes failed", len(writes))
                    connection.close()
            for p in batch:
                if isinstance(p, threading.Event):
                    p.set()


_lock = threading.Lock()
_writer: _Writer | None = None


def _current() -> _Writer | None:
    """This process's writer, started on first use (after a fork, a new one)."""
    global _writer
    if settings.TRAILCACHE_RECALL_LOG_QUEUE <= 0:
        return None
    with _lock:
        if _writer is None or _writer.pid != os.getpid():
            _writer = _Writer(settings.TRAILCACHE_RECALL_LOG_QUEUE)
        return _writer


def log_recall(params: dict[str, Any]) -> None:
    """Write one recall's stale marks, hit counters and log entry: queued for this process's
    writer outside a caller's transaction, else (or when the queue is full, or it is off) now."""
    writer = None if connection.in_atomic_block else _current()
    if writer is None or not writer.submit(params):
        write_now(params)


def flush(timeout: float = 5.0) -> bool:
    """Wait for this process's queued recall writes (True when none is left)."""
    writer = _writer
    if writer is None or writer.pid != os.getpid():
        return True
    return writer.flush(timeout)


atexit.register(flush)


def recall_for_label(*, caller: Caller, recall_id: object) -> RecallEvent:
    """The recall a record or a feedback names, locked for its update: after this process's
    queued writes, and looked for again until ``TRAILCACHE_RECALL_LINK_WAIT_MS`` when another
    process may not have written it yet. NotFound when it never appears (or is not the caller's).
    Called inside the record's transaction before it locks any trail, so the writer it waits for
    never waits for it."""
    flush()
    try:
        uuid.UUID(str(recall_id))
    except ValueError as exc:
        raise NotFound("recall not found") from exc
    deadline = time.monotonic() + settings.TRAILCACHE_RECALL_LINK_WAIT_MS / 1000
    while True:
        try:
            return recall_event_lock(caller=caller, recall_id=recall_id)
        except NotFound:
            # Another tenant's recall waits as long as one that never was: the wait tells nothing.
            if time.monotonic() >= deadline:
                raise
            time.sleep(LINK_POLL_S)
