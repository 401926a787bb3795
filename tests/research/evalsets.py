"""Helpers the checks of the labelled evaluation sets (tests/data/eval/*.jsonl) share:
test_eval_dataset.py and test_eval_hard_set.py import them as ``tests.research.evalsets``
(tests/research is no package: see tests/test_suite_rules.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


def load_jsonl(path: Path) -> list[dict]:
    """The rows of a JSON-lines file (blank lines skipped); a line that is not JSON fails the test."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:  # pragma: no cover - failure path
                pytest.fail(f"{path.name} line {lineno} is not valid JSON: {exc}")
    return rows


def norm(s: str) -> str:
    """Lower case, whitespace runs collapsed: the form in which two questions count as the same."""
    return re.sub(r"\s+", " ", s.strip().lower())
