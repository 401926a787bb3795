"""Recall: the nearest active trail, verified by content hash, as prefetch, hint or miss."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from cachecore import resolver, selectors
from cachecore.embedding import get_embedder
from cachecore.engine.budget import fit_to_budget
from cachecore.engine.hint import hint_text
from cachecore.engine.outcome import Outcome, SectionState, classify, section_state
from cachecore.engine.pairfeatures import HYBRID_COSINE_WEIGHT, default_scorer, trigram_similarity
from cachecore.engine.polarity import polarity_conflict
from cachecore.engine.text import content_hash, normalise_query
from cachecore.models import (
    MissReason,
    RecallEvent,
    Trail,
    TrailStatus,
)
from tenants.models import MatchMode, Tenant

# Trails merged into a recall are within this much cosine of the best one.
MERGE_SIMILARITY_MARGIN = 0.05


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
    # Every trail that contributed sections (the best first); more than one when merged.
    trails: list[str] = field(default_factory=list)


@dataclass
class _Checked:
    """A candidate trail with the state of each cited section now."""

    trail_id: str
    similarity: float
    cited: list[selectors.CitedSection]
    states: list[SectionState]
    steps: list[Any]

    @property
    def valid(self) -> list[selectors.CitedSection]:
        return [c for c, s in zip(self.cited, self.states) if s is SectionState.VALID]

    def ids_in(self, state: SectionState) -> list[str]:
        return [c.section_id for c, s in zip(self.cited, self.states) if s is state]


def _verified_hash(cited: selectors.CitedSection) -> str | None:
    """The section's current hash, checked against the text itself: text that does not hash
    to it (never expected) counts as changed, so it can never be served."""
    if cited.text is None or cited.current_hash is None or content_hash(cited.text) == cited.current_hash:
        return cited.current_hash
    return ""


def _resolve_remote(*, tenant: Tenant, cited_by_trail: dict[str, list[selectors.CitedSection]]) -> set[str]:
    """Fill in, from the tenant's resolver, sections not mirrored here (one batched call).
    Returns the ids that could not be verified (resolver down): they can only hint."""
    if not tenant.resolver_url:
        return set()
    remote = sorted({c.section_id for cited in cited_by_trail.values() for c in cited if c.current_hash is None})
    if not remote:
        return set()
    try:
        answered = resolver.resolve(tenant=tenant, section_ids=remote)
    except resolver.ResolverUnavailable:
        return set(remote)
    counter = get_embedder()
    for trail_id, cited in cited_by_trail.items():
        cited_by_trail[trail_id] = [
            replace(c, current_hash=answered[c.section_id].hash, text=answered[c.section_id].text,
                    token_count=counter.count_tokens(answered[c.section_id].text or ""))
            if c.current_hash is None and c.section_id in answered else c
            for c in cited
        ]
    return set()


def _matching_candidates(
    *, tenant: Tenant, query_normalised: str, candidates: list[selectors.Candidate]
) -> tuple[list[selectors.Candidate], bool]:
    """Candidates that match by the tenant's match mode and pass the polarity guard, best
    first; and whether the guard turned away any that matched.

    embedding: cosine >= similarity_threshold. lexical: pg_trgm-style trigram similarity of the
    normalised questions >= similarity_threshold. hybrid: the weighted sum of both (weight from
    the matcher study) >= similarity_threshold. learned: cosine >= the scorer's low first-stage
    threshold, then the pair scorer's decision (its own calibrated threshold). A trail whose
    query text was redacted has only its embedding: it matches by cosine in every mode."""
    mode = tenant.match_mode
    threshold = tenant.similarity_threshold

    def matches(c: selectors.Candidate) -> bool:
        if mode == MatchMode.EMBEDDING or not c.query_normalised:
            return c.similarity >= threshold
        if mode == MatchMode.LEARNED:
            return default_scorer().matches(query_normalised, c.query_normalised, c.similarity)
        trigram = trigram_similarity(query_normalised, c.query_normalised)
        if mode == MatchMode.LEXICAL:
            return trigram >= threshold
        weight = HYBRID_COSINE_WEIGHT
        return weight * c.similarity + (1 - weight) * trigram >= threshold

    passing = [c for c in candidates if matches(c)]
    if not tenant.polarity_guard:
        return passing, False
    kept = [c for c in passing if polarity_conflict(query_normalised, c.query_normalised) is None]
    return kept, len(kept) < len(passing)


def recall(
    *, tenant: Tenant, scope: str, query: str, budget_tokens: int | None = None, subject: str = ""
) -> RecallResult:
    """Look up the nearest active trails of the scope; serve sections' current text only if
    every cited hash of the best trail still matches (prefetch, merged with the valid sections
    of the other matching trails when the tenant merges), else a hint or a miss. Logged."""
    started = time.perf_counter()
    normalised = normalise_query(query)
    embedding = get_embedder().embed_one(normalised)
    budget = budget_tokens or tenant.default_budget_tokens
    result = RecallResult(recall_id="", outcome=Outcome.MISS)
    miss_reason = MissReason.NO_CANDIDATE
    served_ids: list[str] = []
    with transaction.atomic():
        # The recall's writes (its log entry, hit counters, a stale mark that read-time checks
        # would redo) may be lost in a crash; not waiting for the WAL flush saves a disk sync.
        with connection.cursor() as cur:
            cur.execute("SET LOCAL synchronous_commit = off")
        candidates = selectors.nearest_trails(tenant=tenant, scope=scope, embedding=embedding, limit=5)
        if candidates:
            result.similarity = round(candidates[0].similarity, 4)
        matching, guarded = _matching_candidates(tenant=tenant, query_normalised=normalised, candidates=candidates)
        if guarded and not matching:
            miss_reason = MissReason.GUARD
        if not tenant.merge_trails:
            matching = matching[:1]
        elif matching:
            # Merge only near-equals of the best match: a trail much further away answers a
            # neighbouring question (measured: merging everything over the threshold tripled
            # the evaluation's false hits).
            matching = [c for c in matching if c.similarity >= matching[0].similarity - MERGE_SIMILARITY_MARGIN]
        cited_by_trail = selectors.cited_sections_for_trails(trail_ids=[c.trail_id for c in matching])
        unverified = _resolve_remote(tenant=tenant, cited_by_trail=cited_by_trail)
        checked: list[_Checked] = []
        stale_ids: list[str] = []
        for candidate in matching:
            cited = cited_by_trail[candidate.trail_id]
            states = [
                SectionState.UNVERIFIED if c.section_id in unverified
                else section_state(recorded_hash=c.recorded_hash, current_hash=_verified_hash(c))
                for c in cited
            ]
            if classify(states, coverage=None, coverage_floor=0).stale:
                stale_ids.append(candidate.trail_id)
            else:
                checked.append(_Checked(candidate.trail_id, candidate.similarity, cited, states, candidate.steps))
        if stale_ids:
            Trail.objects.filter(pk__in=stale_ids, status=TrailStatus.ACTIVE).update(
                status=TrailStatus.STALE, status_changed_at=timezone.now()
            )
            if not checked:
                miss_reason = MissReason.STALE
        if checked:
            served_ids = _answer(result, checked=checked, tenant=tenant, embedding=embedding, budget=budget)
            Trail.objects.filter(pk__in=result.trails).update(hits=F("hits") + 1, last_hit_at=timezone.now())
        event = RecallEvent.objects.create(
            tenant=tenant, scope=scope, query=query, subject=subject,
            trail_id=result.trail_id, trail_ids=result.trails, outcome=result.outcome,
            miss_reason=miss_reason if result.outcome == Outcome.MISS else "",
            similarity=result.similarity, coverage=result.coverage, escalated=result.escalated,
            latency_ms=round((time.perf_counter() - started) * 1000, 3), served_ids=served_ids,
        )
    result.recall_id = str(event.pk)
    result.outcome = str(result.outcome)
    return result


def _answer(
    result: RecallResult, *, checked: list[_Checked], tenant: Tenant, embedding: Any, budget: int
) -> list[str]:
    """Fill ``result`` from the best live trail (and the others' valid sections); returns the
    ids whose text is served."""
    best, others = checked[0], checked[1:]
    extra: list[selectors.CitedSection] = []
    seen = {c.section_id for c in best.cited}
    for other in others:
        for c in other.valid:
            if c.section_id not in seen:
                seen.add(c.section_id)
                extra.append(c)
    valid = best.valid + extra
    servable = all(c.text is not None for c in best.valid)
    coverage = None
    if len(best.valid) == len(best.cited) and servable:
        scores = selectors.coverage_by_section(
            section_hashes={c.pk: c.current_hash for c in valid if c.text is not None}, embedding=embedding
        )
        # Known only when every valid section has chunks: a partial max could escalate wrongly.
        with_text = [c for c in valid if c.text is not None]
        coverage = max(scores.values()) if scores and len(scores) == len(with_text) else None
    decision = classify(best.states, coverage=coverage, coverage_floor=tenant.coverage_floor, servable=servable)
    result.outcome = decision.outcome
    result.trail_id = best.trail_id
    result.escalated = decision.escalated
    result.coverage = round(coverage, 4) if coverage is not None else None
    result.steps = best.steps
    contributing = [best.trail_id] + [o.trail_id for o in others if any(c in extra for c in o.valid)]
    result.trails = contributing
    if decision.outcome is Outcome.PREFETCH:
        offered = [c for c in valid if c.text is not None]
        served_ids, result.omitted = fit_to_budget([(c.section_id, c.token_count) for c in offered], budget)
        served = set(served_ids)
        result.sections = [
            {"id": c.section_id, "status": SectionState.VALID.value, "text": c.text}
            if c.section_id in served else {"id": c.section_id, "status": SectionState.VALID.value}
            for c in offered
        ]
        return served_ids
    result.sections = [{"id": c.section_id, "status": s.value} for c, s in zip(best.cited, best.states)]
    result.sections += [{"id": c.section_id, "status": SectionState.VALID.value} for c in extra]
    result.hint = hint_text(
        valid=[c.section_id for c in valid],
        changed=best.ids_in(SectionState.CHANGED),
        missing=best.ids_in(SectionState.MISSING),
        unverified=best.ids_in(SectionState.UNVERIFIED),
        escalated=decision.escalated,
        hash_only=not servable,
    )
    return []
