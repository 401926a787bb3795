"""Recall: read → resolve → decide → write.

1. **Read** the nearest active trails of the scope, their cited sections' current hash and
   text with the query's chunk coverage, the bars their negatives set, and the document
   frequencies of the query's terms — in one statement (one snapshot, one round trip).
2. **Resolve** sections the tenant does not mirror with its resolver (an HTTP call, outside any
   database transaction).
3. **Decide** in the engine (``engine/decide.py``): a pure function holds every threshold, band
   and margin and returns the outcome, reason, confidence and sections.
4. **Write** in one short statement: stale marks, hit counters and the recall log entry, after
   the answer outside a caller's transaction (``recall_log``).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from django.utils import timezone

from cachecore import resolver
from cachecore.access import require_permission, require_scope
from cachecore.embedding import get_embedder
from cachecore.engine.boundary import CONFIDENCE_DECIMALS, passed_over
from cachecore.engine.decide import (
    MERGE_SIMILARITY_MARGIN,
    Candidate,
    Cited,
    Policy,
    Reason,
    RecallDecision,
    asked_as_recorded,
    decide,
)
from cachecore.engine.evidence import FEATURES, Idf, rivals_complete
from cachecore.engine.outcome import Outcome
from cachecore.engine.pairfeatures import content_words, default_scorer
from cachecore.engine.scorer import default_match_scorer, default_question_scorer
from cachecore.engine.text import normalise_query
from cachecore.models import MissReason
from cachecore.selectors.nearest import vector_literal
from cachecore.selectors.recall_snapshot import recall_covering, recall_snapshot
from cachecore.services.recall_log import log_recall
from tenants.caller import Caller
from tenants.models import KeyPermission, MatchMode, Tenant

# Candidates read per recall.
CANDIDATES = 5


@dataclass(frozen=True)
class RecallDiagnostics:
    """What a recall measured about itself, for the metrics and the studies; never in the API."""

    # Seconds spent per phase (embedding, search, validation, scoring, write, total).
    timings: dict[str, float] = field(default_factory=dict)
    # Only with explain=True: each qualifying candidate's evidence.
    explain: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class RecallResult:
    """A recall: the engine's decision as answered (``answer``), plus only what belongs to the
    service: the logged recall's id, in shadow mode the decision itself when the caller asked
    (``shadow``; the answer is then a miss with reason ``shadow``), and the diagnostics."""

    recall_id: str
    answer: RecallDecision
    shadow: RecallDecision | None = None
    diagnostics: RecallDiagnostics = field(default_factory=RecallDiagnostics)


def tenant_policy(tenant: Tenant) -> Policy:
    """The engine's view of the tenant's matching settings."""
    return Policy(
        scorer=default_match_scorer(),
        question_scorer=default_question_scorer(),
        similarity_threshold=tenant.similarity_threshold,
        prefetch_confidence=tenant.prefetch_confidence,
        hint_confidence=tenant.hint_confidence,
        coverage_floor=tenant.coverage_floor,
        match_mode=tenant.match_mode,
        polarity_guard=tenant.polarity_guard,
        merge_trails=tenant.merge_trails,
        learned_scorer=default_scorer() if tenant.match_mode == MatchMode.LEARNED else None,
        merge_margin=MERGE_SIMILARITY_MARGIN,
        prefetch_paused=tenant.prefetch_paused,
        small_tenant_cut=tenant.small_tenant_cut,
    )


@dataclass(frozen=True)
class _Read:
    candidates: list[Candidate]
    idf: Idf
    # The tenant's sections covering the query best (the evidence against a trail citing others),
    # and the best sentence cosine of those whose sentences are known.
    rivals: list[tuple[str, float]] = field(default_factory=list)
    sentence_rivals: list[tuple[str, float]] = field(default_factory=list)


def _read(*, caller: Caller, scope: str, query: str, vector: str, terms: list[str], policy: Policy | None) -> _Read:
    """Every read in two statements (``selectors.recall_snapshot``), each one snapshot and one
    round trip, no transaction of their own. The first: the nearest trails with their cited
    sections, negatives and the term frequencies. The second: the sections covering the query
    best (each candidate's cited text is weighed against them), and, since a reworded question
    may share no word with the trail's, the trails citing the best few; not read when the first
    holds the trail recorded for this very question, which ``decide`` serves whatever else comes
    close (``decide.asked_as_recorded`` under ``policy``; without one, both are always read). A
    section the recall's scope may not see now is missing for it; a trail with negatives gets the
    bar they set."""
    snapshot = recall_snapshot(caller=caller, scope=scope, vector=vector, terms=terms, limit=CANDIDATES)
    if not snapshot.candidates or (policy is not None and asked_as_recorded(query=query, candidates=snapshot.candidates,
                                                                            policy=policy)):
        return _Read(snapshot.candidates, Idf(snapshot.sections, snapshot.df))
    cover = recall_covering(caller=caller, scope=scope, vector=vector, terms=terms,
                            threshold=caller.tenant.similarity_threshold,
                            exclude=[c.trail_id for c in snapshot.candidates])
    # While many sections wait for their chunks, the best-covering list may miss the one that
    # answers: no evidence against the others then (the rival is unknown), only candidates.
    complete = rivals_complete(pending=cover.chunks_pending, sections=snapshot.sections)
    rivals, sentences = (cover.sections, cover.sentences) if complete else ([], [])
    return _Read(snapshot.candidates + cover.candidates, Idf(snapshot.sections, snapshot.df), rivals, sentences)


def _resolve_remote(*, tenant: Tenant, candidates: list[Candidate]) -> list[Candidate]:
    """Fill in, from the tenant's resolver, sections not mirrored here (one batched call, no
    database transaction open); those it could not confirm (resolver down) are marked
    unverified."""
    if not tenant.resolver_url:
        return candidates
    remote = sorted({c.section_id for cand in candidates for c in cand.cited
                     if c.current_hash is None and not c.hidden})
    if not remote:
        return candidates
    try:
        answered = resolver.resolve(tenant=tenant, section_ids=remote)
    except resolver.ResolverUnavailable:
        return [replace(cand, cited=tuple(replace(c, unverified=True) if c.section_id in remote else c
                                         for c in cand.cited)) for cand in candidates]
    counter = get_embedder()

    def filled(c: Cited) -> Cited:
        if c.current_hash is not None or c.hidden or c.section_id not in answered:
            return c
        got = answered[c.section_id]
        return replace(c, current_hash=got.hash, text=got.text, token_count=counter.count_tokens(got.text or ""))

    return [replace(cand, cited=tuple(filled(c) for c in cand.cited)) for cand in candidates]


def recall(
    *, caller: Caller, scope: str, query: str, budget_tokens: int | None = None, subject: str = "",
    explain: bool = False, shadow_details: bool = False,
) -> RecallResult:
    """Look up the nearest active trails of the scope; serve sections' current text only when
    the evidence says it is the same need and every cited hash of the trail still matches
    (prefetch), else a hint or a miss, with a reason and a confidence. Logged. In shadow mode
    the decision is logged and the answer is a miss (its details only with ``shadow_details``).
    The caller needs the ``recall`` permission and the scope; a section whose scopes do not admit
    the recall's scope counts as missing."""
    require_permission(caller, KeyPermission.RECALL)
    require_scope(caller, scope)
    tenant = caller.tenant
    started = time.perf_counter()
    clock = _Clock(started)
    normalised = normalise_query(query)
    vector = vector_literal(get_embedder().embed_query(normalised, tenant=tenant.pk, subject=subject))
    terms = sorted(content_words(normalised))
    clock.lap("embedding")
    policy = tenant_policy(tenant)
    read = _read(caller=caller, scope=scope, query=normalised, vector=vector, terms=terms, policy=policy)
    clock.lap("search")
    candidates = _resolve_remote(tenant=tenant, candidates=read.candidates)
    clock.lap("validation")
    decision = decide(
        query=normalised, candidates=candidates, policy=policy,
        budget=budget_tokens or tenant.default_budget_tokens, idf=read.idf, rivals=read.rivals,
        sentence_rivals=read.sentence_rivals,
    )
    clock.lap("scoring")
    latency_ms = round((time.perf_counter() - started) * 1000, 3)
    shadow = tenant.shadows(scope)
    # A section hidden from this recall's scope is missing for it, not for the trail: never
    # mark a trail stale for what only its scopes hide.
    hiding = {c.trail_id for c in read.candidates if any(s.hidden for s in c.cited)}
    if hiding & set(decision.stale_trail_ids):
        decision = replace(decision, stale_trail_ids=[t for t in decision.stale_trail_ids if t not in hiding])
    recall_id = _write(tenant=tenant, scope=scope, query=query, subject=subject, decision=decision,
                       latency_ms=latency_ms, shadow=shadow)
    clock.lap("write")
    diagnostics = RecallDiagnostics(timings=clock.total(), explain=_explain(decision) if explain else None)
    if shadow:
        answer = RecallDecision(Outcome.MISS, Reason.SHADOW, similarity=decision.similarity)
        return RecallResult(str(recall_id), answer, shadow=decision if shadow_details else None,
                            diagnostics=diagnostics)
    return RecallResult(str(recall_id), decision, diagnostics=diagnostics)


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


def _miss_reason(decision: RecallDecision) -> str:
    if decision.outcome is not Outcome.MISS:
        return ""
    if decision.reason == "stale":
        return MissReason.STALE
    return MissReason.NO_CANDIDATE


def _write(*, tenant: Tenant, scope: str, query: str, subject: str, decision: RecallDecision,
           latency_ms: float, shadow: bool = False) -> uuid.UUID:
    """Log the recall (``recall_log``: stale marks, hit counters and the entry, after the answer
    outside a caller's transaction); its id is known before the write."""
    recall_id = uuid.uuid4()
    now = timezone.now()
    hit = decision.trails if decision.outcome is not Outcome.MISS else []
    confidence_of = {s.trail_id: s.confidence for s in decision.scored}
    # A miss is never labelled (services.trails.recall_label): nothing to learn from what it passed over.
    passed = passed_over(confidence_of.items(), set(hit)) if hit else []
    log_recall({
        "now": now, "tenant": tenant.pk, "stale": decision.stale_trail_ids, "hit": [] if shadow else hit,
        "trail_ids": hit, "trail_confidences": [round(confidence_of[t], CONFIDENCE_DECIMALS) for t in hit],
        "passed_trail_ids": [t for t, _ in passed],
        "passed_confidences": [round(c, CONFIDENCE_DECIMALS) for _, c in passed],
        "id": recall_id, "scope": scope, "query": query, "subject": subject,
        "trail": None if shadow else decision.trail_id,
        "outcome": str(Outcome.MISS) if shadow else str(decision.outcome),
        "shadow_outcome": str(decision.outcome) if shadow else "",
        "miss_reason": MissReason.NO_CANDIDATE if shadow else _miss_reason(decision),
        # Shadow rows keep the decision's own reason (shadow_outcome marks them).
        "reason": str(decision.reason),
        "confidence": decision.confidence, "similarity": decision.similarity,
        "coverage": decision.coverage, "escalated": decision.escalated, "asked_again": decision.asked_again,
        "latency": latency_ms,
        "served": [] if shadow else decision.served_ids, "offered": [s["id"] for s in decision.sections],
    })
    return recall_id


def _explain(decision: RecallDecision) -> list[dict[str, Any]]:
    return [
        {"trail_id": s.trail_id, "similarity": round(s.candidate.similarity, 4), "confidence": round(s.confidence, 4),
         "coverage": s.coverage, "polarity": s.polarity, "query_normalised": s.candidate.query_normalised,
         "via_sections": s.candidate.via_sections, "trail_coverage": s.trail_coverage,
         # The bars the trail's exemplars set for this query (engine/boundary.py): a negative's
         # boundary, a positive's cited bar; None where none applies.
         "boundary": s.candidate.boundary, "cited_bar": s.candidate.cited_bar,
         "features": dict(zip(FEATURES, s.features))}
        for s in decision.scored
    ]
