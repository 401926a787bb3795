"""Every write of the engine: sections, trails, recalls, feedback, erasure. The API, the
console and Celery tasks all call these (``from cachecore import services``).

This package re-exports its submodules' services for those callers; it is the only module that
imports them all. A submodule imports its siblings directly (``cachecore.services.jobs``),
never this package: ``tests/test_import_graph.py`` fails on the cycle that would make."""

from cachecore.services.erasure import subject_erase, subject_erase_request
from cachecore.services.exports import export_download, export_file, export_request
from cachecore.services.feedback import feedback_apply
from cachecore.services.jobs import job_create, job_execute, jobs_requeue
from cachecore.services.recall import RecallResult, recall
from cachecore.services.retention import retention_sweep, tenant_retention_sweep
from cachecore.services.rollups import stats_rollup, stats_rollup_tenant
from cachecore.services.sections import (
    UpsertResult,
    section_chunks_compute,
    section_chunks_schedule,
    section_delete,
    sections_upsert,
    trails_invalidate_for_sections,
    trails_invalidate_schedule,
)
from cachecore.services.subjects import subject_hash
from cachecore.services.trails import trail_delete, trail_record, trail_set_status, trails_purge

__all__ = [
    "RecallResult",
    "UpsertResult",
    "export_download",
    "export_file",
    "export_request",
    "feedback_apply",
    "job_create",
    "job_execute",
    "jobs_requeue",
    "recall",
    "retention_sweep",
    "section_chunks_compute",
    "section_chunks_schedule",
    "section_delete",
    "sections_upsert",
    "stats_rollup",
    "stats_rollup_tenant",
    "subject_erase",
    "subject_erase_request",
    "subject_hash",
    "tenant_retention_sweep",
    "trail_delete",
    "trail_record",
    "trail_set_status",
    "trails_invalidate_for_sections",
    "trails_invalidate_schedule",
    "trails_purge",
]
