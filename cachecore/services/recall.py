"""Recall: read → resolve → decide → write.

1. **Read** the nearest active trails of the scope, their cited sections' current hash and
   text with the query's chunk coverage (one statement, one snapshot), and the document
   frequencies of the query's terms — in one read-only snapshot.
2. **Resolve** sections the tenant does not mirror with its resolver (an HTTP call, outside any
   database transaction).
3. **Decide** in the engine (``engine/decide.py``): a pure function holds every threshold, band
   and margin and returns the outcome, reason, confidence and sections.
4. **Write** in one short statement: stale marks, hit counters and the recall log entry.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from cachecore import resolver
from cachecore.embedding import get_embedder
from cachecore.engine.decide import MERGE_SIMILARITY_MARGIN, Candidate, Cited, Policy, RecallDecision, decide
from cachecore.engine.evidence import FEATURES, Idf
from cachecore.engine.outcome import Outcome
from cachecore.engine.pairfeatures import content_words, default_scorer
from cachecore.engine.scorer import default_match_scorer
from cachecore.engine.text import normalise_query
from cachecore.models import MissReason
from cachecore.selectors.citations import CitedSection, cited_sections_for_trails
from cachecore.selectors.nearest import Candidate as Neighbour
from cachecore.selectors.nearest import nearest_trails
from cachecore.selectors.sections import term_frequencies
from tenants.models import MatchMode, Tenant

# Candidates read per recall.
CANDIDATES = 5


@dataclass
class RecallResult:
    recall_id: str
    outcome: str
    reason: str = ""
    confidence: float = 0.0
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
    # Shadow mode, when the caller asked: what recall would have answered (ids, no text).
    shadow: dict[str, Any] | None = None
    # Seconds spent per phase (embedding, search, validation, scoring, write, total), for the
    # metrics. Never in the API.
    timings: dict[str, float] = field(default_factory=dict)
    # Only with explain=True (studies): each qualifying candidate's evidence. Never in the API.
    explain: list[dict[str, Any]] | None = None


def tenant_policy(tenant: Tenant) -> Policy:
    """The engine's view of the tenant's matching settings."""
    return Policy(
        scorer=default_match_scorer(),
        similarity_threshold=tenant.similarity_threshold,
        prefetch_confidence=tenant.prefetch_confidence,
        hint_confidence=tenant.hint_confidence,
        coverage_floor=tenant.coverage_floor,
        match_mode=tenant.match_mode,
        polarity_guard=tenant.polarity_guard,
        merge_trails=tenant.merge_trails,
        learned_scorer=default_scorer() if tenant.match_mode == MatchMode.LEARNED else None,
        merge_margin=MERGE_SIMILARITY_MARGIN,
    )


@dataclass
class _Read:
    candidates: list[Neighbour]
    cited: dict[str, list[CitedSection]]
    idf: Idf


def _read(*, tenant: Tenant, scope: str, embedding: Any, terms: list[str]) -> _Read:
    candidates = nearest_trails(tenant=tenant, scope=scope, embedding=embedding, limit=CANDIDATES)
    cited = cited_sections_for_trails(tenant=tenant, trail_ids=[c.trail_id for c in candidates],
                                      query_terms=terms, embedding=embedding)
    sections, df = term_frequencies(tenant=tenant, terms=terms) if candidates else (0, {})
    return _Read(candidates, cited, Idf(sections, df))


def _read_snapshot(*, tenant: Tenant, scope: str, embedding: Any, terms: list[str]) -> _Read:
    """Every read in one snapshot: a read-only repeatable-read transaction of its own (inside
    a caller's transaction, the reads simply join it)."""
    if connection.in_atomic_block:
        return _read(tenant=tenant, scope=scope, embedding=embedding, terms=terms)
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return _read(tenant=tenant, scope=scope, embedding=embedding, terms=terms)


def _resolve_remote(*, tenant: Tenant, cited_by_trail: dict[str, list[CitedSection]]) -> set[str]:
    """Fill in, from the tenant's resolver, sections not mirrored here (one batched call, no
    database transaction open). Returns the ids that could not be verified (resolver down)."""
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


def recall(
    *, tenant: Tenant, scope: str, query: str, budget_tokens: int | None = None, subject: str = "",
    explain: bool = False, shadow_details: bool = False,
) -> RecallResult:
    """Look up the nearest active trails of the scope; serve sections' current text only when
    the evidence says it is the same need and every cited hash of the trail still matches
    (prefetch), else a hint or a miss, with a reason and a confidence. Logged. In shadow mode
    the decision is logged and the answer is a miss (its details only with ``shadow_details``)."""
    started = time.perf_counter()
    clock = _Clock(started)
    normalised = normalise_query(query)
    embedding = get_embedder().embed_one(normalised)
    terms = sorted(content_words(normalised))
    clock.lap("embedding")
    policy = tenant_policy(tenant)
    read = _read_snapshot(tenant=tenant, scope=scope, embedding=embedding, terms=terms)
    clock.lap("search")
    unverified = _resolve_remote(tenant=tenant, cited_by_trail=read.cited)
    clock.lap("validation")
    candidates = [
        Candidate(c.trail_id, c.similarity, c.query_normalised, c.steps, tuple(
            Cited(s.section_id, s.recorded_hash, s.current_hash, s.text, s.token_count, s.pk,
                  unverified=s.section_id in unverified, query_terms=s.query_terms,
                  coverage=s.coverage, trail_coverage=s.trail_coverage)
            for s in read.cited.get(c.trail_id, [])
        ), boundary=c.boundary)
        for c in read.candidates
    ]
    decision = decide(
        query=normalised, candidates=candidates, policy=policy,
        budget=budget_tokens or tenant.default_budget_tokens, idf=read.idf,
    )
    clock.lap("scoring")
    latency_ms = round((time.perf_counter() - started) * 1000, 3)
    shadow = tenant.shadows(scope)
    recall_id = _write(tenant=tenant, scope=scope, query=query, subject=subject, decision=decision,
                       latency_ms=latency_ms, shadow=shadow)
    clock.lap("write")
    if shadow:
        return RecallResult(
            recall_id=str(recall_id), outcome=str(Outcome.MISS), reason=SHADOW_REASON, trail_id=None,
            similarity=decision.similarity,
            shadow=_shadow_details(decision) if shadow_details else None,
            explain=_explain(decision) if explain else None, timings=clock.total(),
        )
    return RecallResult(
        recall_id=str(recall_id), outcome=str(decision.outcome), reason=str(decision.reason),
        confidence=decision.confidence, trail_id=decision.trail_id, similarity=decision.similarity,
        coverage=decision.coverage, escalated=decision.escalated, sections=decision.sections,
        omitted=decision.omitted, steps=decision.steps, hint=decision.hint, trails=decision.trails,
        explain=_explain(decision) if explain else None, timings=clock.total(),
    )


class _Clock:
    """Seconds per phase of one recall."""

    def __init__(self, started: float) -> None:
        self.started = self.last = started
        self.phases: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases[phase] = now - self.last
        self.last = now

    def total(self) -> dict[str, float]:
        return {**self.phases, "total": self.last - self.started}


# The answer's reason in shadow mode (the decision's own reason is in the shadow details).
SHADOW_REASON = "shadow"


def _shadow_details(decision: RecallDecision) -> dict[str, Any]:
    return {
        "outcome": str(decision.outcome), "reason": str(decision.reason), "confidence": decision.confidence,
        "trail_id": decision.trail_id, "trails": decision.trails,
        "sections": [{"id": s["id"], "status": s["status"]} for s in decision.sections],
    }


def _miss_reason(decision: RecallDecision) -> str:
    if decision.outcome is not Outcome.MISS:
        return ""
    if decision.reason == "stale":
        return MissReason.STALE
    return MissReason.NO_CANDIDATE


# One UPDATE (one index scan in id order, so two recalls lock shared trails in the same order
# and cannot deadlock) marks stale trails and counts hits; the log entry goes with it.
_WRITE_SQL = """
    WITH touched AS (
        UPDATE cachecore_trail SET
            status = CASE WHEN id = ANY(%(stale)s::uuid[]) AND status = 'active' THEN 'stale' ELSE status END,
            status_changed_at = CASE WHEN id = ANY(%(stale)s::uuid[]) AND status = 'active' THEN %(now)s
                                     ELSE status_changed_at END,
            hits = CASE WHEN id = ANY(%(hit)s::uuid[]) THEN hits + 1 ELSE hits END,
            last_hit_at = CASE WHEN id = ANY(%(hit)s::uuid[]) THEN %(now)s ELSE last_hit_at END
        WHERE tenant_id = %(tenant)s AND id = ANY(%(stale)s::uuid[] || %(hit)s::uuid[])
    )
    INSERT INTO cachecore_recallevent (
        id, tenant_id, scope, query, subject, trail_id, trail_ids, outcome, shadow_outcome, miss_reason, reason,
        confidence, similarity, coverage, escalated, latency_ms, served_ids, offered_ids, created_at
    )
    SELECT %(id)s, %(tenant)s, %(scope)s, %(query)s, %(subject)s,
           (SELECT id FROM cachecore_trail WHERE tenant_id = %(tenant)s AND id = %(trail)s::uuid),
           %(trail_ids)s::uuid[], %(outcome)s,
           %(shadow_outcome)s,
           %(miss_reason)s, %(reason)s, %(confidence)s, %(similarity)s, %(coverage)s, %(escalated)s,
           %(latency)s, %(served)s::varchar[], %(offered)s::varchar[], %(now)s
"""


def _write(*, tenant: Tenant, scope: str, query: str, subject: str, decision: RecallDecision,
           latency_ms: float, shadow: bool = False) -> uuid.UUID:
    """Stale marks, hit counters and the log entry in one statement. The recall's writes may be
    lost in a crash (read-time checks redo a stale mark); not waiting for the WAL flush saves a
    disk sync."""
    recall_id = uuid.uuid4()
    now = timezone.now()
    hit = decision.trails if decision.outcome is not Outcome.MISS else []
    params = {
        "now": now, "tenant": tenant.pk, "stale": decision.stale_trail_ids, "hit": [] if shadow else hit,
        "trail_ids": hit, "id": recall_id, "scope": scope, "query": query, "subject": subject,
        "trail": None if shadow else decision.trail_id,
        "outcome": str(Outcome.MISS) if shadow else str(decision.outcome),
        "shadow_outcome": str(decision.outcome) if shadow else "",
        "miss_reason": MissReason.NO_CANDIDATE if shadow else _miss_reason(decision),
        # Shadow rows keep the decision's own reason (shadow_outcome marks them).
        "reason": str(decision.reason),
        "confidence": decision.confidence, "similarity": decision.similarity,
        "coverage": decision.coverage, "escalated": decision.escalated, "latency": latency_ms,
        "served": [] if shadow else decision.served_ids, "offered": [s["id"] for s in decision.sections],
    }
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                with connection.cursor() as cur:
                    cur.execute("SET LOCAL synchronous_commit = off")
                    cur.execute(_WRITE_SQL, params)
            break
        except OperationalError as exc:
            # Another writer locked the same trails in the other order: the statement is
            # all or nothing, so running it once more is safe.
            if attempt == 2 or getattr(exc.__cause__, "sqlstate", None) != "40P01":
                raise
    return recall_id


def _explain(decision: RecallDecision) -> list[dict[str, Any]]:
    return [
        {"trail_id": s.trail_id, "similarity": round(s.candidate.similarity, 4), "confidence": round(s.confidence, 4),
         "coverage": s.coverage, "polarity": s.polarity, "query_normalised": s.candidate.query_normalised,
         "features": dict(zip(FEATURES, s.features))}
        for s in decision.scored
    ]
