"""Debian's python3.11-doc: the evaluation corpus and the doc splitter's real-world input.
Tests that read it fail with the message below when it is missing; they are never skipped
(scripts/test.sh installs it from Debian's archive)."""

from __future__ import annotations

from pathlib import Path

import pytest

PY_DOCS_HTML = Path("/usr/share/doc/python3.11/html")
PY_DOCS_SOURCES = PY_DOCS_HTML / "_sources"


def require_python_docs(path: Path = PY_DOCS_SOURCES) -> Path:
    """``path`` inside the installed documentation, or a failure that says how to install it."""
    if not path.exists():
        pytest.fail(
            f"{path} is missing: this test reads Debian's python3.11-doc. Install it with "
            "`sudo apt-get install python3.11-doc` (`make test` installs it when run as root).",
            pytrace=False,
        )
    return path
