"""Retention: per tenant, delete expired trails, pending trails past their TTL and recall log
entries past the log retention; redact stored query text past the query retention. Bounded
batches claimed with SKIP LOCKED, so two sweeps at once split the work instead of colliding,
and a second run finds nothing left to do."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from cachecore.models import RecallEvent, Trail, TrailStatus
from tenants.models import Tenant

log = logging.getLogger(__name__)

BATCH = 1000


@dataclass
class RetentionResult:
    expired_trails: int = 0
    pending_trails: int = 0
    recall_events: int = 0
    redacted_trail_queries: int = 0
    redacted_recall_queries: int = 0
    export_files: int = 0

    def add(self, other: RetentionResult) -> None:
        for field, value in asdict(other).items():
            setattr(self, field, getattr(self, field) + value)


def _in_batches(queryset: models.QuerySet, *, batch: int, apply: Callable[[models.QuerySet], int]) -> int:
    """``apply`` to the rows of ``queryset``, ``batch`` at a time: each batch locked (rows another
    sweep holds are skipped) and applied in a transaction of its own. Returns the rows applied to."""
    done = 0
    while True:
        with transaction.atomic():
            ids = list(queryset.select_for_update(skip_locked=True).values_list("pk", flat=True)[:batch])
            if not ids:
                return done
            done += apply(queryset.model.objects.filter(pk__in=ids))


def _delete_in_batches(queryset: models.QuerySet, *, batch: int) -> int:
    """The rows deleted (their cascades not counted)."""
    label = queryset.model._meta.label
    return _in_batches(queryset, batch=batch, apply=lambda rows: rows.delete()[1].get(label, 0))


def _update_in_batches(queryset: models.QuerySet, *, batch: int, **changes: object) -> int:
    return _in_batches(queryset, batch=batch, apply=lambda rows: rows.update(**changes))


def _blank_strings(value: Any) -> Any:
    """The same JSON shape with every string emptied (keys, numbers and booleans kept)."""
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return [_blank_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: _blank_strings(v) for k, v in value.items()}
    return value


# A reason quoting text, as verifier reasons did before they stopped quoting the answer:
# "...: 'quoted'" or "...: \"quoted\"" at the end.
_QUOTED = re.compile(r"""\s*:\s*(['"]).*$""", re.DOTALL)


def redacted_steps(steps: Any) -> Any:
    """Steps without the text of their arguments: tool names and returned ids stay."""
    if not isinstance(steps, list):
        return steps
    return [{**step, "args": _blank_strings(step["args"])} if isinstance(step, dict) and "args" in step else step
            for step in steps]


def redacted_verdict(verdict: Any) -> Any:
    """The verdict without quoted text in its reasons; scores and counts stay."""
    if not isinstance(verdict, dict) or not isinstance(verdict.get("reasons"), list):
        return verdict
    return {**verdict, "reasons": [_QUOTED.sub("", r) if isinstance(r, str) else r for r in verdict["reasons"]]}


def _redact_trail_queries(queryset: models.QuerySet, *, batch: int, now: datetime) -> int:
    """Query text goes, and with it the query's copies in the steps' arguments and any text
    quoted in the verdict's reasons. The subject stays (README → Retention)."""
    updated = 0
    while True:
        with transaction.atomic():
            rows = list(queryset.select_for_update(skip_locked=True).only("pk", "steps", "verdict")[:batch])
            if not rows:
                return updated
            for trail in rows:
                trail.query = trail.query_normalised = ""
                trail.query_redacted_at = now
                trail.steps = redacted_steps(trail.steps)
                trail.verdict = redacted_verdict(trail.verdict)
            Trail.objects.bulk_update(rows, ["query", "query_normalised", "query_redacted_at", "steps", "verdict"])
            updated += len(rows)


def tenant_retention_sweep(*, tenant: Tenant, now: datetime | None = None, batch: int = BATCH) -> RetentionResult:
    """Apply one tenant's retention settings. Idempotent; safe to run concurrently. The
    recall log is rolled up into daily stats before any of it is deleted."""
    from cachecore.services.rollups import stats_rollup_tenant

    now = now or timezone.now()
    stats_rollup_tenant(tenant=tenant, now=now)
    trails = Trail.objects.filter(tenant=tenant)
    events = RecallEvent.objects.filter(tenant=tenant)
    query_cutoff = now - timedelta(days=tenant.query_retention_days)
    return RetentionResult(
        expired_trails=_delete_in_batches(trails.filter(expires_at__lte=now), batch=batch),
        # The TTL at record time is in expires_at; this also applies a TTL shortened since.
        pending_trails=_delete_in_batches(
            trails.filter(status=TrailStatus.PENDING,
                          created_at__lte=now - timedelta(hours=tenant.pending_ttl_hours)), batch=batch),
        recall_events=_delete_in_batches(
            events.filter(created_at__lte=now - timedelta(days=tenant.recall_log_retention_days)), batch=batch),
        # The trail keeps matching by its embedding; only the text goes (query_normalised is text too).
        redacted_trail_queries=_redact_trail_queries(
            trails.filter(created_at__lte=query_cutoff, query_redacted_at__isnull=True), batch=batch, now=now),
        redacted_recall_queries=_update_in_batches(
            events.filter(created_at__lte=query_cutoff).exclude(query=""), batch=batch, query=""),
    )


def retention_sweep(*, now: datetime | None = None, batch: int = BATCH) -> RetentionResult:
    """Every tenant's retention, then export files past their expiry."""
    from cachecore.services.exports import exports_expire

    now = now or timezone.now()
    total = RetentionResult()
    for tenant in Tenant.objects.order_by("pk").iterator():
        total.add(tenant_retention_sweep(tenant=tenant, now=now, batch=batch))
    total.export_files = exports_expire(now=now)
    log.info("retention sweep: %s", asdict(total))
    return total
