"""The recall decision: one pure function from the evidence to the answer.

Recall reads the candidates and the cited sections' state in one snapshot, asks the resolver
(outside any transaction) about sections it does not mirror, and then calls ``decide()``. Every
threshold, band and margin lives here:

- a candidate *qualifies* when its first-stage score (the tenant's match mode) reaches
  ``similarity_threshold``; a trail none of whose cited sections is unchanged is stale;
- each qualifying live candidate gets a ``confidence`` from the calibrated scorer over its
  evidence (cosine, unexplained salient terms, coverage, lexical overlap, polarity); the
  most confident one is the answer's trail, unless an agent cited another for this very
  question before (engine/boundary.py: a positive); a trail found only through its sections
  whose question is unrelated to the query is held to the hint cut
  (``section_route_confidence``);
- ``prefetch`` only with confidence ≥ ``prefetch_confidence`` (higher in a tenant with fewer
  sections than the scorer was fitted on: ``small_tenant_prefetch_cut``), every cited section unchanged
  and served from text, no polarity conflict (unless an agent cited the trail for this very
  question over one: engine/boundary.py), no close rival citing other sections, no trail
  citing the same sections worded nearer the query and under the cut (``nearer_wording``),
  coverage not under the floor; otherwise ``hint`` with the first reason that applies; ``miss`` when
  no candidate reaches ``hint_confidence``;
- while a candidate's sections have no chunks yet (just upserted), the two questions' cosine
  stands in for their coverage, and a would-be prefetch or grey-band answer is a hint with
  ``coverage_pending``; a tenant whose operating point is paused answers hints only, except
  where a positive speaks for the trail: an agent cited it for this very question before, or the
  query is the question it was recorded for (engine/boundary.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from cachecore.engine.boundary import CONFIDENCE_DECIMALS, asked_before, blocks_prefetch, prefetch_cut
from cachecore.engine.budget import fit_to_budget
from cachecore.engine.evidence import (
    FEATURES,
    Idf,
    TextEvidence,
    TrailContext,
    match_features,
    restates,
    rival_coverage,
    sentence_rival,
)
from cachecore.engine.hint import hint_text
from cachecore.engine.outcome import Outcome, SectionState, section_state
from cachecore.engine.pairfeatures import HYBRID_COSINE_WEIGHT, PairScorer, trigram_similarity
from cachecore.engine.polarity import views_conflict
from cachecore.engine.scorer import MatchScorer, scorer_for
from cachecore.engine.text import content_hash


class Reason(StrEnum):
    """Why a recall answered what it did (``reason`` in every answer)."""

    MATCH = "match"                    # prefetch: the same need, strong evidence, all unchanged
    LOW_CONFIDENCE = "low_confidence"  # hint: evidence in the grey band
    AMBIGUOUS = "ambiguous"            # hint: a close rival cites other sections
    POLARITY = "polarity"              # hint: the questions ask opposite things
    CHANGED = "changed"                # hint: some cited sections changed or are gone
    UNVERIFIED = "unverified"          # hint: the resolver could not confirm some sections
    HASH_ONLY = "hash_only"            # hint: sections kept by hash only, no text here
    LOW_COVERAGE = "low_coverage"      # hint (escalated): the sections cover the query poorly
    NOT_CITED_BEFORE = "not_cited_before"  # hint: this trail's text went uncited at this confidence
    # hint: a trail citing the same sections, worded nearer the query, was not confident
    NEARER_WORDING = "nearer_wording"
    PREFETCH_PAUSED = "prefetch_paused"  # hint: no prefetch cut meets the tenant's target (hints only)
    COVERAGE_PENDING = "coverage_pending"  # hint: the cited sections' chunks are not embedded yet
    NO_CANDIDATE = "no_candidate"      # miss: no trail in the scope
    NO_MATCH = "no_match"              # miss: nothing similar or confident enough
    STALE = "stale"                    # miss: every matching trail's sections changed
    # miss: shadow mode. Never decided here: the service answers it for a scope in shadow mode
    # (the decision itself is logged, and shown only when the caller asks).
    SHADOW = "shadow"


# Trails merged into a prefetch are within this much cosine of the best one (measured: merging
# everything over the threshold tripled the evaluation's false hits). The one definition.
MERGE_SIMILARITY_MARGIN = 0.05
# How close an unrelated question comes: the 95th percentile of the cosine of random question
# pairs of the QQP slice's calibration side under the shipped model (0.1805;
# ``python -m research.section_route anchor``, docs/evaluation.md). Below it, a trail's question
# is no closer to the query than unrelated questions are (``section_route_confidence``).
SECTION_ROUTE_MIN_SIMILARITY = 0.18
AMBIGUITY_MARGIN = 0.05
# Where the evidence vector says whether a rival was known to weigh the cited text against.
RIVAL_KNOWN = FEATURES.index("rival_known")


class MatchMode(StrEnum):
    """How candidates are scored (the tenant's ``match_mode``: tenants.models.MatchMode holds the
    same values with labels; tests/cachecore/test_vocabulary.py pins them equal)."""

    EMBEDDING = "embedding"
    HYBRID = "hybrid"
    LEXICAL = "lexical"
    LEARNED = "learned"


@dataclass(frozen=True)
class Policy:
    """The tenant's matching settings plus the engine's fixed margins."""

    scorer: MatchScorer
    similarity_threshold: float
    prefetch_confidence: float
    hint_confidence: float
    coverage_floor: float
    match_mode: str = MatchMode.EMBEDDING
    polarity_guard: bool = True
    merge_trails: bool = True
    learned_scorer: PairScorer | None = None
    # Candidates whose cited text restates their question are scored by this one (scorer_for).
    question_scorer: MatchScorer | None = None
    merge_margin: float = MERGE_SIMILARITY_MARGIN
    # Two candidates this close in confidence that cite different sections: no prefetch. Chosen
    # on the calibration sides of the FAQ, Celery and QQP sets (0.1 before; docs/evaluation.md,
    # "The ambiguity margin").
    ambiguity_margin: float = AMBIGUITY_MARGIN
    # A trail found only through its sections whose question is further from the query than
    # this (cosine) is not confidently the same question (``section_route_confidence``).
    section_route_min_similarity: float = SECTION_ROUTE_MIN_SIMILARITY
    # The tenant's operating point found no cut that meets its target: hints only.
    prefetch_paused: bool = False
    # Raise the prefetch cut in a tenant with fewer sections than the scorer was fitted on
    # (``small_tenant_prefetch_cut``).
    small_tenant_cut: bool = True


# The match scorer was fitted on tenants of at least this many sections (the smallest corpus of
# its fit: Flask's documentation). In a tenant with fewer, every trail's margin over the best
# other section comes out larger (fewer sections could cover the query better), a
# close-but-different question's as much as a rewording's, and the same confidence is wrong more
# often: the same Flask and Celery items carved down to 20–150 sections serve 10–37 % of their
# close questions the trail they differ from at the shipped cut, against 2–3 % in the whole
# corpora. The prefetch cut such a tenant applies is raised to
# 1 - (1 - cut) * (sections / FITTED_SECTIONS) ** SMALL_TENANT_EXPONENT, the exponent chosen on
# the carved calibration sides (docs/evaluation.md, "Small tenants").
FITTED_SECTIONS = 378
SMALL_TENANT_EXPONENT = 1.3


def small_tenant_prefetch_cut(cut: float, sections: int) -> float:
    """The prefetch cut a tenant of ``sections`` sections applies for its setting ``cut``: the
    setting itself from ``FITTED_SECTIONS`` sections up or when the count is unknown (0), closer
    to 1 the fewer below. Hints and the trails' own cited bars (positives) are left as they are."""
    if sections <= 0 or sections >= FITTED_SECTIONS or cut >= 1.0:
        return cut
    return round(1.0 - (1.0 - cut) * (sections / FITTED_SECTIONS) ** SMALL_TENANT_EXPONENT, 6)


@dataclass(frozen=True)
class Cited:
    """A cited section as recall read it: the hash recorded on the trail, the section's current
    hash and text (one snapshot), and which of the query's terms its text holds."""

    section_id: str
    recorded_hash: str
    current_hash: str | None
    text: str | None
    token_count: int
    pk: int | None = None
    unverified: bool = False
    query_terms: frozenset[str] = frozenset()
    # Best cosine of the query, and of the trail's own question, against the section's chunks
    # of its current hash (None: no chunks ready).
    coverage: float | None = None
    trail_coverage: float | None = None
    # Best cosine of the query against the section's sentences of its current hash (None: no
    # sentences ready).
    sentence_coverage: float | None = None
    # The section exists but its scopes hide it from this read (issue 21): it counts as missing
    # and is never asked of the resolver.
    hidden: bool = False

    # The section has text but no chunks for its current hash yet (embedding still to come).
    chunks_pending: bool = False

    @property
    def state(self) -> SectionState:
        """Valid, changed or missing by the hashes alone (``verified_state`` adds the resolver's
        verdict and the text's own hash)."""
        return section_state(recorded_hash=self.recorded_hash, current_hash=self.current_hash)


@dataclass(frozen=True)
class Candidate:
    """A nearest trail as the search read it (``selectors.nearest``), with its cited sections
    as the snapshot read them (``selectors.citations``)."""

    trail_id: str
    similarity: float
    query_normalised: str
    steps: Any = field(default_factory=list, compare=False, repr=False)
    cited: tuple[Cited, ...] = ()
    # The trail's prefetch boundary learned from uncited offers (engine/boundary.py).
    boundary: float | None = None
    # The bar its positives set for this query: its offer was cited for the same question before,
    # so its text is served above this bar (engine/boundary.py). None: no such positive.
    cited_bar: float | None = None
    # One of those positives was cited over a polarity conflict (engine/boundary.py): for this
    # question the agent chose the trail whatever the polarity guard reads.
    cited_over_polarity: bool = False
    # Found through the sections that cover the query best (selectors.rivals), not among the
    # nearest questions: the cited text is similar enough, whatever the questions' cosine.
    via_sections: bool = False


@dataclass
class Scored:
    """A candidate with what ``decide`` found: section states, coverage, confidence."""

    candidate: Candidate
    states: list[SectionState]
    coverage: float | None = None
    trail_coverage: float | None = None
    confidence: float = 0.0
    features: list[float] = field(default_factory=list)
    polarity: str | None = None
    # The sections have text but their chunks are not embedded yet (just upserted): coverage is
    # unknown for now, not poor.
    coverage_pending: bool = False
    # The query is the trail's question, verbatim (normalised) or in other words (``restates``).
    same_question: bool = False

    @property
    def trail_id(self) -> str:
        return self.candidate.trail_id

    @property
    def valid(self) -> list[Cited]:
        return [c for c, s in zip(self.candidate.cited, self.states) if s is SectionState.VALID]

    def ids_in(self, state: SectionState) -> list[str]:
        return [c.section_id for c, s in zip(self.candidate.cited, self.states) if s is state]

    @property
    def all_valid(self) -> bool:
        return bool(self.states) and all(s is SectionState.VALID for s in self.states)

    @property
    def servable(self) -> bool:
        return all(c.text is not None for c in self.valid)


@dataclass
class RecallDecision:
    """The one shape of a recall's answer: the service adds its id and diagnostics beside it
    (``services.recall.RecallResult``) and the API renders it through its serializer."""

    outcome: Outcome
    reason: Reason
    confidence: float = 0.0
    trail_id: str | None = None
    trails: list[str] = field(default_factory=list)
    similarity: float | None = None
    coverage: float | None = None
    escalated: bool = False
    sections: list[dict[str, Any]] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)
    hint: str | None = None
    served_ids: list[str] = field(default_factory=list)
    stale_trail_ids: list[str] = field(default_factory=list)
    # Every candidate that qualified, with its confidence (for the log and the studies).
    scored: list[Scored] = field(default_factory=list)
    # The query asks the answer's trail's question again: the one it was recorded for
    # (``Scored.same_question``) or one an agent cited it for before (a positive's bar met). The
    # trail's own evidence decided the answer, not the prefetch cut (the operating point leaves
    # its label out).
    asked_again: bool = False


def verified_state(cited: Cited) -> SectionState:
    """The section's state now. Text that does not hash to the current hash (never expected)
    counts as changed, so it can never be served; an unconfirmed remote section is unverified."""
    if cited.unverified:
        return SectionState.UNVERIFIED
    current = cited.current_hash
    if cited.text is not None and current is not None and content_hash(cited.text) != current:
        current = ""
    return section_state(recorded_hash=cited.recorded_hash, current_hash=current)


def first_stage(policy: Policy, query: str, candidate: Candidate) -> bool:
    """Whether a candidate is similar enough to be considered, by the tenant's match mode. A
    redacted trail (no query text) matches by cosine in every mode. A trail found through the
    sections covering the query best qualifies by its cited text (that search applied the
    threshold to the sections' cosine)."""
    if candidate.via_sections:
        return True
    threshold = policy.similarity_threshold
    mode = policy.match_mode
    if mode == MatchMode.EMBEDDING or not candidate.query_normalised:
        return candidate.similarity >= threshold
    if mode == MatchMode.LEARNED:
        scorer = policy.learned_scorer
        return scorer is not None and scorer.matches(query, candidate.query_normalised, candidate.similarity)
    trigram = trigram_similarity(query, candidate.query_normalised)
    if mode == MatchMode.LEXICAL:
        return trigram >= threshold
    return HYBRID_COSINE_WEIGHT * candidate.similarity + (1 - HYBRID_COSINE_WEIGHT) * trigram >= threshold


def section_route_confidence(confidence: float, *, candidate: Candidate, policy: Policy) -> float:
    """A candidate's confidence that it asks the same thing as the query, for a trail found only
    through the sections covering the query best (``via_sections``) held to the hint cut when its
    question is unrelated to the query (cosine under ``section_route_min_similarity``). Its text
    may still answer: that is what the section evidence measures, and it cannot tell the section
    that answers from its neighbour on a corpus it was not fitted on. Such a trail is offered as
    a hint, never served as the same question's text; a positive (an agent citing it for this
    very question) still serves it (``boundary.prefetch_cut``)."""
    if candidate.via_sections and candidate.similarity < policy.section_route_min_similarity:
        return min(confidence, policy.hint_confidence)
    return confidence


def candidate_coverage(scored: Scored, *, of: str = "coverage") -> float | None:
    """Best cosine over the candidate's valid sections with text, of the ``Cited`` field ``of``:
    the query against their chunks (``coverage``), the trail's own question against them
    (``trail_coverage``), or the query against their sentences (``sentence_coverage``); unknown
    (None) unless every one of them has it for its current hash (a partial max could escalate
    wrongly)."""
    with_text = [c for c in scored.valid if c.text is not None]
    if not with_text or not scored.all_valid or not scored.servable:
        return None
    known = [x for x in (getattr(c, of) for c in with_text) if x is not None]
    return max(known) if len(known) == len(with_text) else None


def coverage_pending(scored: Scored) -> bool:
    """Coverage is unknown only because chunks are not ready: every cited section is valid with
    text, and some have no chunks for their current hash yet (a large upsert's chunk job)."""
    return scored.all_valid and scored.servable and any(c.chunks_pending for c in scored.valid)


def asked_as_recorded(*, query: str, candidates: Sequence[Candidate], policy: Policy) -> bool:
    """Whether ``decide`` serves a trail recorded for this very question (normalised) whatever
    else comes close: one of ``candidates`` (the nearest questions) has it, every section it cites
    is unchanged, visible and held here with text, its coverage is not under the floor, no
    negative like the query holds it back, and no candidate is one an agent cited for the question
    (a positive outranks it). Its confidence is then 1 and no rival makes it ambiguous, so the
    sections covering the query best (the recall's second read: the rival evidence and the trails
    found through sections) cannot change which trail is served; the service skips that read.
    Other trails merged beside it are judged without that evidence, as while chunks are pending."""
    if any(c.cited_bar is not None for c in candidates):
        return False
    for candidate in candidates:
        if not candidate.cited or candidate.query_normalised != query:
            continue
        scored = Scored(candidate, [verified_state(c) for c in candidate.cited])
        if not scored.all_valid or not scored.servable or any(c.hidden for c in candidate.cited):
            continue
        coverage = candidate_coverage(scored)
        if coverage is not None and coverage < policy.coverage_floor:
            continue
        if not blocks_prefetch(candidate.boundary, 1.0):
            return True
    return False


def _cite_other_sections(a: Scored, b: Scored) -> bool:
    """Neither cites all of the other's sections (then they are rivals, not the same path)."""
    ids_a = {c.section_id for c in a.candidate.cited}
    ids_b = {c.section_id for c in b.candidate.cited}
    return not (ids_a <= ids_b or ids_b <= ids_a)


def decide(
    *,
    query: str,
    candidates: Sequence[Candidate],
    policy: Policy,
    budget: int,
    idf: Idf,
    rivals: Sequence[tuple[str, float]] = (),
    sentence_rivals: Sequence[tuple[str, float]] = (),
) -> RecallDecision:
    """The answer to a recall of ``query`` (normalised) from its nearest candidates (best
    cosine first) with their cited sections' state and coverage. ``rivals``: the tenant's
    sections that cover the query best, best first (``selectors.rivals``), against which each
    candidate's cited text is weighed; ``sentence_rivals``: the best sentence cosine of those
    of them whose sentences are known."""
    if not candidates:
        return RecallDecision(Outcome.MISS, Reason.NO_CANDIDATE)
    if policy.small_tenant_cut:
        policy = replace(policy,
                         prefetch_confidence=small_tenant_prefetch_cut(policy.prefetch_confidence, idf.sections))
    top_similarity = round(candidates[0].similarity, 4)
    qualified = [c for c in candidates if first_stage(policy, query, c)]
    asked = TextEvidence.of(query)   # the query's side of every candidate's evidence, once
    # The cited text is read for the query's specifics only when it names some (most do not).
    specifics = bool(asked.specifics)
    stale: list[str] = []
    live: list[Scored] = []
    for candidate in qualified:
        scored = Scored(candidate, [verified_state(c) for c in candidate.cited])
        if not any(s in (SectionState.VALID, SectionState.UNVERIFIED) for s in scored.states):
            stale.append(candidate.trail_id)
            continue
        scored.coverage = candidate_coverage(scored)
        scored.trail_coverage = candidate_coverage(scored, of="trail_coverage")
        scored.coverage_pending = coverage_pending(scored)
        texts = [c.text for c in candidate.cited if c.text is not None] if specifics else []
        context = TrailContext(candidate.query_normalised, candidate.steps,
                               frozenset().union(*(c.query_terms for c in candidate.cited)),
                               cited_text=" ".join(texts).lower() if texts else None)
        # While chunks are pending, the cosine of the two questions stands in for the coverage the
        # chunks will give (the scorer reads unknown coverage as poor evidence): the answer is
        # then the hint it is likely to be, never a miss for want of chunks.
        proxy = candidate.similarity if scored.coverage_pending else None
        cited_ids = {c.section_id for c in candidate.cited}
        scored.features = match_features(query=asked, trail=context, cosine=candidate.similarity, idf=idf,
                                         coverage=scored.coverage if proxy is None else proxy,
                                         trail_coverage=scored.trail_coverage if proxy is None else proxy,
                                         rival=None if proxy is not None else rival_coverage(rivals, cited_ids),
                                         sentences=None if proxy is not None else
                                         candidate_coverage(scored, of="sentence_coverage"),
                                         sentence_rival=None if proxy is not None else
                                         sentence_rival(sentence_rivals, cited_ids),
                                         via_sections=candidate.via_sections)
        # The very same question (normalised), or the same question put in other words ("how can
        # I" for "how do I"), asks the same thing by definition; the scorer is calibrated on
        # rewordings and near misses, never on a question asked again, and must not
        # second-guess it.
        scored.same_question = bool(candidate.query_normalised) and (
            candidate.query_normalised == query or restates(asked, context.question, idf))
        scorer = scorer_for(scored.trail_coverage, document=policy.scorer, question=policy.question_scorer,
                            rivals_known=bool(scored.features[RIVAL_KNOWN]))
        scored.confidence = 1.0 if scored.same_question else section_route_confidence(
            scorer.score(scored.features), candidate=candidate, policy=policy)
        if policy.polarity_guard and candidate.query_normalised:
            scored.polarity = views_conflict(asked.polarity, context.question.polarity)
        live.append(scored)
    # Most confident first, except that a trail an agent cited for this very question before (a
    # positive's bar met) comes before the rest: the agent chose it over whatever came close.
    live.sort(key=lambda s: (asked_before(cited=s.candidate.cited_bar, boundary=s.candidate.boundary,
                                          confidence=s.confidence, hint_confidence=policy.hint_confidence),
                             s.confidence, s.candidate.similarity), reverse=True)
    confident = [s for s in live if s.confidence >= policy.hint_confidence]
    if not confident:
        reason = Reason.STALE if stale and not live else Reason.NO_MATCH
        best_confidence = live[0].confidence if live else 0.0
        return RecallDecision(Outcome.MISS, reason, confidence=round(best_confidence, CONFIDENCE_DECIMALS),
                              similarity=top_similarity, stale_trail_ids=stale, scored=live)
    best = confident[0]
    best_cut = _cut(policy, best)
    # The query asks the best trail's question again (the one it was recorded for, or one an
    # agent cited it for before): not in doubt, whatever else comes close (a negative like the
    # query is judged below, on its own).
    asked_again = _asked_again(best, policy)
    rival = None if asked_again else next(
        (s for s in confident[1:] if best.confidence - s.confidence <= policy.ambiguity_margin
         and _cite_other_sections(best, s)), None)
    escalated = best.coverage is not None and best.coverage < policy.coverage_floor
    if best.ids_in(SectionState.CHANGED) or best.ids_in(SectionState.MISSING):
        reason = Reason.CHANGED
    elif best.ids_in(SectionState.UNVERIFIED):
        reason = Reason.UNVERIFIED
    elif not best.servable:
        reason = Reason.HASH_ONLY
    elif best.polarity is not None and not (asked_again and best.candidate.cited_over_polarity):
        reason = Reason.POLARITY
    elif best.coverage_pending and not best.same_question:
        # Before ambiguity: the best one's evidence is a stand-in until its chunks are ready,
        # so how close a rival comes says little yet.
        reason = Reason.COVERAGE_PENDING
    elif rival is not None:
        reason = Reason.AMBIGUOUS
    elif best.confidence < (policy.prefetch_confidence if best_cut is None else best_cut):
        reason = Reason.LOW_CONFIDENCE
    elif _nearer_wording_in_doubt(best, live, policy):
        reason = Reason.NEARER_WORDING
    elif blocks_prefetch(best.candidate.boundary, best.confidence):
        reason = Reason.NOT_CITED_BEFORE
    elif escalated:
        reason = Reason.LOW_COVERAGE
    elif best_cut is None:
        reason = Reason.PREFETCH_PAUSED
    else:
        reason = Reason.MATCH
    decision = RecallDecision(
        Outcome.PREFETCH if reason is Reason.MATCH else Outcome.HINT, reason,
        confidence=round(best.confidence, CONFIDENCE_DECIMALS), trail_id=best.trail_id,
        similarity=round(best.candidate.similarity, 4),
        coverage=round(best.coverage, 4) if best.coverage is not None else None,
        escalated=escalated and best.all_valid and best.servable, steps=list(best.candidate.steps or []),
        stale_trail_ids=stale, scored=live, asked_again=asked_again,
    )
    # A coverage_pending hint names the best trail's sections only: the others' evidence is as
    # much a stand-in as its own until the chunks are ready.
    pending = reason is Reason.COVERAGE_PENDING
    others = [] if pending else _merged(best, confident[1:], policy, live=live,
                                        prefetch=decision.outcome is Outcome.PREFETCH)
    if rival is not None and rival not in others and not pending:
        others.append(rival)
    _fill(decision, best, others, budget)
    return decision


def _asked_again(scored: Scored, policy: Policy) -> bool:
    """The query asks this trail's question again: the one it was recorded for (verbatim or
    restated) or one an agent cited it for before (a positive's bar met). Its own evidence, not
    the prefetch cut or a rival, decides such an answer."""
    return scored.same_question or asked_before(cited=scored.candidate.cited_bar, boundary=None,
                                                confidence=scored.confidence,
                                                hint_confidence=policy.hint_confidence)


def _nearer_wording_in_doubt(scored: Scored, live: Sequence[Scored], policy: Policy) -> bool:
    """Whether a trail that cites the same sections as ``scored`` (neither cites one the other
    does not), with a question at least as near the query, is under the tenant's prefetch cut,
    so that ``scored``'s text is not served (the answer's trail, or one merged into it). Both
    stand for the same need; the nearer wording is the one a close-but-different question is
    worded from, and the scorer's doubt about it holds for the need they share. The further
    wording's confidence rests on what it lacks (few words in common with the query, as a
    rewording has), which a question asking another thing lacks too: a tenant whose cache grows
    with its users' accepted answers holds such wordings (docs/matching.md, "A nearer wording
    of the same sections"). The query being ``scored``'s own question, or one an agent cited it
    for (a positive's bar met), is not in doubt."""
    if _asked_again(scored, policy):
        return False
    return any(s is not scored and s.candidate.similarity >= scored.candidate.similarity
               and s.confidence < policy.prefetch_confidence and not _cite_other_sections(scored, s)
               for s in live)


def _merged(best: Scored, rest: Sequence[Scored], policy: Policy, *, live: Sequence[Scored],
            prefetch: bool) -> list[Scored]:
    """Other trails whose valid sections join the answer: near-equals of the best by cosine
    that are themselves confident enough for what is served, without a polarity conflict."""
    if not policy.merge_trails:
        return []
    return [s for s in rest if s.candidate.similarity >= best.candidate.similarity - policy.merge_margin
            and s.polarity is None and _confident_for(policy, s, live=live, prefetch=prefetch)]


def _cut(policy: Policy, scored: Scored) -> float | None:
    """The confidence this candidate's text needs (engine/boundary.prefetch_cut); None: none
    will do, prefetch is paused and nothing speaks for the trail (neither a positive nor the
    query being the question the trail was recorded for)."""
    return prefetch_cut(prefetch_confidence=policy.prefetch_confidence, hint_confidence=policy.hint_confidence,
                        paused=policy.prefetch_paused, cited=scored.candidate.cited_bar,
                        own_question=scored.same_question)


def _confident_for(policy: Policy, scored: Scored, *, live: Sequence[Scored], prefetch: bool) -> bool:
    """Whether a candidate is confident enough to join what is served: for text its own
    prefetch cut and bar, and no nearer wording of its sections in doubt; the hint cut for a
    hint."""
    if not prefetch:
        return scored.confidence >= policy.hint_confidence
    cut = _cut(policy, scored)
    return (cut is not None and scored.confidence >= cut
            and not blocks_prefetch(scored.candidate.boundary, scored.confidence)
            and not _nearer_wording_in_doubt(scored, live, policy))


def _fill(decision: RecallDecision, best: Scored, others: Sequence[Scored], budget: int) -> None:
    """Sections, trails, hint text and served ids of the answer."""
    extra: list[Cited] = []
    seen = {c.section_id for c in best.candidate.cited}
    contributing = [best.trail_id]
    for other in others:
        added = False
        for c in other.valid:
            if c.section_id not in seen:
                seen.add(c.section_id)
                extra.append(c)
                added = True
        if added:
            contributing.append(other.trail_id)
    decision.trails = contributing
    valid = best.valid + extra
    if decision.outcome is Outcome.PREFETCH:
        offered = [c for c in valid if c.text is not None]
        served_ids, decision.omitted = fit_to_budget([(c.section_id, c.token_count) for c in offered], budget)
        served = set(served_ids)
        decision.served_ids = served_ids
        decision.sections = [
            {"id": c.section_id, "status": SectionState.VALID.value, "text": c.text}
            if c.section_id in served else {"id": c.section_id, "status": SectionState.VALID.value}
            for c in offered
        ]
        return
    decision.sections = [{"id": c.section_id, "status": s.value} for c, s in zip(best.candidate.cited, best.states)]
    decision.sections += [{"id": c.section_id, "status": SectionState.VALID.value} for c in extra]
    decision.hint = hint_text(
        valid=[c.section_id for c in valid],
        changed=best.ids_in(SectionState.CHANGED),
        missing=best.ids_in(SectionState.MISSING),
        unverified=best.ids_in(SectionState.UNVERIFIED),
        escalated=decision.escalated,
        hash_only=not best.servable,
        reason=decision.reason.value,
    )
