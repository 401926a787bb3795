"""Compliance exports of a tenant's stored queries, as CSV or JSONL, written by a job in
bounded keyset batches (a tenant with millions of trails never sits in memory), downloadable
by that tenant only and deleted after ``TRAILCACHE_EXPORT_RETENTION_DAYS``."""

from __future__ import annotations

import csv
import errno
import json
import logging
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.contrib.postgres.expressions import ArraySubquery
from django.db import transaction
from django.db.models import OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from cachecore.access import require_permission, require_unrestricted
from cachecore.engine.limits import MAX_DATE, MIN_DATE
from cachecore.errors import ExportGone, ExportNotReady, ExportQuotaExceeded, InvalidInput, TooManyActive
from cachecore.models import Citation, Job, JobKind, JobStatus, Trail
from cachecore.selectors.jobs import job_get
from cachecore.selectors.trail_filters import STATUS_ERROR, instant, status_valid, trail_filter
from cachecore.services.jobs import JobFailed, job_create, job_progress, register
from cachecore.services.subjects import subject_hash
from tenants.caller import Caller
from tenants.models import AuditAction, KeyPermission, Tenant
from tenants.services import audit_record

log = logging.getLogger(__name__)

FORMATS = ("csv", "jsonl")
COLUMNS = ("trail_id", "query", "scope", "subject", "status", "created", "expires", "query_redacted_at",
           "cited", "hits", "positive_feedback", "negative_feedback", "cited_namespaces")
# Rows per keyset batch: one progress update and one round trip each.
BATCH = 2000
# A write refused for want of space (the volume, the user's quota, the file size limit): the job
# fails as ``disk_full``, a code the export status shows, and its partial file is removed.
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
# Cells a spreadsheet would run as a formula get a leading apostrophe (CSV only).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _given_day(value: Any) -> date:
    """The calendar day a bound names, in its own time zone (as the API's edge reads it)."""
    if isinstance(value, str):
        value = parse_date(value) or parse_datetime(value)
    return value.date() if isinstance(value, datetime) else value


def _instant(value: Any, *, field: str, end_of_day: bool) -> str | None:
    """ISO datetime string of a ``since``/``until`` bound (``trail_filters.instant``: a bare
    date is that UTC day), a day within ``limits.MIN_DATE``..``MAX_DATE`` for the API and the
    console alike."""
    try:
        parsed = instant(value, end_of_day=end_of_day)
    except ValueError as exc:
        raise InvalidInput(f"{field}: not a date or datetime", fields={field: [str(exc)]}) from exc
    if parsed is None:
        return None
    if not MIN_DATE <= _given_day(value) <= MAX_DATE:
        message = f"must be between {MIN_DATE.isoformat()} and {MAX_DATE.isoformat()}"
        raise InvalidInput(f"{field}: {message}", fields={field: [message]})
    return parsed.isoformat()


# Retry-After of a refused export: about how long a small export takes.
EXPORT_RETRY_SECONDS = 30


def export_bytes_held(*, tenant: Tenant, exclude: Any = None) -> int:
    """Bytes of the tenant's export files on disk (finished, not deleted), what its quota counts."""
    jobs = Job.objects.filter(tenant=tenant, kind=JobKind.EXPORT, status=JobStatus.DONE, file_deleted_at__isnull=True)
    if exclude is not None:
        jobs = jobs.exclude(pk=exclude)
    return sum(int((result or {}).get("bytes") or 0) for result in jobs.values_list("result", flat=True))


def _quota_left(tenant: Tenant, *, exclude: Any = None) -> int:
    return settings.TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT - export_bytes_held(tenant=tenant, exclude=exclude)


def export_request(
    *, caller: Caller, format: str, scope: str | None = None,
    since: Any = None, until: Any = None, subject: str | None = None, status: str | None = None,
) -> Job:
    """Accept an export: a queued job row and its audit entry in one transaction; the file is
    written in the background. ``since`` inclusive, ``until`` exclusive (a date: through that day).
    For a caller without scope limits that holds ``export`` (ScopeForbidden, PermissionMissing);
    at most ``TRAILCACHE_MAX_ACTIVE_EXPORTS`` queued or running per tenant (TooManyActive, 429),
    counted under a lock on the tenant so the cap cannot be raced."""
    require_permission(caller, KeyPermission.EXPORT)
    require_unrestricted(caller, "exporting")
    tenant, actor, actor_label = caller.tenant, caller.user, caller.actor_label
    errors: dict[str, list[str]] = {}
    if format not in FORMATS:
        errors["format"] = [f"one of {', '.join(FORMATS)}"]
    if not status_valid(status):
        errors["status"] = [STATUS_ERROR]
    if errors:
        raise InvalidInput("invalid export request", fields=errors)
    params = {
        "format": format, "scope": scope or None, "subject": subject or None, "status": status or None,
        "since": _instant(since, field="since", end_of_day=False),
        "until": _instant(until, field="until", end_of_day=True),
    }
    if params["since"] and params["until"] and params["since"] >= params["until"]:
        raise InvalidInput("since must be before until", fields={"until": ["must be after since"]})
    if _quota_left(tenant) <= 0:
        raise ExportQuotaExceeded(
            f"this tenant's export files take their quota of {settings.TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT} "
            "bytes: delete or let older exports expire first")
    with transaction.atomic():
        # One request at a time per tenant past this line, so the cap cannot be raced.
        Tenant.objects.select_for_update().filter(pk=tenant.pk).exists()
        active = Job.objects.filter(tenant=tenant, kind=JobKind.EXPORT,
                                    status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).count()
        if active >= settings.TRAILCACHE_MAX_ACTIVE_EXPORTS:
            raise TooManyActive(
                f"{active} exports of this tenant are queued or running (at most "
                f"{settings.TRAILCACHE_MAX_ACTIVE_EXPORTS}); try again when one is done.",
                retry_after=EXPORT_RETRY_SECONDS,
            )
        job = job_create(tenant=tenant, kind=JobKind.EXPORT, params=params, actor=actor, actor_label=actor_label)
        # The audit log keeps the subject's hash: erasing the subject must not leave it here.
        filters = {k: v for k, v in params.items() if k != "subject" and v}
        if subject:
            filters["subject_sha256"] = subject_hash(subject)
        audit_record(tenant=tenant, actor=actor, actor_label=actor_label, action=AuditAction.EXPORT,
                     target=f"export {job.pk}", details=filters)
    return job


def export_trails(*, tenant: Tenant, params: dict[str, Any]) -> QuerySet[Trail]:
    """The trails an export's filters select (unordered): ``trail_filters.trail_filter``, the
    console's trail list's filters."""
    trails = Trail.objects.filter(tenant=tenant)
    if params.get("subject_sha256") and not params.get("subject"):
        return trails.none()  # the subject was erased after the export was requested
    return trails.filter(trail_filter(scope=params.get("scope"), subject=params.get("subject"),
                                      status=params.get("status"), created_since=params.get("since"),
                                      created_until=params.get("until")))


def _batches(trails: QuerySet[Trail]) -> Iterator[list[dict[str, Any]]]:
    """Keyset pagination on (created_at, id): bounded memory, no long-held cursor."""
    citations = Citation.objects.filter(tenant=OuterRef("tenant"), trail=OuterRef("pk")).order_by("position")
    # Each cited id's section namespace, in the same order ("": the shared one).
    rows = trails.annotate(cited=ArraySubquery(citations.values("section_id")),
                           cited_namespaces=ArraySubquery(citations.values("section_namespace"))
                           ).order_by("created_at", "id").values(
        "id", "query", "scope", "subject", "status", "created_at", "expires_at", "query_redacted_at", "cited",
        "hits", "positive_feedback", "negative_feedback", "cited_namespaces",
    )
    after: tuple[datetime, Any] | None = None
    while True:
        page = rows
        if after is not None:
            page = rows.filter(Q(created_at__gt=after[0]) | Q(created_at=after[0], id__gt=after[1]))
        batch = list(page[:BATCH])
        if not batch:
            return
        yield batch
        after = (batch[-1]["created_at"], batch[-1]["id"])


def _record(row: dict[str, Any]) -> dict[str, Any]:
    def iso(value: datetime | None) -> str | None:
        return value.isoformat() if value else None

    return {
        "trail_id": str(row["id"]), "query": row["query"], "scope": row["scope"], "subject": row["subject"],
        "status": row["status"], "created": iso(row["created_at"]), "expires": iso(row["expires_at"]),
        "query_redacted_at": iso(row["query_redacted_at"]), "cited": list(row["cited"] or []),
        "hits": row["hits"], "positive_feedback": row["positive_feedback"],
        "negative_feedback": row["negative_feedback"], "cited_namespaces": list(row["cited_namespaces"] or []),
    }


class _Writer:
    def __init__(self, out: TextIO, fmt: str) -> None:
        self.out, self.fmt = out, fmt
        if fmt == "csv":
            self.csv = csv.writer(out)
            self.csv.writerow(COLUMNS)

    def write(self, record: dict[str, Any]) -> None:
        if self.fmt == "jsonl":
            self.out.write(json.dumps(record, ensure_ascii=False))
            self.out.write("\n")
            return
        cells = []
        for column in COLUMNS:
            value = record[column]
            if column in ("cited", "cited_namespaces"):
                value = json.dumps(value, ensure_ascii=False)
            elif value is None:
                value = ""
            elif isinstance(value, str) and value.startswith(_FORMULA_START):
                value = "'" + value
            cells.append(value)
        self.csv.writerow(cells)


def export_path(job: Job) -> Path:
    return Path(settings.MEDIA_ROOT) / "exports" / str(job.tenant_id) / job.file_name


def export_job_run(job: Job) -> dict[str, Any]:
    """Job body: write the export file batch by batch, with progress numbers."""
    params = job.params
    fmt = params.get("format", "csv")
    trails = export_trails(tenant=job.tenant, params=params)
    total = trails.count()
    job_progress(job=job, done=0, total=total)
    job.file_name = f"{job.pk}.{fmt}"
    # Named on the row before it is written: an erasure or the sweep finds the file (and its
    # ``.part``) from the row, whatever point this run has reached.
    Job.objects.filter(pk=job.pk).update(file_name=job.file_name)
    path = export_path(job)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".part")
    done = 0
    room = _quota_left(job.tenant, exclude=job.pk)  # the tenant's byte quota, less its other files
    try:
        with open(partial, "w", encoding="utf-8", newline="") as out:
            writer = _Writer(out, fmt)
            for batch in _batches(trails):
                for row in batch:
                    writer.write(_record(row))
                done += len(batch)
                if out.tell() > room:
                    raise JobFailed("export_quota_exceeded",
                                    f"the file would take the tenant's export files over their quota "
                                    f"({settings.TRAILCACHE_EXPORT_QUOTA_BYTES_PER_TENANT} bytes)")
                job_progress(job=job, done=done, total=max(total, done))
        os.replace(partial, path)
    except BaseException as exc:
        # Never leave a half-written file behind (on a full disk it would keep the disk full).
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
            log.error("export %s: no space left for %s: %s", job.pk, path.parent, exc)
            raise JobFailed("disk_full", f"no space left on the export volume ({exc.strerror})") from exc
        raise
    # An erasure while this export ran may have marked its file deleted (it could hold the
    # erased subject): then the file goes as soon as it is written. Checked with the row locked,
    # as the erasure locks it: an erasure either came first (seen here) or comes after (and
    # deletes the file, named on the row). The job's params are never written back (jobs), so
    # an erasure's scrubbing of them stands.
    with transaction.atomic():
        row = Job.objects.select_for_update().only("file_deleted_at").get(pk=job.pk)
        if row.file_deleted_at is not None:
            path.unlink(missing_ok=True)
            partial.unlink(missing_ok=True)
        size = path.stat().st_size if path.exists() else 0
    job.progress_total = done
    job.file_expires_at = timezone.now() + timedelta(days=settings.TRAILCACHE_EXPORT_RETENTION_DAYS)
    return {"rows": done, "bytes": size}


register(JobKind.EXPORT, export_job_run)


@dataclass(frozen=True)
class ExportFile:
    path: Path
    filename: str
    content_type: str


def export_file(*, job: Job) -> ExportFile:
    """The finished export's file, or a domain error: not finished (409), deleted (410)."""
    if job.kind != JobKind.EXPORT:
        raise InvalidInput("not an export")
    if job.status != JobStatus.DONE:
        raise ExportNotReady(f"export is {job.status}")
    path = export_path(job)
    if job.file_deleted_at or not job.file_name or not path.exists():
        raise ExportGone("export file was deleted")
    fmt = job.params.get("format", "csv")
    content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
    return ExportFile(path, f"trailcache-export-{job.created_at:%Y%m%d-%H%M%S}-{str(job.pk)[:8]}.{fmt}",
                      content_type)


def export_get(*, caller: Caller, export_id: object) -> Job:
    """An export of the caller's tenant, for a caller without scope limits that holds ``export``
    (an export spans the tenant); NotFound for any other id."""
    require_permission(caller, KeyPermission.EXPORT)
    require_unrestricted(caller, "exporting")
    return job_get(caller=caller, job_id=export_id, kind=JobKind.EXPORT)


def export_download(*, caller: Caller, export_id: object) -> ExportFile:
    """``export_file`` of ``export_get``'s export for a download: the hand-out is audited
    (``export.download``)."""
    job = export_get(caller=caller, export_id=export_id)
    export = export_file(job=job)
    with transaction.atomic():
        audit_record(tenant=job.tenant, actor=caller.user, actor_label=caller.actor_label,
                     action=AuditAction.EXPORT_DOWNLOAD,
                     target=f"export {job.pk}", details={"export_id": str(job.pk),
                                                         "format": job.params.get("format", "csv")})
    return export


def _export_files_sweep() -> None:
    """Remove every file in the export folders that no live export owns: a file (or ``.part``)
    whose row is gone or marked deleted (an erasure or the expiry, in whatever order it met the
    writer), and a ``.part`` whose export is not running."""
    root = Path(settings.MEDIA_ROOT) / "exports"
    if not root.is_dir():
        return
    files: dict[str, list[Path]] = {}
    for folder in root.iterdir():
        if folder.is_dir():
            for path in folder.iterdir():
                files.setdefault(path.name.split(".", 1)[0], []).append(path)
    for start in range(0, len(files), 500):
        names = list(files)[start:start + 500]
        valid = []
        for name in names:
            try:
                valid.append(str(uuid.UUID(name)))
            except ValueError:
                continue
        live = {str(pk): (status, deleted) for pk, status, deleted in Job.objects.filter(
            pk__in=valid, kind=JobKind.EXPORT).values_list("pk", "status", "file_deleted_at")}
        for name in names:
            status, deleted = live.get(name, (None, None))
            for path in files[name]:
                gone = status is None or deleted is not None
                stale_part = path.suffix == ".part" and status != JobStatus.RUNNING
                if gone or stale_part:
                    path.unlink(missing_ok=True)


def exports_expire(*, now: datetime | None = None, batch: int = 500) -> int:
    """Delete export files past their expiry, and any file no live export owns (idempotent).
    Returns the expired exports marked deleted."""
    now = now or timezone.now()
    deleted = 0
    while True:
        with transaction.atomic():
            jobs = list(Job.objects.select_for_update(skip_locked=True).filter(
                kind=JobKind.EXPORT, file_deleted_at__isnull=True, file_expires_at__lt=now,
            )[:batch])
            if not jobs:
                _export_files_sweep()
                return deleted
            for job in jobs:
                if job.file_name:
                    export_path(job).unlink(missing_ok=True)
                job.file_deleted_at = now
            Job.objects.bulk_update(jobs, ["file_deleted_at"])
            deleted += len(jobs)


def exports_delete_for_subject(*, tenant: Tenant, subject: str, now: datetime | None = None) -> list[str]:
    """Delete the tenant's export files that could hold ``subject``: every export written (or
    being written) before now whose filter does not exclude it (no subject filter, or that
    subject). Call inside the erasure's transaction. Returns the export ids."""
    now = now or timezone.now()
    digest = subject_hash(subject)

    def could_hold(params: dict[str, Any]) -> bool:
        if params.get("subject"):
            return params["subject"] == subject
        if params.get("subject_sha256"):  # filtered on a subject erased before
            return params["subject_sha256"] == digest
        return True

    jobs = [job for job in Job.objects.select_for_update().filter(
        tenant=tenant, kind=JobKind.EXPORT, file_deleted_at__isnull=True,
        status__in=[JobStatus.DONE, JobStatus.RUNNING], created_at__lte=now,
    ) if could_hold(job.params or {})]
    for job in jobs:
        if job.file_name:
            path = export_path(job)
            path.unlink(missing_ok=True)
            path.with_suffix(path.suffix + ".part").unlink(missing_ok=True)
        job.file_deleted_at = now
    Job.objects.bulk_update(jobs, ["file_deleted_at"])
    return [str(job.pk) for job in jobs]
