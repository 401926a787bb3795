"""Recall: the nearest active trail, verified by content hash, as prefetch, hint or miss."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from cachecore import selectors
from cachecore.embedding import get_embedder
from cachecore.engine.budget import fit_to_budget
from cachecore.engine.hint import hint_text
from cachecore.engine.outcome import Outcome, SectionState, classify, section_state
from cachecore.engine.text import content_hash, normalise_query
from cachecore.models import (
    MissReason,
    RecallEvent,
    Trail,
    TrailStatus,
)
from tenants.models import Tenant


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


