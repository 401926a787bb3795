"""Every write of the engine: sections, trails, recalls, feedback, erasure. The API, the
console and Celery tasks all call these."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from cachecore import selectors
from cachecore.embedding import get_embedder
from cachecore.engine.budget import fit_to_budget
from cachecore.engine.hint import hint_text
from cachecore.engine.outcome import Outcome, SectionState, classify, section_state
from cachecore.engine.text import content_hash, normalise_query, split_chunks
from cachecore.errors import InvalidInput, NotFound, UnknownSections
from cachecore.models import (
    Citation,
    MissReason,
    RecallEvent,
    Section,
    SectionChunk,
    SignalSource,
    Trail,
    TrailStatus,
)
from tenants.models import AuditAction, Tenant
from tenants.services import audit_record

# ---- sections -------------------------------------------------------------------------------


@dataclass(frozen=True)
class UpsertResult:
    created: int
    updated: int
    unchanged: int
    invalidated_trails: int


def sections_upsert(*, tenant: Tenant, sections: Sequence[dict[str, str]]) -> UpsertResult:
    """Create or update sections by external id; the server hashes the text. An identical
    rewrite changes nothing. Trails citing a changed section are invalidated (stale when every
    cited section changed). All or nothing."""
    ids = [s["id"] for s in sections]
    duplicates = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
    if duplicates:
        raise InvalidInput("duplicate section ids in one request",
                           fields={"sections": [f"duplicate id: {i}" for i in duplicates]})
    incoming = {s["id"]: s["text"] for s in sections}
    embedder = get_embedder()
    with transaction.atomic():
        existing = {
            s.external_id: s
            for s in Section.objects.select_for_update().filter(tenant=tenant, external_id__in=ids)
        }
        to_create: list[Section] = []
        to_update: list[Section] = []
        for section_id, text in incoming.items():
            digest = content_hash(text)
            current = existing.get(section_id)
            if current is None:
                to_create.append(Section(tenant=tenant, external_id=section_id, text=text, sha256=digest))
            elif current.sha256 != digest or current.text is None:
                current.text, current.sha256, current.chunks_ready = text, digest, False
                to_update.append(current)
        changed = to_create + to_update
        token_counts = embedder.count_tokens_batch([s.text or "" for s in changed])
        for section, tokens in zip(changed, token_counts):
            section.token_count = tokens
        now = timezone.now()
        Section.objects.bulk_create(to_create)
        for section in to_update:
            section.updated_at = now
        Section.objects.bulk_update(to_update, ["text", "sha256", "token_count", "chunks_ready", "updated_at"])
        changed_ids = [s.external_id for s in to_update]
        invalidated = trails_invalidate_for_sections(tenant=tenant, section_ids=changed_ids)
        section_chunks_schedule(section_pks=[s.pk for s in changed])
    return UpsertResult(
        created=len(to_create), updated=len(to_update),
        unchanged=len(incoming) - len(to_create) - len(to_update), invalidated_trails=invalidated,
    )


def section_delete(*, tenant: Tenant, section_id: str) -> int:
    """Delete a section; trails citing it see it as changed. Returns invalidated trails."""
    with transaction.atomic():
        deleted, _ = Section.objects.filter(tenant=tenant, external_id=section_id).delete()
        if not deleted:
            raise NotFound("section not found")
        return trails_invalidate_for_sections(tenant=tenant, section_ids=[section_id])


def trails_invalidate_for_sections(*, tenant: Tenant, section_ids: Sequence[str]) -> int:
    """Through the reverse index: trails citing any of ``section_ids`` are affected; those
    none of whose cited sections is unchanged become stale at once. Returns affected trails.
    Read-time validation stays the guarantee; this keeps statuses honest for the console."""
    if not section_ids:
        return 0
    with connection.cursor() as cur:
        cur.execute(
            """
            WITH affected AS (
                SELECT DISTINCT c.trail_id FROM cachecore_citation c
                JOIN cachecore_trail t ON t.id = c.trail_id
                WHERE c.tenant_id = %(tenant)s AND c.section_id = ANY(%(ids)s)
                  AND t.status IN ('active', 'pending')
            ), dead AS (
                SELECT a.trail_id FROM affected a
                WHERE NOT EXISTS (
                    SELECT 1 FROM cachecore_citation c2
                    JOIN cachecore_section s ON s.tenant_id = c2.tenant_id AND s.external_id = c2.section_id
                    WHERE c2.trail_id = a.trail_id AND s.sha256 = c2.recorded_hash
                )
            ), marked AS (
                UPDATE cachecore_trail SET status = 'stale', status_changed_at = now()
                WHERE id IN (SELECT trail_id FROM dead) RETURNING id
            )
            SELECT (SELECT count(*) FROM affected), (SELECT count(*) FROM marked)
            """,
            {"tenant": tenant.pk, "ids": list(section_ids)},
        )
        affected, _marked = cur.fetchone()
    return int(affected)


def section_chunks_schedule(*, section_pks: Sequence[int]) -> None:
    """Chunk embeddings for coverage: computed now for small upserts, in a background task
    for large ones (recall treats a section without ready chunks as coverage-unknown)."""
    if section_pks:
        section_chunks_compute(section_pks=section_pks)


def section_chunks_compute(*, section_pks: Sequence[int]) -> int:
    """(Re)compute chunk embeddings of the given sections from their current text.
    Idempotent; sections gone or without text are skipped. Returns chunks written."""
    sections = list(Section.objects.filter(pk__in=section_pks).only("pk", "text", "sha256"))
    pending: list[tuple[Section, list[str]]] = [
        (s, split_chunks(s.text)) for s in sections if s.text
    ]
    texts = [chunk for _, chunks in pending for chunk in chunks]
    vectors = get_embedder().embed(texts) if texts else []
    rows: list[SectionChunk] = []
    i = 0
    for section, chunks in pending:
        for ordinal, chunk in enumerate(chunks):
            rows.append(SectionChunk(section=section, ordinal=ordinal, sha256=section.sha256, text=chunk,
                                     embedding=vectors[i]))
            i += 1
    with transaction.atomic():
        # Only sections whose text did not change meanwhile get these chunks.
        current = dict(Section.objects.select_for_update().filter(pk__in=[s.pk for s, _ in pending])
                       .values_list("pk", "sha256"))
        fresh = {s.pk for s, _ in pending if current.get(s.pk) == s.sha256}
        SectionChunk.objects.filter(section_id__in=section_pks).delete()
        SectionChunk.objects.bulk_create([r for r in rows if r.section_id in fresh], batch_size=500)
        Section.objects.filter(pk__in=fresh).update(chunks_ready=True)
    return sum(1 for r in rows if r.section_id in fresh)


# ---- trails ---------------------------------------------------------------------------------


POSITIVE_SOURCES = {SignalSource.VERIFIER, SignalSource.USER, SignalSource.CALLER}


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
    hashes = selectors.sections_current_hashes(tenant=tenant, section_ids=cited)
    unknown = [i for i in cited if i not in hashes]
    if unknown:
        raise UnknownSections(unknown)
    recall_event = None
    if recall_id is not None:
        try:
            recall_event = selectors.recall_event_get(tenant=tenant, recall_id=recall_id)
        except NotFound as exc:
            raise InvalidInput("unknown recall_id", fields={"recall_id": ["no such recall for this tenant"]}) from exc
    normalised = normalise_query(query)
    embedding = get_embedder().embed_one(normalised)
    source = (signal or {}).get("source") or ""
    accepted = (signal or {}).get("accepted")
    positive = accepted is True and source in POSITIVE_SOURCES
    verdict = None
    now = timezone.now()
    status = TrailStatus.ACTIVE if positive else TrailStatus.PENDING
    expires = now + (timedelta(days=tenant.trail_ttl_days) if positive else timedelta(hours=tenant.pending_ttl_hours))
    with transaction.atomic():
        trail = Trail(
            tenant=tenant, scope=scope, query=query, query_normalised=normalised, embedding=embedding,
            steps=steps, status=status, signal_source=source, signal_accepted=accepted, verdict=verdict,
            subject=subject, expires_at=expires, status_changed_at=now,
        )
        trail.save(force_insert=True)
        Citation.objects.bulk_create([
            Citation(trail=trail, tenant=tenant, section_id=sid, position=pos, recorded_hash=hashes[sid])
            for pos, sid in enumerate(cited)
        ])
        if recall_event is not None:
            cited_set = set(cited)
            RecallEvent.objects.filter(pk=recall_event.pk).update(
                recorded_trail=trail,
                served_cited=sum(1 for sid in recall_event.served_ids if sid in cited_set),
                subject=subject or recall_event.subject,
            )
    return trail


def trail_delete(*, tenant: Tenant, trail_id: object) -> None:
    trail = selectors.trail_get(tenant=tenant, trail_id=trail_id)
    trail.delete()


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


# ---- recall ---------------------------------------------------------------------------------


@dataclass
class RecallResult:
    recall_id: str
    outcome: str
    trail_id: str | None = None
    similarity: float | None = None
    coverage: float | None = None
    escalated: bool = False
    sections: list[dict[str, Any]] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)
    hint: str | None = None


def _verified_hash(cited: selectors.CitedSection) -> str | None:
    """The section's current hash, checked against the text itself: text that does not hash
    to it (never expected) counts as changed, so it can never be served."""
    if cited.text is None or cited.current_hash is None or content_hash(cited.text) == cited.current_hash:
        return cited.current_hash
    return ""


def recall(
    *, tenant: Tenant, scope: str, query: str, budget_tokens: int | None = None, subject: str = ""
) -> RecallResult:
    """Look up the nearest active trail of the scope; serve its sections' current text only
    if every cited hash still matches (prefetch), else a hint or a miss. Logged."""
    started = time.perf_counter()
    normalised = normalise_query(query)
    embedding = get_embedder().embed_one(normalised)
    budget = budget_tokens or tenant.default_budget_tokens
    result = RecallResult(recall_id="", outcome=Outcome.MISS)
    miss_reason = MissReason.NO_CANDIDATE
    served_ids: list[str] = []
    with transaction.atomic():
        candidates = selectors.nearest_trails(tenant=tenant, scope=scope, embedding=embedding, limit=5)
        best = candidates[0] if candidates else None
        if best is not None and best.similarity >= tenant.similarity_threshold:
            cited = selectors.cited_sections_now(trail_id=best.trail_id)
            states = [section_state(recorded_hash=c.recorded_hash, current_hash=_verified_hash(c)) for c in cited]
            valid = [c for c, s in zip(cited, states) if s is SectionState.VALID]
            coverage = None
            servable = all(c.text is not None for c in valid)
            if valid and len(valid) == len(cited) and servable:
                scores = selectors.coverage_by_section(
                    section_hashes={c.pk: c.current_hash for c in valid}, embedding=embedding
                )
                # Known only when every valid section has chunks: a partial max could escalate wrongly.
                coverage = max(scores.values()) if scores and len(scores) == len(valid) else None
            decision = classify(states, coverage=coverage, coverage_floor=tenant.coverage_floor, servable=servable)
            result.similarity = round(best.similarity, 4)
            result.coverage = round(coverage, 4) if coverage is not None else None
            if decision.stale:
                miss_reason = MissReason.STALE
                Trail.objects.filter(pk=best.trail_id, status=TrailStatus.ACTIVE).update(
                    status=TrailStatus.STALE, status_changed_at=timezone.now()
                )
            else:
                trail = Trail.objects.only("steps").get(pk=best.trail_id)
                result.outcome = decision.outcome
                result.trail_id = best.trail_id
                result.escalated = decision.escalated
                result.steps = trail.steps
                if decision.outcome is Outcome.PREFETCH:
                    served_ids, result.omitted = fit_to_budget([(c.section_id, c.token_count) for c in cited], budget)
                    served = set(served_ids)
                    result.sections = [
                        {"id": c.section_id, "status": SectionState.VALID.value, "text": c.text}
                        if c.section_id in served else {"id": c.section_id, "status": SectionState.VALID.value}
                        for c in cited
                    ]
                else:
                    result.sections = [{"id": c.section_id, "status": s.value} for c, s in zip(cited, states)]
                    result.hint = hint_text(
                        valid=[c.section_id for c in valid],
                        changed=[c.section_id for c, s in zip(cited, states) if s is SectionState.CHANGED],
                        missing=[c.section_id for c, s in zip(cited, states) if s is SectionState.MISSING],
                        escalated=decision.escalated,
                        hash_only=not servable,
                    )
                Trail.objects.filter(pk=best.trail_id).update(hits=F("hits") + 1, last_hit_at=timezone.now())
        elif best is not None:
            result.similarity = round(best.similarity, 4)
        event = RecallEvent.objects.create(
            tenant=tenant, scope=scope, query=query, subject=subject,
            trail_id=result.trail_id, outcome=result.outcome,
            miss_reason=miss_reason if result.outcome == Outcome.MISS else "",
            similarity=result.similarity, coverage=result.coverage, escalated=result.escalated,
            latency_ms=round((time.perf_counter() - started) * 1000, 3), served_ids=served_ids,
        )
    result.recall_id = str(event.pk)
    result.outcome = str(result.outcome)
    return result


# ---- feedback -------------------------------------------------------------------------------


def feedback_apply(*, tenant: Tenant, recall_id: object, accepted: bool) -> RecallEvent:
    """Feedback on a recall. Negative: the trail it served is quarantined (kept for review),
    and a pending trail recorded after it too. Positive: the served trail is reinforced and a
    pending trail recorded after it becomes active."""
    with transaction.atomic():
        event = selectors.recall_event_get(tenant=tenant, recall_id=recall_id)
        event = RecallEvent.objects.select_for_update().get(pk=event.pk)
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
            recorded.update(
                status=TrailStatus.ACTIVE, status_changed_at=now, signal_source=SignalSource.USER,
                signal_accepted=True, expires_at=now + timedelta(days=tenant.trail_ttl_days),
            )
        else:
            served.update(negative_feedback=F("negative_feedback") + 1)
            served.exclude(status=TrailStatus.QUARANTINED).update(
                status=TrailStatus.QUARANTINED, status_changed_at=now
            )
            recorded.update(status=TrailStatus.QUARANTINED, status_changed_at=now)
    return event


# ---- erasure --------------------------------------------------------------------------------


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
