"""Per-trail prefetch bars, learned from what agents cite: pure functions, no Django.

Every record that names the recall it followed (``recall_id``) is a free label for the trail that
recall offered: the agent cited what it was given, or it cited other sections. A trail offered (as
text or as a hint) whose sections went uncited while the record cited others keeps a *negative*:
that recall's query embedding with a bar at its confidence. The bar is local, vCache-style, a
threshold of the cached entry learned from its own outcomes: a later query **like that one**
(cosine to the negative's query at least ``LOCAL_SIMILARITY``) must beat the bar to be served the
trail's text (below, a hint with ``reason: "not_cited_before"``); other queries are judged as
before. A later citation of the trail for a query like it lowers the bar under that citation's
confidence (``RECOVERY_MARGIN``), and clears the negative once it falls under the tenant's
prefetch cut. The trail keeps the highest bar of its negatives as ``prefetch_boundary``: a
confidence above it needs no look at the negatives at all.
"""

from __future__ import annotations

from collections.abc import Iterable

# How far under a cited recall's confidence the bar falls.
RECOVERY_MARGIN = 0.02
# A query this close (cosine) to a negative's query asks what that one asked. Measured on the
# Python FAQ hard set (MiniLM): two close-but-different questions of one entry never reach 0.7
# (median 0.39); a rewording of the same question does, and 3.7 % of the entry's same-need
# rewordings sit this close to one of its close-but-different questions.
LOCAL_SIMILARITY = 0.75


def learns_negative(*, decided_outcome: str, label: bool | None, cited_any: bool) -> bool:
    """Whether a labelled recall sets a negative: its trail was offered (prefetch or hint), none of
    the offered sections was cited, and the record cited other sections."""
    return label is False and cited_any and decided_outcome in ("prefetch", "hint")


def negative_bar(confidence: float) -> float:
    """The bar a negative sets: its own confidence (a near repeat must be surer to be served)."""
    return min(1.0, max(0.0, confidence))


def bar_after_citation(*, bar: float, confidence: float, prefetch_confidence: float) -> float | None:
    """A negative's bar after a citation, for a query like it, at ``confidence``: lowered under it,
    None (cleared) once under the tenant's prefetch cut."""
    lowered = min(bar, confidence - RECOVERY_MARGIN)
    return None if lowered < prefetch_confidence else lowered


def alike(cosine: float | None) -> bool:
    """Whether a query at this cosine to a negative's query asks what that one asked (None: no
    query to compare, as for explicit feedback, which then concerns every negative)."""
    return cosine is None or cosine >= LOCAL_SIMILARITY


def local_bar(negatives: Iterable[tuple[float, float]]) -> float | None:
    """The bar for a query from (cosine to the negative's query, bar) of a trail's negatives:
    the highest among those like it; None when none is."""
    bars = [bar for cosine, bar in negatives if alike(cosine)]
    return max(bars) if bars else None


def boundary_after(*, boundary: float | None, confidence: float, cited: bool,
                   prefetch_confidence: float) -> float | None:
    """A trail-wide boundary after one labelled recall at ``confidence`` (no query to be local
    to: explicit feedback, or a recall whose query was redacted)."""
    if not cited:
        return max(boundary or 0.0, negative_bar(confidence))
    if boundary is None:
        return None
    return bar_after_citation(bar=boundary, confidence=confidence, prefetch_confidence=prefetch_confidence)


# The decimals a recall's confidence is answered and logged with; a bar is such a logged
# confidence.
CONFIDENCE_DECIMALS = 4


def blocks_prefetch(boundary: float | None, confidence: float) -> bool:
    """A trail with a bar for this query prefetches only above it. The confidence is compared
    as it is logged: the near miss asked again scores its own bar exactly, not a hair above."""
    return boundary is not None and round(confidence, CONFIDENCE_DECIMALS) <= boundary
