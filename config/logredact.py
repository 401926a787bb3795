"""Keep data subjects out of the logs: ``DELETE /api/v1/subjects/{subject}`` carries the
subject in its path, and both gunicorn's access log and Django's request log print paths. The
subject segment is replaced by ``sha256:`` and the first 16 hex digits of the subject's SHA-256
(the same digest the audit log keeps, so the two can be matched without the subject)."""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any
from urllib.parse import unquote

from gunicorn.glogging import Logger as GunicornLogger

# Everything up to the end of the path (white space, a query or a fragment): a quote or a slash
# may be part of the subject (the route takes a path), so neither stops the redaction.
_SUBJECT_PATH = re.compile(r"(/api/v1/subjects/)([^\s?#]+)")


def redact_subject_paths(text: str) -> str:
    def digest(match: re.Match[str]) -> str:
        subject = unquote(match.group(2))
        return f"{match.group(1)}sha256:{hashlib.sha256(subject.encode('utf-8')).hexdigest()[:16]}"

    return _SUBJECT_PATH.sub(digest, text)


class SubjectPathFilter(logging.Filter):
    """A logging filter that rewrites the record's message (never drops it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "subject_paths_redacted", False):  # on the logger and then the handler
            return True
        record.subject_paths_redacted = True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the handler's to report
            return True
        if "/api/v1/subjects/" in message:
            record.msg, record.args = redact_subject_paths(message), ()
        return True


class AccessLogger(GunicornLogger):
    """Gunicorn's logger (``--logger-class config.logredact.AccessLogger``) with the subject
    redacted from every access-log atom that holds the path."""

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        return {k: redact_subject_paths(v) if isinstance(v, str) and "/api/v1/subjects/" in v else v
                for k, v in atoms.items()}
