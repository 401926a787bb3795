"""The data subject's pseudonym for the audit log and scrubbed job rows (shared by erasure and
exports, so neither imports the other for it)."""

from __future__ import annotations

import hashlib

from cachecore.engine.limits import MAX_SUBJECT_CHARS
from cachecore.errors import InvalidInput


def subject_checked(subject: str) -> str:
    """The one rule for a subject to erase, for the API and the console alike: matched exactly
    as it was recorded (no trimming, no case folding: " alice" is not "alice"), never empty."""
    if not subject:
        raise InvalidInput("subject is required", fields={"subject": ["required"]})
    if len(subject) > MAX_SUBJECT_CHARS:
        raise InvalidInput("subject is too long", fields={"subject": [f"at most {MAX_SUBJECT_CHARS} characters"]})
    return subject


def subject_hash(subject: str) -> str:
    """What the audit log keeps instead of the subject."""
    return hashlib.sha256(subject.encode("utf-8")).hexdigest()
