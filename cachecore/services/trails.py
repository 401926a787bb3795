"""Trails: record (admission), delete, quarantine/release, purge."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from cachecore import resolver
from cachecore.access import require_permission, require_scope
from cachecore.embedding import get_embedder
from cachecore.engine.boundary import (
    alike,
    bar_after_citation,
    boundary_after,
    cited_offer,
    learns_negative,
    learns_positive,
    negative_bar,
    passed_over_cited,
    positive_bar,
)
from cachecore.engine.outcome import SectionState, section_state
from cachecore.engine.text import normalise_query
from cachecore.errors import InvalidInput, NotFound, Unavailable, UnknownSections
from cachecore.models import (
    NO_EXEMPLAR,
    Citation,
    RecallEvent,
    RecallOutcome,
    Trail,
    TrailStatus,
)
from cachecore.selectors.recalls import trail_negatives
from cachecore.selectors.sections import sections_resolved
from cachecore.selectors.trails import trail_lock
from cachecore.services.admission import admission_decide
from cachecore.services.recall_log import recall_for_label
from tenants.caller import Caller
from tenants.models import AuditAction, KeyPermission, Tenant
from tenants.services import audit_record


def trail_record(
    *,
    caller: Caller,
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
    The caller needs ``record`` and the scope. Cited ids the caller cannot see are as unknown as
    ids never upserted (the tenant's resolver is asked for both alike) → UnknownSections; a
    ``recall_id`` the caller cannot see → InvalidInput, as one that never was (read once, locked
    for the label it gets). Nothing is written then. The cited sections found here are read
    again ``FOR SHARE`` in the write's transaction, and that read decides: one deleted or rescoped
    out of the caller's sight meanwhile is unknown; one rewritten meanwhile keeps the hash read
    first (the trail is stale when none is valid); one deleted or changed after the lock waits for
    this trail and then invalidates it like any other. Each citation binds to the section its id
    means for the caller (its namespace with it: docs/scopes.md, "Id namespaces"); an id only the
    tenant's resolver knows is a shared one."""
    require_permission(caller, KeyPermission.RECORD)
    require_scope(caller, scope)
    tenant = caller.tenant
    if len(set(cited)) != len(cited):
        raise InvalidInput("cited ids must be unique", fields={"cited": ["duplicate ids"]})
    # What each cited id means for the caller (selectors.sections.sections_resolved): the
    # citation binds to that section, its namespace with it.
    resolved = sections_resolved(caller=caller, section_ids=cited, fields=("sha256",))
    hashes = {sid: section.sha256 for sid, section in resolved.items()}
    namespaces = {sid: section.namespace for sid, section in resolved.items()}
    local = [i for i in cited if i in hashes]  # checked again under the write's lock, below
    unknown = [i for i in cited if i not in hashes]
    if unknown and tenant.resolver_url:
        try:
            hashes.update({k: v.hash for k, v in resolver.resolve(tenant=tenant, section_ids=unknown).items()})
        except resolver.ResolverUnavailable as exc:
            raise Unavailable(f"the tenant's resolver could not confirm cited ids: {exc}") from exc
        unknown = [i for i in cited if i not in hashes]
    if unknown:
        raise UnknownSections(unknown)
    normalised = normalise_query(query)
    embedder = get_embedder()
    embedding = embedder.embed_query(normalised, tenant=tenant.pk, subject=subject)
    source = (signal or {}).get("source") or ""
    accepted = (signal or {}).get("accepted")
    positive, verdict = admission_decide(tenant=tenant, signal=signal, answer=answer, cited=cited,
                                         namespaces=namespaces)
    now = timezone.now()
    status = TrailStatus.ACTIVE if positive else TrailStatus.PENDING
    expires = now + (timedelta(days=tenant.trail_ttl_days) if positive else timedelta(hours=tenant.pending_ttl_hours))
    with transaction.atomic():
        if local:
            # The check the write relies on: the same rows, locked until the trail and its
            # citations are committed (sections_upsert and section_delete lock them for update).
            now_resolved = sections_resolved(caller=caller, section_ids=local, lock="share", fields=("sha256",))
            # Gone, or now meaning another section (one of its own namespace created meanwhile).
            gone = [sid for sid in local if sid not in now_resolved or now_resolved[sid].namespace != namespaces[sid]]
            if gone:
                raise UnknownSections(gone)
            locked = {sid: section.sha256 for sid, section in now_resolved.items()}
            # A section rewritten meanwhile keeps the hash read first (what the agent read, as far
            # as we know); when no cited section is valid any more the trail is born stale, as the
            # rewrite's invalidation would have made it, had the trail existed.
            if any(locked[sid] != hashes[sid] for sid in local) and not any(
                    section_state(recorded_hash=hashes[sid], current_hash=locked.get(sid, hashes[sid]))
                    == SectionState.VALID for sid in cited):
                status = TrailStatus.STALE
        recall_event = None
        if recall_id is not None:
            try:
                recall_event = recall_for_label(caller=caller, recall_id=recall_id)
            except NotFound as exc:
                raise InvalidInput("unknown recall_id",
                                   fields={"recall_id": ["no such recall for this tenant"]}) from exc
            if not subject:
                subject = recall_event.subject  # the recall's subject: an erasure of it finds this trail too
        trail = Trail(
            tenant=tenant, scope=scope, query=query, query_normalised=normalised, embedding=embedding,
            embedding_model=embedder.version,
            steps=steps, status=status, signal_source=source, signal_accepted=accepted,
            verdict=verdict.as_dict() if verdict else None,
            subject=subject, expires_at=expires, status_changed_at=now,
        )
        trail.save(force_insert=True)
        Citation.objects.bulk_create([
            Citation(trail=trail, tenant=tenant, section_id=sid, section_namespace=namespaces.get(sid, ""),
                     position=pos, recorded_hash=hashes[sid])
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
                # An offer (text or hint) left uncited for other sections sets a negative for
                # queries like the recall's; a citation lowers the bars of those like it. Shadow
                # recalls teach the same way: nothing was served, so their label is the agent's
                # own unbiased choice.
                recalled = normalise_query(recall_event.query) if recall_event.query else ""
                trail_label_learn(
                    tenant=tenant, event=recall_event, label=label, cited=cited_set,
                    query_embedding=(embedding if recalled == normalised else
                                     embedder.embed_query(recalled, tenant=tenant.pk, subject=recall_event.subject)
                                     if recalled else None))
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


def trail_label_learn(*, tenant: Tenant, event: RecallEvent, label: bool, cited: set[str],
                      query_embedding: Any) -> None:
    """What one labelled recall teaches its trails (engine/boundary.py), kept on the recall's log
    entry as exemplars: a negative for the best trail when the offer went uncited for other
    sections, and beside it a positive for the candidate the answer passed over whose own
    sections the record cited instead (``chosen_for``); when an offered trail's own sections were
    cited (the best one's, or else one served beside it: merged, or the ambiguous rival), a
    positive for that trail. A positive serves the same question asked again, and lowers the bars
    of the trail's negatives like it. Without the recall's query (redacted) an exemplar has
    nothing to be local to and is not kept."""
    trail_id = decided_trail(event)
    if trail_id is None or event.confidence is None:
        return
    outcome = _decided_outcome(event)
    if learns_negative(decided_outcome=outcome, label=label, cited_any=bool(cited)):
        if query_embedding is not None:
            _exemplar_keep(tenant=tenant, event=event, trail_id=trail_id, cited=False,
                           bar=negative_bar(event.confidence), embedding=query_embedding)
        passed = [str(t) for t in event.passed_trail_ids]
        chosen = passed_over_cited(passed, event.passed_confidences, _citing(tenant, passed, cited))
        if chosen is None:
            return
        chosen_trail, confidence = chosen
        trail_boundary_learn(tenant=tenant, trail_id=chosen_trail, confidence=confidence, cited=True,
                             query_embedding=query_embedding)
        if query_embedding is not None:
            _chosen_keep(tenant=tenant, event=event, trail_id=chosen_trail, bar=positive_bar(confidence))
        return
    if not label:
        return
    offered, confidences = [str(t) for t in event.trail_ids], list(event.trail_confidences)
    if not offered or offered[0] != trail_id:   # recall logs the best one first; else teach it alone
        offered, confidences = [trail_id], []
    offer = cited_offer(offered, confidences, _citing(tenant, offered, cited), decided_confidence=event.confidence)
    if offer is None:
        return
    cited_trail, confidence = offer
    trail_boundary_learn(tenant=tenant, trail_id=cited_trail, confidence=confidence, cited=True,
                         query_embedding=query_embedding)
    if query_embedding is not None and learns_positive(decided_outcome=outcome, label=label):
        _exemplar_keep(tenant=tenant, event=event, trail_id=cited_trail, cited=True,
                       bar=positive_bar(confidence), embedding=query_embedding)


def _citing(tenant: Tenant, trail_ids: list[str], cited: set[str]) -> set[str]:
    """Which of ``trail_ids`` cite some of the ``cited`` sections (one query; none when empty)."""
    if not trail_ids or not cited:
        return set()
    return {str(t) for t in Citation.objects.filter(
        tenant=tenant, trail_id__in=trail_ids, section_id__in=list(cited)).values_list("trail_id", flat=True)}


def _exemplar_keep(*, tenant: Tenant, event: RecallEvent, trail_id: object, cited: bool, bar: float,
                   embedding: Any) -> None:
    """Keep ``event`` as an exemplar of its trail, the trail locked: a negative raises the trail's
    boundary to its bar, a positive marks the trail as having positives."""
    with transaction.atomic():
        trail = Trail.objects.select_for_update().filter(tenant=tenant, pk=trail_id).only(
            "pk", "prefetch_boundary", "has_positives").first()
        if trail is None:
            return
        RecallEvent.objects.filter(tenant=tenant, pk=event.pk).update(
            exemplar_for=trail.pk, exemplar_cited=cited, exemplar_embedding=embedding, exemplar_bar=bar,
            exemplar_embedding_model=get_embedder().version)
        if cited and not trail.has_positives:
            Trail.objects.filter(pk=trail.pk).update(has_positives=True)
        elif not cited and (trail.prefetch_boundary is None or bar > trail.prefetch_boundary):
            Trail.objects.filter(pk=trail.pk).update(prefetch_boundary=bar)


def _chosen_keep(*, tenant: Tenant, event: RecallEvent, trail_id: object, bar: float) -> None:
    """Keep ``event`` as the chosen trail's positive beside its negative (it shares the entry's
    embedding), the trail locked and marked as having positives."""
    with transaction.atomic():
        trail = Trail.objects.select_for_update().filter(tenant=tenant, pk=trail_id).only("pk", "has_positives").first()
        if trail is None:
            return
        kept = RecallEvent.objects.filter(tenant=tenant, pk=event.pk, exemplar_for__isnull=False).update(
            chosen_for=trail.pk, chosen_bar=bar)
        if kept and not trail.has_positives:
            Trail.objects.filter(pk=trail.pk).update(has_positives=True)


def _negatives_clear(*, tenant: Tenant, recall_ids: list[object]) -> None:
    """Clear negatives (their bars fell under the prefetch cut): an entry that also keeps a chosen
    trail's positive keeps it, as its exemplar; the others keep none."""
    chosen = Q(chosen_for__isnull=False)
    # In this order: the promoted entries have no chosen trail any more.
    RecallEvent.objects.filter(Q(tenant=tenant, pk__in=recall_ids) & ~chosen).update(**NO_EXEMPLAR)
    RecallEvent.objects.filter(Q(tenant=tenant, pk__in=recall_ids) & chosen).update(
        exemplar_for=F("chosen_for"), exemplar_cited=True, exemplar_bar=F("chosen_bar"), chosen_for=None,
        chosen_bar=None)


def trail_boundary_learn(*, tenant: Tenant, trail_id: object, confidence: float | None, cited: bool,
                         query_embedding: Any = None) -> None:
    """A citation of the trail at ``confidence`` (or explicit approval): the bars of its negatives
    like ``query_embedding`` (all of them without one) fall under it, those under the tenant's
    prefetch cut are cleared, and the trail keeps the highest bar left."""
    if trail_id is None or confidence is None or not cited:
        return
    with transaction.atomic():
        trail = Trail.objects.select_for_update().filter(tenant=tenant, pk=trail_id).only(
            "pk", "prefetch_boundary").first()
        if trail is None or trail.prefetch_boundary is None:
            return
        negatives = trail_negatives(tenant=tenant, trail_id=trail.pk, query_embedding=query_embedding)
        cleared, lowered = [], {}
        for neg in negatives:
            if not alike(neg.cosine):
                continue
            bar = bar_after_citation(bar=neg.bar, confidence=confidence,
                                     prefetch_confidence=tenant.prefetch_confidence)
            if bar is None:
                cleared.append(neg.recall_id)
            elif bar != neg.bar:
                lowered[neg.recall_id] = bar
        if cleared:
            _negatives_clear(tenant=tenant, recall_ids=cleared)
        for recall_id, bar in lowered.items():
            RecallEvent.objects.filter(tenant=tenant, pk=recall_id).update(exemplar_bar=bar)
        left = [lowered.get(n.recall_id, n.bar) for n in negatives if n.recall_id not in cleared]
        # A boundary without negatives (from before negatives were kept) falls as one did.
        boundary = max(left) if left else (
            None if negatives else boundary_after(boundary=trail.prefetch_boundary, confidence=confidence,
                                                  cited=True, prefetch_confidence=tenant.prefetch_confidence))
        if boundary != trail.prefetch_boundary:
            Trail.objects.filter(pk=trail.pk).update(prefetch_boundary=boundary)


def trail_delete(*, caller: Caller, trail_id: object) -> None:
    """Delete one trail the caller sees (its citations go with it): read once, locked for the
    delete; NotFound outside its tenant or scopes. Audited in the same transaction."""
    require_permission(caller, KeyPermission.RECORD)
    with transaction.atomic():
        trail = trail_lock(caller=caller, trail_id=trail_id)
        trail_pk = str(trail.pk)
        trail.delete()
        audit_record(tenant=caller.tenant, actor=caller.user, actor_label=caller.actor_label,
                     action=AuditAction.TRAIL_DELETE, target=_trail_target([trail_pk]),
                     details={"trail_ids": [trail_pk]})


def trail_set_status(*, caller: Caller, trail_ids: Iterable[object], status: TrailStatus) -> int:
    """Quarantine trails the caller sees, or release them (→ active) after review; one audit
    entry per call. Returns how many changed."""
    tenant, actor, actor_label = caller.tenant, caller.user, caller.actor_label
    ids = [str(i) for i in trail_ids]
    with transaction.atomic():
        changed = (
            Trail.objects.visible_to(caller).filter(pk__in=ids)
            .exclude(status=status)
            .update(status=status, status_changed_at=timezone.now())
        )
        if changed:
            action = AuditAction.TRAIL_QUARANTINE if status == TrailStatus.QUARANTINED else AuditAction.TRAIL_RELEASE
            audit_record(tenant=tenant, actor=actor, actor_label=actor_label, action=action,
                         target=_trail_target(ids), details={"trail_ids": ids, "count": changed})
    return changed


def trails_purge(*, caller: Caller, trail_ids: Iterable[object]) -> int:
    """Delete trails the caller sees (citations go with them); one audit entry. Returns how many."""
    tenant, actor, actor_label = caller.tenant, caller.user, caller.actor_label
    ids = [str(i) for i in trail_ids]
    with transaction.atomic():
        _, by_model = Trail.objects.visible_to(caller).filter(pk__in=ids).delete()
        purged = by_model.get(Trail._meta.label, 0)
        if purged:
            audit_record(tenant=tenant, actor=actor, actor_label=actor_label, action=AuditAction.TRAIL_PURGE,
                         target=_trail_target(ids), details={"trail_ids": ids, "count": purged})
    return purged


def _trail_target(ids: list[str]) -> str:
    return f"trail {ids[0]}" if len(ids) == 1 else f"{len(ids)} trails"


