"""What PostgreSQL (and Python) cannot take, refused at the edge with a 400 naming the field:
NUL characters and lone surrogates in any string (path, query, JSON keys and values),
non-finite numbers, numbers too long to read, JSON nested deeper than ``MAX_JSON_DEPTH``,
and dates outside ``MIN_DATE``..``MAX_DATE``.

The checks are iterative (no recursion), so no input can exhaust the stack."""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime

from cachecore.engine.limits import MAX_DATE, MIN_DATE

# Steps' args are the only free-form JSON in the contract; 32 levels is far more than any tool's args.
MAX_JSON_DEPTH = 32
# Path values (section ids, subjects, ids) and query values: the longest legal one is 512 characters.
MAX_PATH_VALUE_CHARS = 1024
MAX_QUERY_VALUE_CHARS = 1024

_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")

# The spellings of a date or datetime bound the schema documents (``pattern`` of ``since`` and
# ``until``), exactly the calendar days of MIN_DATE..MAX_DATE: YYYY-MM-DD, or with a time
# [T ]HH:MM[:SS[.f{1,6}]] and an offset Z / ±HH[[:]MM]. parse_bounded_instant reads every such
# string (tests/api/test_schema_constraints.py walks the calendar); it also reads a few rarer
# ISO 8601 spellings (20200101, 2020-W01-1) that the schema does not mention.
_YEAR = r"(?:19[0-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9][0-9]|99[0-8][0-9]|999[0-8])"
_LEAP_YEAR = r"(?:(?:19|[2-9][0-9])(?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[3579][26])00)"
_MONTH_DAY = r"(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
_DATE = rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
_OFFSET = r"(?:Z|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)"
_TIME = rf"[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{{1,6}})?)?{_OFFSET}?"
INSTANT_PATTERN = rf"^(?:{_DATE}(?:{_TIME})?)?$"


class InputRefused(ValueError):
    """``fields`` maps a field (a JSON path such as ``steps[0].args.q``) to its reasons."""

    def __init__(self, fields: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {v[0]}" for k, v in fields.items()))
        self.fields = fields


def string_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored, or None."""
    match = _BAD_CHARS.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "must not contain NUL (\\u0000) characters"
    return "must not contain lone surrogate characters (\\ud800-\\udfff)"


def check_value(field: str, value: str, *, max_chars: int) -> None:
    problem = string_problem(value)
    if problem is None and len(value) > max_chars:
        problem = f"must be at most {max_chars} characters"
    if problem:
        raise InputRefused({field: [problem]})


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise InputRefused({"non_field_errors": [f"number {text[:40]!r} is out of range (not finite)"]})
    return number


def _no_constants(text: str) -> Any:
    raise InputRefused({"non_field_errors": [f"{text} is not valid JSON (numbers must be finite)"]})


def json_loads(text: str) -> Any:
    """``json.loads`` that refuses non-finite numbers, too-deep nesting and unstorable strings."""
    try:
        data = json.loads(text, parse_float=_finite_float, parse_constant=_no_constants)
    except RecursionError:
        raise InputRefused({"non_field_errors": [f"JSON nested deeper than {MAX_JSON_DEPTH} levels"]})
    check_tree(data)
    return data


def _join(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def check_tree(data: Any) -> None:
    """Walk parsed JSON without recursion: depth, and every key and string value."""
    stack: list[tuple[str, Any, int]] = [("", data, 1)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, str):
            problem = string_problem(value)
            if problem:
                raise InputRefused({path or "non_field_errors": [problem]})
        elif isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise InputRefused({path or "non_field_errors": [f"nested deeper than {MAX_JSON_DEPTH} levels"]})
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    problem = string_problem(key)
                    if problem:
                        raise InputRefused({path or "non_field_errors": [f"a key {problem}"]})
                stack.append((_join(path, key), item, depth + 1))


def parse_bounded_instant(value: str) -> date | datetime:
    """An ISO 8601 date or datetime between MIN_DATE and MAX_DATE; ValueError names what is wrong."""
    try:
        parsed: date | datetime | None = parse_date(value) or parse_datetime(value)
    except ValueError:
        parsed = None
    if parsed is None:
        raise ValueError("expected an ISO 8601 date or datetime")
    day = parsed.date() if isinstance(parsed, datetime) else parsed
    if not MIN_DATE <= day <= MAX_DATE:
        raise ValueError(f"must be between {MIN_DATE.isoformat()} and {MAX_DATE.isoformat()}")
    return parsed
