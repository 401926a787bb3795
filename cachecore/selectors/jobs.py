"""Reads of background jobs for a caller: one job, the latest of a kind. A job spans its whole
tenant, so a scope-limited caller sees none (``Job.objects.visible_to``)."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from cachecore.errors import NotFound
from cachecore.models import Job, JobKind
from tenants.caller import Caller


def job_get(*, caller: Caller, job_id: object, kind: JobKind | None = None) -> Job:
    """A job the caller sees (NotFound otherwise: another tenant's job does not exist here)."""
    jobs = Job.objects.visible_to(caller)
    if kind:
        jobs = jobs.filter(kind=kind)
    try:
        return jobs.get(pk=job_id)
    except (Job.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
        raise NotFound("job not found") from exc


def jobs_latest(*, caller: Caller, kind: JobKind, limit: int = 50) -> list[Job]:
    """The caller's most recent jobs of one kind, newest first."""
    return list(Job.objects.visible_to(caller).filter(kind=kind).order_by("-created_at")[:limit])
