"""Erasure of a data subject."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from cachecore.access import require_permission, require_unrestricted
from cachecore.embedding import forget_subject_queries
from cachecore.models import (
    Job,
    JobKind,
    RecallEvent,
    Trail,
)
from cachecore.services.exports import exports_delete_for_subject
from cachecore.services.jobs import job_create, register
from cachecore.services.recall_log import flush as recall_log_flush
from cachecore.services.subjects import subject_checked, subject_hash
from tenants.caller import Caller, tenant_caller
from tenants.models import AuditAction, KeyPermission, Tenant
from tenants.services import audit_record


def _scrub_jobs(*, tenant: Tenant, subject: str, digest: str) -> None:
    """Job rows that carry the subject (an export filter, an erasure request) keep its hash."""
    for job in Job.objects.select_for_update().filter(tenant=tenant, params__subject=subject):
        job.params = {**{k: v for k, v in job.params.items() if k != "subject"}, "subject_sha256": digest}
        job.save(update_fields=["params"])


def subject_erase(*, caller: Caller, subject: str) -> int:
    """Erase every trail recorded with ``subject`` (their citations go with them), every
    logged recall carrying it, and the export files made before that could hold it; the audit
    entry keeps the subject's hash, never the subject, and lists those export files. Returns
    the number of trails and recall entries deleted. For a caller without scope limits that
    holds ``erase`` (an erasure spans the tenant)."""
    require_permission(caller, KeyPermission.ERASE)
    require_unrestricted(caller, "erasing a subject")
    tenant, actor, actor_label = caller.tenant, caller.user, caller.actor_label
    subject = subject_checked(subject)
    digest = subject_hash(subject)
    recall_log_flush()   # this process's recalls of the subject are written before they are erased
    with transaction.atomic():
        _, trail_counts = Trail.objects.filter(tenant=tenant, subject=subject).delete()
        _, event_counts = RecallEvent.objects.filter(tenant=tenant, subject=subject).delete()
        deleted = trail_counts.get(Trail._meta.label, 0) + event_counts.get(RecallEvent._meta.label, 0)
        _scrub_jobs(tenant=tenant, subject=subject, digest=digest)
        # Files written before the erasure that could hold the subject go with its rows.
        exports_deleted = exports_delete_for_subject(tenant=tenant, subject=subject)
        audit_record(
            tenant=tenant, actor=actor, actor_label=actor_label, action=AuditAction.SUBJECT_ERASE,
            target=f"subject sha256:{digest[:16]}",
            details={"subject_sha256": digest, "trails": trail_counts.get(Trail._meta.label, 0),
                     "recall_events": event_counts.get(RecallEvent._meta.label, 0),
                     "exports_deleted": exports_deleted},
        )
    forget_subject_queries(tenant=tenant.pk, subject=subject)
    return deleted


def subject_erase_request(*, caller: Caller, subject: str) -> Job:
    """Accept an erasure as a background job (the console's path); same effect as
    ``subject_erase``, for the same callers. The subject sits in the job row only until the job
    has run."""
    require_permission(caller, KeyPermission.ERASE)
    require_unrestricted(caller, "erasing a subject")
    tenant, actor, actor_label = caller.tenant, caller.user, caller.actor_label
    subject = subject_checked(subject)
    with transaction.atomic():
        return job_create(tenant=tenant, kind=JobKind.SUBJECT_ERASE, params={"subject": subject},
                          actor=actor, actor_label=actor_label, progress_total=1)


def subject_erase_job_run(job: Job) -> dict[str, Any]:
    """Job body: erase, then keep only the subject's hash on the job row."""
    subject = job.params.get("subject")
    digest = job.params.get("subject_sha256") or (subject_hash(subject) if subject else "")
    deleted = 0
    if subject:  # absent when an earlier erasure of the same subject already scrubbed this row
        deleted = subject_erase(caller=tenant_caller(job.tenant, actor_label=job.actor_label or "system",
                                                     user=job.actor), subject=subject)
    job.params = {"subject_sha256": digest}
    return {"deleted": deleted}


register(JobKind.SUBJECT_ERASE, subject_erase_job_run)
