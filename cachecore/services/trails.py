"""Trails: record (admission), delete, quarantine/release, purge."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from cachecore import resolver
from cachecore.embedding import get_embedder
from cachecore.engine.boundary import boundary_after
from cachecore.engine.text import normalise_query
from cachecore.errors import InvalidInput, NotFound, Unavailable, UnknownSections
from cachecore.models import (
    Citation,
    RecallEvent,
    RecallOutcome,
    Trail,
    TrailStatus,
)
from cachecore.selectors.recalls import recall_event_get
from cachecore.selectors.sections import sections_current_hashes
from cachecore.selectors.trails import trail_get
from cachecore.services.admission import admission_decide
from tenants.caller import tenant_caller
from tenants.models import AuditAction, Tenant
from tenants.services import audit_record


def trail_record(
    *,
    tenant: Tenant,
    scope: str,
    query: str,
    steps: list[dict[str, Any]],
    cited: list[str],
    signal: dict[str, Any] | None,
    subject: str = "",
    answer: str | None = None,
    recall_id: str | None = None,
) -> Trail:
    """Store a trail. Active with a positive signal (and, under the verifier policy, a passing
    verdict on ``answer``, which is never stored); otherwise pending with a short TTL.
    Cited ids unknown to the tenant → UnknownSections; nothing is written then."""
    if len(set(cited)) != len(cited):
        raise InvalidInput("cited ids must be unique", fields={"cited": ["duplicate ids"]})
    hashes = sections_current_hashes(tenant=tenant, section_ids=cited)
    unknown = [i for i in cited if i not in hashes]
    if unknown and tenant.resolver_url:
        try:
            hashes.update({k: v.hash for k, v in resolver.resolve(tenant=tenant, section_ids=unknown).items()})
        except resolver.ResolverUnavailable as exc:
            raise Unavailable(f"the tenant's resolver could not confirm cited ids: {exc}") from exc
        unknown = [i for i in cited if i not in hashes]
    if unknown:
        raise UnknownSections(unknown)
    recall_event = None
    if recall_id is not None:
        try:
            recall_event = recall_event_get(caller=tenant_caller(tenant), recall_id=recall_id)
        except NotFound as exc:
            raise InvalidInput("unknown recall_id", fields={"recall_id": ["no such recall for this tenant"]}) from exc
    if recall_event is not None and not subject:
        subject = recall_event.subject  # the recall's subject: an erasure of it finds this trail too
    normalised = normalise_query(query)
    embedder = get_embedder()
    embedding = embedder.embed_one(normalised)
    source = (signal or {}).get("source") or ""
    accepted = (signal or {}).get("accepted")
    positive, verdict = admission_decide(tenant=tenant, signal=signal, answer=answer, cited=cited)
    now = timezone.now()
    status = TrailStatus.ACTIVE if positive else TrailStatus.PENDING
    expires = now + (timedelta(days=tenant.trail_ttl_days) if positive else timedelta(hours=tenant.pending_ttl_hours))
    with transaction.atomic():
        trail = Trail(
            tenant=tenant, scope=scope, query=query, query_normalised=normalised, embedding=embedding,
            embedding_model=embedder.version,
            steps=steps, status=status, signal_source=source, signal_accepted=accepted,
            verdict=verdict.as_dict() if verdict else None,
            subject=subject, expires_at=expires, status_changed_at=now,
        )
        trail.save(force_insert=True)
        Citation.objects.bulk_create([
            Citation(trail=trail, tenant=tenant, section_id=sid, position=pos, recorded_hash=hashes[sid])
            for pos, sid in enumerate(cited)
        ])
        if recall_event is not None:
            cited_set = set(cited)
            label = recall_label(recall_event, cited_set)
            first_label = recall_event.offered_cited is None
            RecallEvent.objects.filter(pk=recall_event.pk).update(
                recorded_trail=trail,
                served_cited=sum(1 for sid in recall_event.served_ids if sid in cited_set),
                offered_cited=label if first_label else recall_event.offered_cited,
                subject=subject or recall_event.subject,
            )
            if label is not None and first_label:
                # Only (would-be) served text that went uncited raises a boundary; any citation
                # lowers it. Shadow recalls teach the same way: nothing was served, so their
                # label is the agent's own unbiased choice.
                if label or _decided_outcome(recall_event) == RecallOutcome.PREFETCH:
                    trail_boundary_learn(tenant=tenant, trail_id=decided_trail(recall_event),
                                         confidence=recall_event.confidence, cited=label)
    return trail


def recall_label(event: RecallEvent, cited: set[str]) -> bool | None:
    """What the record following ``event`` says of it: True when it cited some of the sections
    the recall offered, False when none; None when the recall offered nothing (a miss)."""
    if _decided_outcome(event) == RecallOutcome.MISS or not decided_trail(event):
        return None
    offered = event.offered_ids or event.served_ids
    if not offered:
        return None
    return any(sid in cited for sid in offered)


def _decided_outcome(event: RecallEvent) -> str:
    """What recall decided: the answer, or in shadow mode what it would have answered."""
    return event.shadow_outcome or event.outcome


def decided_trail(event: RecallEvent) -> str | None:
    """The trail recall decided for (the served one, or the would-be one in shadow mode)."""
    if event.shadow_outcome:
        return str(event.trail_ids[0]) if event.trail_ids else None
    return str(event.trail_id) if event.trail_id else None


def trail_boundary_learn(*, tenant: Tenant, trail_id: object, confidence: float | None, cited: bool) -> None:
    """Move the trail's prefetch boundary by one label (engine/boundary.py)."""
    if trail_id is None or confidence is None:
        return
    with transaction.atomic():
        trail = Trail.objects.select_for_update().filter(tenant=tenant, pk=trail_id).only(
            "pk", "prefetch_boundary").first()
        if trail is None:
            return
        moved = boundary_after(boundary=trail.prefetch_boundary, confidence=confidence, cited=cited,
                               prefetch_confidence=tenant.prefetch_confidence)
        if moved != trail.prefetch_boundary:
            Trail.objects.filter(pk=trail.pk).update(prefetch_boundary=moved)


def trail_delete(*, tenant: Tenant, trail_id: object, actor_label: str = "system", actor: Any = None) -> None:
    """Delete one trail (its citations go with it); audited in the same transaction."""
    with transaction.atomic():
        trail = trail_get(caller=tenant_caller(tenant), trail_id=trail_id)
        trail_pk = str(trail.pk)
        trail.delete()
        audit_record(tenant=tenant, actor=actor, actor_label=actor_label, action=AuditAction.TRAIL_DELETE,
                     target=_trail_target([trail_pk]), details={"trail_ids": [trail_pk]})


def trail_set_status(
    *, tenant: Tenant, trail_ids: Iterable[object], status: TrailStatus, actor_label: str, actor: Any = None
) -> int:
    """Quarantine trails, or release them (→ active) after review; one audit entry per call.
    Returns how many changed."""
    ids = [str(i) for i in trail_ids]
    with transaction.atomic():
        changed = (
            Trail.objects.filter(tenant=tenant, pk__in=ids)
            .exclude(status=status)
            .update(status=status, status_changed_at=timezone.now())
        )
        if changed:
            action = AuditAction.TRAIL_QUARANTINE if status == TrailStatus.QUARANTINED else AuditAction.TRAIL_RELEASE
            audit_record(tenant=tenant, actor=actor, actor_label=actor_label, action=action,
                         target=_trail_target(ids), details={"trail_ids": ids, "count": changed})
    return changed


def trails_purge(*, tenant: Tenant, trail_ids: Iterable[object], actor_label: str, actor: Any = None) -> int:
    """Delete trails of a tenant (citations go with them); one audit entry. Returns how many."""
    ids = [str(i) for i in trail_ids]
    with transaction.atomic():
        _, by_model = Trail.objects.filter(tenant=tenant, pk__in=ids).delete()
        purged = by_model.get(Trail._meta.label, 0)
        if purged:
            audit_record(tenant=tenant, actor=actor, actor_label=actor_label, action=AuditAction.TRAIL_PURGE,
                         target=_trail_target(ids), details={"trail_ids": ids, "count": purged})
    return purged


def _trail_target(ids: list[str]) -> str:
    return f"trail {ids[0]}" if len(ids) == 1 else f"{len(ids)} trails"


