"""Feedback on a recall."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from cachecore.access import require_permission
from cachecore.models import (
    RecallEvent,
    RecallOutcome,
    SignalSource,
    Trail,
    TrailStatus,
)
from cachecore.services.recall_log import recall_for_label
from cachecore.services.trails import trail_boundary_learn
from tenants.caller import Caller
from tenants.models import AuditAction, KeyPermission
from tenants.services import audit_record


def feedback_apply(*, caller: Caller, recall_id: object, accepted: bool) -> RecallEvent:
    """Feedback on a recall the caller sees (NotFound otherwise: read once, locked for the
    write). Negative: the trail it served is quarantined (kept for review), and a pending trail
    recorded after it too. Positive: the served trail is reinforced and a pending trail recorded
    after it becomes active."""
    require_permission(caller, KeyPermission.FEEDBACK)
    tenant, actor, actor_label = caller.tenant, caller.user, caller.actor_label
    with transaction.atomic():
        event = recall_for_label(caller=caller, recall_id=recall_id)
        now = timezone.now()
        event.feedback, event.feedback_at = accepted, now
        event.save(update_fields=["feedback", "feedback_at"])
        served = Trail.objects.filter(tenant=tenant, pk=event.trail_id) if event.trail_id else Trail.objects.none()
        recorded = (
            Trail.objects.filter(tenant=tenant, pk=event.recorded_trail_id, status=TrailStatus.PENDING)
            if event.recorded_trail_id else Trail.objects.none()
        )
        if accepted:
            served.update(positive_feedback=F("positive_feedback") + 1)
            if event.trail_id and event.outcome != RecallOutcome.MISS:
                # Explicit approval counts like a citation: the boundary may fall again.
                trail_boundary_learn(tenant=tenant, trail_id=event.trail_id, confidence=event.confidence, cited=True)
            recorded.update(
                status=TrailStatus.ACTIVE, status_changed_at=now, signal_source=SignalSource.USER,
                signal_accepted=True, expires_at=now + timedelta(days=tenant.trail_ttl_days),
            )
        else:
            served.update(negative_feedback=F("negative_feedback") + 1)
            to_quarantine = served.exclude(status=TrailStatus.QUARANTINED)
            quarantined = [str(pk) for pk in [*to_quarantine.values_list("pk", flat=True),
                                              *recorded.values_list("pk", flat=True)]]
            to_quarantine.update(status=TrailStatus.QUARANTINED, status_changed_at=now)
            recorded.update(status=TrailStatus.QUARANTINED, status_changed_at=now)
            if quarantined:
                audit_record(tenant=tenant, actor=actor, actor_label=actor_label,
                             action=AuditAction.FEEDBACK_QUARANTINE, target=f"recall {event.pk}",
                             details={"trail_ids": quarantined, "recall_id": str(event.pk)})
    return event


