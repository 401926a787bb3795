"""Every write of the engine: sections, trails, recalls, feedback, erasure. The API, the
console and Celery tasks all call these (``from cachecore import services``)."""

from cachecore.services.erasure import subject_erase, subject_hash
from cachecore.services.feedback import feedback_apply
from cachecore.services.recall import RecallResult, recall
from cachecore.services.sections import (
    UpsertResult,
    section_chunks_compute,
    section_chunks_schedule,
    section_delete,
    sections_upsert,
    trails_invalidate_for_sections,
)
from cachecore.services.trails import trail_delete, trail_record, trail_set_status, trails_purge

__all__ = [
    "RecallResult",
    "UpsertResult",
    "feedback_apply",
    "recall",
    "section_chunks_compute",
    "section_chunks_schedule",
    "section_delete",
    "sections_upsert",
    "subject_erase",
    "subject_hash",
    "trail_delete",
    "trail_record",
    "trail_set_status",
    "trails_invalidate_for_sections",
    "trails_purge",
]
