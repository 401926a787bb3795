"""Token budget for a prefetch."""

from __future__ import annotations

from collections.abc import Sequence


def fit_to_budget(items: Sequence[tuple[str, int]], budget: int) -> tuple[list[str], list[str]]:
    """Walk ``(id, tokens)`` in citation order; keep each section that still fits, omit the
    rest (a large section is skipped, later smaller ones may still fit). Returns
    ``(served_ids, omitted_ids)``, both in citation order."""
    served: list[str] = []
    omitted: list[str] = []
    used = 0
    for section_id, tokens in items:
        if used + tokens <= budget:
            served.append(section_id)
            used += tokens
        else:
            omitted.append(section_id)
    return served, omitted
