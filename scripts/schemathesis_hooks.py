"""Schemathesis hooks for scripts/schemathesis.sh: the rules across fields or items that JSON
Schema cannot state, and which the schema's 400 descriptions name instead. Data that breaks one
is not generated as *valid* data (it is still sent, and must be refused, as invalid data)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

import schemathesis

from api.inputs import parse_bounded_instant


def _bound(value: str, *, end_of_day: bool) -> datetime:
    """A bound as the export reads it (cachecore.selectors.trail_filters.instant): a bare date is
    that UTC day, a naive datetime is UTC."""
    parsed = parse_bounded_instant(value)
    if not isinstance(parsed, datetime):
        parsed = datetime.combine(parsed + timedelta(days=1) if end_of_day else parsed, time.min)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def breaks_a_rule_across_fields(label: str, body: Any) -> bool:
    """True for a body the schema allows that a rule it cannot state refuses (400): duplicate
    section ids in one upsert, ``since`` not before ``until``, a ``recall_id`` of no recall."""
    if not isinstance(body, dict):
        return False
    if label == "PUT /api/v1/sections" and isinstance(body.get("sections"), list):
        ids = [s.get("id") for s in body["sections"] if isinstance(s, dict)]
        return len(ids) != len(set(map(str, ids)))
    if label == "POST /api/v1/trails":
        # A recall_id must name a recall of this tenant (400 otherwise): no link hands one over.
        return body.get("recall_id") is not None
    if label == "POST /api/v1/exports" and body.get("since") and body.get("until"):
        try:
            return _bound(body["since"], end_of_day=False) >= _bound(body["until"], end_of_day=True)
        except (TypeError, ValueError):
            return False
    return False


@schemathesis.hook
def filter_case(context: schemathesis.HookContext, case: schemathesis.Case) -> bool:
    mode = getattr(getattr(getattr(case, "meta", None), "generation", None), "mode", None)
    if mode is None or not mode.is_positive:
        return True
    return not breaks_a_rule_across_fields(case.operation.label, case.body)
