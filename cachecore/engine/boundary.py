"""Per-trail prefetch boundaries, learned from what agents cite: pure functions, no Django.

Every record that names the recall it followed (``recall_id``) is a free label for the trail that
recall served: the agent cited what it was given, or it did not. A trail whose served sections
were not cited must beat that confidence next time to be served as text again (below, it is a
hint with ``reason: "not_cited_before"``); a later citation at some confidence lowers the
boundary under that confidence again, and clears it once it falls under the tenant's prefetch
cut. The boundary only ever sits in [prefetch cut, 1], and one label moves it once.
"""

from __future__ import annotations

# How far under a cited recall's confidence the boundary falls.
RECOVERY_MARGIN = 0.02


def boundary_after(*, boundary: float | None, confidence: float, cited: bool,
                   prefetch_confidence: float) -> float | None:
    """The trail's boundary after one labelled recall at ``confidence``."""
    if not cited:
        return max(boundary or 0.0, min(1.0, confidence))
    if boundary is None:
        return None
    lowered = min(boundary, confidence - RECOVERY_MARGIN)
    return None if lowered < prefetch_confidence else lowered


def blocks_prefetch(boundary: float | None, confidence: float) -> bool:
    """A trail with a boundary prefetches only above it."""
    return boundary is not None and confidence <= boundary
