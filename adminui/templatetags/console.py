"""Template helpers of the console: audit details as readable rows (secrets never shown) and
the copy button for long ids and hashes."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()

# Details keys that may name a secret: their values are never rendered, whatever they hold.
SECRET_MARKERS = ("secret", "password", "token", "raw", "authorization", "credential")
LABELS = {
    "subject_sha256": "subject (SHA-256)",
    "trail_ids": "trails",
    "count": "trails changed",
    "recall_events": "recall log entries",
    "exports_before": "export files written before",
    "exports_deleted": "export files deleted",
    "scope_prefixes": "scope prefixes",
    "format": "format",
}
LIST_SHOWN = 3


def _text(value: Any) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')}: {_text(v)}" for k, v in value.items()) or "–"
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        items = [_text(v.get("export_id", v) if isinstance(v, dict) else v) for v in value]
        more = len(items) - LIST_SHOWN
        return ", ".join(items[:LIST_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return str(value)


def _is_long_id(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= 32 and " " not in value


@register.filter
def audit_details(details: Any) -> list[dict[str, Any]]:
    """One audit entry's details as ``[{"label", "text" | "old"/"new", "full"?}]`` (not
    "copy": a template would call dict.copy)."""
    if not isinstance(details, dict):
        return [{"label": "details", "text": _text(details)}] if details else []
    rows = []
    for key, value in details.items():
        label = LABELS.get(key, key.replace("_", " "))
        if any(marker in key.lower() for marker in SECRET_MARKERS):
            rows.append({"label": label, "text": "(not shown)"})
        elif isinstance(value, dict) and set(value) == {"old", "new"}:
            rows.append({"label": label, "old": _text(value["old"]), "new": _text(value["new"]), "change": True})
        elif _is_long_id(value):
            rows.append({"label": label, "text": f"{value[:12]}…", "full": value})
        elif key == "trail_ids" and isinstance(value, list):
            rows.append({"label": label, "text": _text([f"{v[:8]}…" for v in value])})
        else:
            rows.append({"label": label, "text": _text(value)})
    return rows


@register.simple_tag
def copy_button(value: Any, what: str = "value") -> str:
    """A small button that copies ``value`` (console.js); hidden without JavaScript."""
    return format_html(
        '<button type="button" class="copy" data-copy="{}" aria-label="Copy {}" title="Copy {}">'
        '<svg width="12" height="12" viewBox="0 0 16 16" aria-hidden="true" focusable="false">'
        '<rect x="5" y="5" width="9" height="9" rx="1.5" fill="none" stroke="currentColor" stroke-width="1.6"/>'
        '<path d="M11 3.5V3a1 1 0 0 0-1-1H3a1 1 0 0 0-1 1v7a1 1 0 0 0 1 1h.5" fill="none" stroke="currentColor" '
        'stroke-width="1.6"/></svg></button>', value, what, what,
    )


REASONS = {
    "match": "same need",
    "low_confidence": "low confidence",
    "ambiguous": "two close trails",
    "polarity": "opposite meaning",
    "changed": "sections changed",
    "unverified": "unverified section",
    "hash_only": "hash-only section",
    "low_coverage": "low coverage",
    "no_candidate": "no similar trail",
    "no_match": "no match",
    "stale": "every section changed",
}


@register.filter
def reason_label(reason: str) -> str:
    """A recall's ``reason`` code in words (unknown codes as they are)."""
    return REASONS.get(reason, reason.replace("_", " "))


@register.filter
def percent(rate: float | None) -> str:
    """A rate (0–1) as a percentage: one decimal under 10 %, so a rare event does not read 0 %."""
    if rate is None:
        return "–"
    value = 100 * float(rate)
    if value == 0:
        return "0%"
    return f"{value:.1f}%" if value < 10 else f"{value:.0f}%"
