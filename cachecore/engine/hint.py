"""The short text a hint carries for the agent."""

from __future__ import annotations

from collections.abc import Sequence

# What the agent should know when the match itself is in doubt (the recall's ``reason``).
_CAUTION = {
    "low_confidence": "It may not be the same question: search as well, and use these only if they answer it.",
    "ambiguous": "Several earlier questions come close and cited different sections: check which one fits.",
    "polarity": "The earlier question asked the opposite of this one: search for this one.",
    "not_cited_before": "When served as text before, these were not what the answer needed: search as well.",
    "nearer_wording": "An earlier question worded nearer this one cited the same sections and may ask "
    "another thing: search as well, and use these only if they answer it.",
    "coverage_pending": "These sections were just added and are still being indexed: read them and check "
    "they answer this question.",
    "prefetch_paused": "This tenant serves hints only (but for questions asked again) until its agents' "
    "citations show a safe prefetch confidence: read these if they answer the question.",
}


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids)


def hint_text(
    *,
    valid: Sequence[str],
    changed: Sequence[str],
    missing: Sequence[str] = (),
    unverified: Sequence[str] = (),
    escalated: bool = False,
    hash_only: bool = False,
    reason: str = "",
) -> str:
    parts = ["A similar question was answered before"]
    if valid:
        parts.append(f"start with {_ids(valid)}")
    if changed:
        parts.append(f"{_ids(changed)} changed since")
    if missing:
        parts.append(f"{_ids(missing)} no longer exist")
    if unverified:
        parts.append(f"{_ids(unverified)} could not be checked just now: read them fresh")
    text = "; ".join(parts) + "."
    if escalated:
        text += " Those sections are on topic but may not answer this exact question: search as well."
    if reason in _CAUTION:
        text += " " + _CAUTION[reason]
    if hash_only:
        text += " Their text is not stored here: read them from your index."
    return text
