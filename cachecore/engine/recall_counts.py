"""What the recall log counts: one definition of each count over recall events.

The stats endpoint and the dashboard aggregate raw events with these
(``cachecore.selectors.stats.recall_counts``), the dashboard's per-day bars too, and the
daily roll-up writes the same counts per tenant, scope and day in SQL
(``cachecore.services.rollups``), so a count can't mean one thing in a chart and another in
the totals. Pure: a count is data (the conditions an event meets), rendered here as SQL and
evaluated here in Python; the ORM rendering lives with the selectors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cachecore.engine.outcome import MissReason, Outcome

# (field, operator, value): the operators SQL and the ORM both spell without surprises.
# "=", "<>" and ">" never match NULL (as in SQL); "is" / "is not" compare with True, False
# or None.
Condition = tuple[str, str, Any]
OPERATORS = ("=", "<>", ">", "is", "is not")

STALE = MissReason.STALE.value  # RecallEvent.miss_reason of a miss because every matching trail was stale

# Count name → the conditions (all of them) a recall event meets to be counted.
RECALL_COUNTS: dict[str, tuple[Condition, ...]] = {
    "recalls": (),
    "prefetch": (("outcome", "=", Outcome.PREFETCH.value),),
    "hint": (("outcome", "=", Outcome.HINT.value),),
    "miss": (("outcome", "=", Outcome.MISS.value),),
    "stale": (("miss_reason", "=", STALE),),
    "escalated": (("escalated", "is", True),),
    "feedback_positive": (("feedback", "is", True),),
    "feedback_negative": (("feedback", "is", False),),
    # A prefetch whose served sections the following record cited (what ``savings`` counts).
    "cited_prefetches": (("outcome", "=", Outcome.PREFETCH.value), ("served_cited", ">", 0)),
    "shadow_recalls": (("shadow_outcome", "<>", ""),),
    "shadow_prefetch": (("shadow_outcome", "=", Outcome.PREFETCH.value),),
    "shadow_hint": (("shadow_outcome", "=", Outcome.HINT.value),),
    "shadow_prefetch_labelled": (("shadow_outcome", "=", Outcome.PREFETCH.value), ("offered_cited", "is not", None)),
    "shadow_prefetch_uncited": (("shadow_outcome", "=", Outcome.PREFETCH.value), ("offered_cited", "is", False)),
}

# The counts every outcome summary shows (stats for a tenant, for all tenants).
OUTCOME_COUNTS = ("recalls", "prefetch", "hint", "miss", "stale", "escalated")


def conditions(name: str) -> tuple[Condition, ...]:
    """The conditions of a count; KeyError names an unknown one."""
    try:
        return RECALL_COUNTS[name]
    except KeyError:
        raise KeyError(f"not a recall count: {name!r} (known: {', '.join(RECALL_COUNTS)})") from None


def _holds(condition: Condition, value: Any) -> bool:
    _field, op, expected = condition
    if op == "is":
        return value is expected
    if op == "is not":
        return value is not expected
    if value is None:
        return False
    if op == "=":
        return value == expected
    if op == "<>":
        return value != expected
    if op == ">":
        return value > expected
    raise ValueError(f"unknown operator {op!r}")


def counted(name: str, event: Mapping[str, Any]) -> bool:
    """Whether a recall event (its fields by name) is counted in ``name``."""
    return all(_holds(c, event.get(c[0])) for c in conditions(name))


def count_events(events: Iterable[Mapping[str, Any]], names: Iterable[str] = RECALL_COUNTS) -> dict[str, int]:
    """The counts of ``names`` over events, in Python (what the SQL and the ORM compute)."""
    rows = list(events)
    return {name: sum(1 for e in rows if counted(name, e)) for name in names}


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def sql_condition(name: str) -> str:
    """The count's conditions as a SQL boolean expression over the recall event's columns."""
    parts = [f"{field} {op.upper()} {_sql_literal(value)}" for field, op, value in conditions(name)]
    return " AND ".join(parts) if parts else "TRUE"


def sql_count(name: str) -> str:
    """The count as a SQL aggregate: ``count(*)``, or ``count(*) FILTER (WHERE …)``."""
    return "count(*)" if not conditions(name) else f"count(*) FILTER (WHERE {sql_condition(name)})"
