"""What a recall answers, decided from the states of the cited sections and the coverage."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    PREFETCH = "prefetch"
    HINT = "hint"
    MISS = "miss"


class MissReason(StrEnum):
    """Why a miss was logged (``RecallEvent.miss_reason``, empty for an answer): coarser than the
    answer's ``reason`` (``cachecore.engine.decide.Reason``), whose values these are."""

    NO_CANDIDATE = "no_candidate"  # nothing similar or confident enough (reasons no_candidate, no_match)
    STALE = "stale"                # every matching trail's sections changed (reason stale)


class SectionState(StrEnum):
    VALID = "valid"
    CHANGED = "changed"
    MISSING = "missing"
    # Kept by the tenant's resolver, which could not be asked just now.
    UNVERIFIED = "unverified"


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    escalated: bool = False
    # True when no cited section is unchanged: the trail must be marked stale.
    stale: bool = False


def section_state(*, recorded_hash: str, current_hash: str | None) -> SectionState:
    """A citation's state: the one definition recall, the console and the selectors use
    (``trails_invalidate_for_sections`` spells the same equality in SQL). Gone → missing;
    the hash the trail recorded is the section's hash now → valid; else changed."""
    if current_hash is None:
        return SectionState.MISSING
    return SectionState.VALID if current_hash == recorded_hash else SectionState.CHANGED


def state_counts(states: Iterable[SectionState]) -> dict[str, int]:
    """How many citations are in each state, every state named (zeros included)."""
    counts = dict.fromkeys(SectionState, 0)
    for state in states:
        counts[SectionState(state)] += 1
    return {state.value: n for state, n in counts.items()}


def classify(
    states: Sequence[SectionState],
    *,
    coverage: float | None,
    coverage_floor: float,
    servable: bool = True,
) -> Decision:
    """all valid → prefetch (hint + escalated when coverage is known and under the floor);
    some valid → hint; none valid → miss and stale. ``servable`` is False when a valid
    section has no text to serve (kept by hash only): such a trail can only hint. A section
    that could not be verified is never valid, but does not make the trail stale either."""
    if not states:
        return Decision(Outcome.MISS, stale=True)
    valid = sum(1 for s in states if s is SectionState.VALID)
    if valid == 0:
        if SectionState.UNVERIFIED in states:
            return Decision(Outcome.HINT)
        return Decision(Outcome.MISS, stale=True)
    if valid < len(states) or not servable:
        return Decision(Outcome.HINT)
    if coverage is not None and coverage < coverage_floor:
        return Decision(Outcome.HINT, escalated=True)
    return Decision(Outcome.PREFETCH)
