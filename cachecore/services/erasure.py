"""Erasure of a data subject."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import transaction

from cachecore.models import (
    RecallEvent,
    Trail,
)
from tenants.models import AuditAction, Tenant
from tenants.services import audit_record


def subject_hash(subject: str) -> str:
    """What the audit log keeps instead of the subject."""
    return hashlib.sha256(subject.encode("utf-8")).hexdigest()


def subject_erase(*, tenant: Tenant, subject: str, actor_label: str, actor: Any = None) -> int:
    """Erase every trail recorded with ``subject`` (their citations go with them) and every
    logged recall carrying it; the audit entry keeps the subject's hash, never the subject.
    Returns the number of trails and recall entries deleted."""
    with transaction.atomic():
        _, trail_counts = Trail.objects.filter(tenant=tenant, subject=subject).delete()
        _, event_counts = RecallEvent.objects.filter(tenant=tenant, subject=subject).delete()
        deleted = trail_counts.get(Trail._meta.label, 0) + event_counts.get(RecallEvent._meta.label, 0)
        audit_record(
            tenant=tenant, actor=actor, actor_label=actor_label, action=AuditAction.SUBJECT_ERASE,
            target=f"subject sha256:{subject_hash(subject)[:16]}",
            details={"subject_sha256": subject_hash(subject), "trails": trail_counts.get(Trail._meta.label, 0),
                     "recall_events": event_counts.get(RecallEvent._meta.label, 0)},
        )
    return deleted
