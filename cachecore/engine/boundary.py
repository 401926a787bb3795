"""Per-trail prefetch bars, learned from what agents cite: pure functions, no Django.

Every record that names the recall it followed (``recall_id``) is a free label for the trail that
recall offered: the agent cited what it was given, or it cited other sections. The labelled recall
is kept for its trail as an *exemplar*: its query embedding and a bar.

A trail offered (as text or as a hint) whose sections went uncited while the record cited others
keeps a *negative*: that recall's query embedding with a bar at its confidence. The bar is local, vCache-style, a
threshold of the cached entry learned from its own outcomes: a later query **like that one**
(cosine to the negative's query at least ``LOCAL_SIMILARITY``) must beat the bar to be served the
trail's text (below, a hint with ``reason: "not_cited_before"``); other queries are judged as
before. A later citation of the trail for a query like it lowers the bar under that citation's
confidence (``RECOVERY_MARGIN``), and clears the negative once it falls under the tenant's
prefetch cut. The trail keeps the highest bar of its negatives as ``prefetch_boundary``: a
confidence above it needs no look at the negatives at all.

A trail offered whose sections the record cited keeps a *positive*: the same query asked again
(cosine at least ``POSITIVE_SIMILARITY`` to the positive's query) is served the trail's text
above the positive's bar, just under the confidence it was cited at, even where the tenant's cut
is higher or prefetch is paused tenant-wide: the trail's own outcome for that question is better
evidence than the tenant-wide rate (vCache's per-entry threshold). Never under the tenant's hint
cut, and a negative like the query still holds the trail back. A single label is not a bound:
one flipped label serves one question's wrong text until a record that cites other sections
sets a negative beside it.

The question a trail was recorded for is a positive of its own: the trail is served only after a
positive signal for that question (user, caller or the verifier), as if its text had been
offered at confidence 1 and cited. So the very question asked again (``decide``'s
``same_question``: verbatim, or the same words put another way) is served above
``OWN_QUESTION_BAR`` while prefetch is paused, and a negative like it holds the trail back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

# How far under a cited recall's confidence the bar falls.
RECOVERY_MARGIN = 0.02
# A query this close (cosine) to a negative's query asks what that one asked. Measured on the
# Python FAQ hard set (MiniLM): two close-but-different questions of one entry never reach 0.7
# (median 0.39); a rewording of the same question does, and 3.7 % of the entry's same-need
# rewordings sit this close to one of its close-but-different questions.
LOCAL_SIMILARITY = 0.75
# A query this close (cosine) to a positive's query asks the same question again. Measured on the
# calibration sides of the Celery and Python FAQ hard sets (``research.alike_queries``): 1 of 207
# and 1 of 177 close-but-different questions sit this close to a same-need question of their
# own item; two rewordings of one Celery question never do (median 0.38), so a positive serves
# the repeat, not the rewording.
POSITIVE_SIMILARITY = 0.9


def learns_negative(*, decided_outcome: str, label: bool | None, cited_any: bool) -> bool:
    """Whether a labelled recall sets a negative: its trail was offered (prefetch or hint), none of
    the offered sections was cited, and the record cited other sections."""
    return label is False and cited_any and decided_outcome in ("prefetch", "hint")


def learns_positive(*, decided_outcome: str, label: bool | None) -> bool:
    """Whether a labelled recall sets a positive: it offered trails (prefetch or hint) and the
    record cited some of the offered sections (``cited_offer`` says whose)."""
    return label is True and decided_outcome in ("prefetch", "hint")


def cited_offer(offered: Sequence[str], confidences: Sequence[float], cited_trails: AbstractSet[str], *,
                decided_confidence: float) -> tuple[str, float] | None:
    """The offered trail a cited recall teaches, with the confidence it was offered at: the first
    of ``offered`` (the recall's trails, best first) whose own sections the record cited
    (``cited_trails``). A trail served beside the best one (merged, or the ambiguous rival) that
    the agent cited instead is the one the question asked for. The best one's confidence is the
    recall's (``decided_confidence``); another's is its own, logged in ``confidences`` (a row
    logged without them teaches the best one only). None: no offered trail's section was cited."""
    for index, trail_id in enumerate(offered):
        if trail_id not in cited_trails:
            continue
        if index == 0:
            return trail_id, decided_confidence
        if index < len(confidences):
            return trail_id, confidences[index]
        return None
    return None


# How many of the candidates an answer did not name the recall log keeps, most confident first.
PASSED_OVER = 3


def passed_over(scored: Iterable[tuple[str, float]], named: AbstractSet[str]) -> list[tuple[str, float]]:
    """The candidates (trail id, confidence) an answer did not name, most confident first, at
    most ``PASSED_OVER``: a record that cites one of them instead of what was offered says that
    the agent chose it for this question (``passed_over_cited``)."""
    rest = sorted(((t, c) for t, c in scored if t not in named), key=lambda tc: tc[1], reverse=True)
    return rest[:PASSED_OVER]


def passed_over_cited(passed: Sequence[str], confidences: Sequence[float],
                      cited_trails: AbstractSet[str]) -> tuple[str, float] | None:
    """The passed-over candidate a record teaches, with its logged confidence: the first of
    ``passed`` (most confident first) whose own sections the record cited; None when none was."""
    for trail_id, confidence in zip(passed, confidences, strict=False):
        if trail_id in cited_trails:
            return trail_id, confidence
    return None


def asked_before(*, cited: float | None, boundary: float | None, confidence: float, hint_confidence: float) -> bool:
    """Whether a candidate is the trail an agent cited for this very question before: a positive's
    bar (``cited``) met, never under the hint cut, and no negative like the query holding it back.
    Such a candidate outranks the others: the agent chose it over whatever else came close."""
    return (cited is not None and confidence >= max(cited, hint_confidence)
            and not blocks_prefetch(boundary, confidence))


def positive_bar(confidence: float) -> float:
    """The bar a positive sets: just under the confidence its offer was cited at."""
    return min(1.0, max(0.0, confidence - RECOVERY_MARGIN))


# The bar of the positive a trail's own recorded question is: cited at confidence 1.
OWN_QUESTION_BAR = positive_bar(1.0)


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


def cited_bar(positives: Iterable[tuple[float, float]]) -> float | None:
    """The bar above which the trail's text may be served for a query, from (cosine to the
    positive's query, bar) of a trail's positives: the lowest among those asking the same
    question again; None when none does."""
    bars = [bar for cosine, bar in positives if cosine is not None and cosine >= POSITIVE_SIMILARITY]
    return min(bars) if bars else None


def exemplar_bars(exemplars: Iterable[tuple[float, float, bool]], *,
                  boundary: float | None) -> tuple[float | None, float | None]:
    """A trail's (boundary, cited bar) for a query from its exemplars (cosine to the query, bar,
    cited): the negatives like it set the boundary (the trail-wide ``boundary`` when it has no
    negatives at all), the positives asking it again the cited bar."""
    rows = list(exemplars)
    negatives = [(cosine, bar) for cosine, bar, cited in rows if not cited]
    positives = [(cosine, bar) for cosine, bar, cited in rows if cited]
    return (local_bar(negatives) if negatives else boundary), cited_bar(positives)


def cited_over_polarity(exemplars: Iterable[tuple[float, bool]]) -> bool:
    """Whether one of a trail's positives asking the same question again (cosine to the query at
    least ``POSITIVE_SIMILARITY``, and whether its offer was cited over a polarity conflict: the
    recall answered the trail with ``reason: "polarity"`` and the agent cited it all the same)
    says that the conflict the polarity guard reads between the question and the trail's is not
    one: the agent chose this trail for this very question knowing it. A positive learned without
    a conflict says nothing of one ("enable" cited, then "disable" asked)."""
    return any(over and cosine is not None and cosine >= POSITIVE_SIMILARITY for cosine, over in exemplars)


def prefetch_cut(*, prefetch_confidence: float, hint_confidence: float, paused: bool,
                 cited: float | None, own_question: bool = False) -> float | None:
    """The confidence a trail's text needs for a query: the tenant's cut, lowered to the trail's
    cited bar for the question it was cited for (never under the hint cut); None when prefetch is
    paused tenant-wide and no positive speaks for the trail. ``own_question``: the query is the
    question the trail was recorded for, a positive at ``OWN_QUESTION_BAR``."""
    if own_question:
        cited = OWN_QUESTION_BAR if cited is None else min(cited, OWN_QUESTION_BAR)
    if cited is not None:
        own = max(cited, hint_confidence)
        return own if paused else min(prefetch_confidence, own)
    return None if paused else prefetch_confidence


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
