"""The data subject's pseudonym for the audit log and scrubbed job rows (shared by erasure and
exports, so neither imports the other for it)."""

from __future__ import annotations

import hashlib


def subject_hash(subject: str) -> str:
    """What the audit log keeps instead of the subject."""
    return hashlib.sha256(subject.encode("utf-8")).hexdigest()
