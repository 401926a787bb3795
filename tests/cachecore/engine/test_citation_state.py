"""A citation's state has one definition (cachecore.engine.outcome.section_state):
the recall's cited rows (engine.decide.Cited) carry it, the console counts it."""

from __future__ import annotations

from cachecore.engine.decide import Cited
from cachecore.engine.outcome import SectionState, state_counts


def _cited(recorded: str, current: str | None) -> Cited:
    return Cited(section_id="s", recorded_hash=recorded, current_hash=current, text=None, token_count=0, pk=None)


def test_a_cited_section_carries_its_state():
    assert _cited("a", "a").state is SectionState.VALID
    assert _cited("a", "b").state is SectionState.CHANGED
    assert _cited("a", None).state is SectionState.MISSING


def test_the_console_counts_are_the_states_counted():
    rows = [_cited("a", "a"), _cited("a", "b"), _cited("a", None), _cited("b", "b")]
    assert state_counts(c.state for c in rows) == {"valid": 2, "changed": 1, "missing": 1, "unverified": 0}
