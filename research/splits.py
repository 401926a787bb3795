"""Calibration / held-out splits shared by every study, by question group: a group is on one
side only, so nothing tuned on calibration data has seen a held-out question.

- QQP (``tests/data/qqp/qqp_pairs.jsonl.gz``, vendored with its provenance; ``TRAILCACHE_QQP``
  overrides): groups are the connected components of the pair graph over normalised question
  text (so no question is on both sides).
- Python FAQ set (``tests/data/eval``): groups are the FAQ entry ids (an original, its
  paraphrases, its distinct and close-but-different questions).
- Celery hard set (``tests/data/eval/celery_hard.jsonl``): groups are the items' ``topic``
  (one page, or one part of a long page such as the configuration reference), so every
  question written from one topic is on one side.
- Flask hard set (``tests/data/eval/flask_hard.jsonl``): groups are the items' ``topic``, as
  for Celery.
- pytest hard set (``tests/data/eval/pytest_hard.jsonl``): groups are the items' ``topic``, as
  for Celery.
- Click hard set (``tests/data/eval/click_hard.jsonl``): groups are the items' ``topic``, as for
  Celery.

A group is held out when the first 8 hex digits of sha256(group key), as an integer, modulo
10 are below ``HELD_OUT_TENTHS`` (30 %). Never tune a constant on the held-out side.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
QQP_PATH = Path(os.environ.get("TRAILCACHE_QQP", REPO_ROOT / "tests" / "data" / "qqp" / "qqp_pairs.jsonl.gz"))
HELD_OUT_TENTHS = 3
CALIBRATION, HELD_OUT = "calibration", "held_out"


def side_of(group_key: str) -> str:
    bucket = int(hashlib.sha256(group_key.encode("utf-8")).hexdigest()[:8], 16) % 10
    return HELD_OUT if bucket < HELD_OUT_TENTHS else CALIBRATION


def normalise(question: str) -> str:
    return " ".join(question.lower().split())


@dataclass(frozen=True)
class QQPPair:
    a: str
    b: str
    duplicate: bool
    group: str
    side: str


def _read_qqp(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"QQP pairs not found at {path} (set TRAILCACHE_QQP)")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def qqp_pairs(path: Path = QQP_PATH) -> list[QQPPair]:
    """Every labelled pair with its group (component representative) and side."""
    rows = _read_qqp(path)
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in rows:
        ra, rb = find(normalise(r["a"])), find(normalise(r["b"]))
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    out = []
    for r in rows:
        group = find(normalise(r["a"]))
        out.append(QQPPair(r["a"], r["b"], bool(r["duplicate"]), group, side_of("qqp:" + group)))
    return out


def qqp_side(side: str, path: Path = QQP_PATH) -> Iterator[QQPPair]:
    return (p for p in qqp_pairs(path) if p.side == side)


def faq_side(question_id: str) -> str:
    """Side of a Python FAQ entry (``faq-general-001``) and everything written from it."""
    return side_of("faq:" + question_id)


def celery_side(topic: str) -> str:
    """Side of a Celery hard-set topic (``tasks-retry``) and every item written from it."""
    return side_of("celery:" + topic)


def flask_side(topic: str) -> str:
    """Side of a Flask hard-set topic (``quickstart-routing``) and every item written from it."""
    return side_of("flask:" + topic)


def pytest_side(topic: str) -> str:
    """Side of a pytest hard-set topic (``p1-fixtures-scope``) and every item written from it."""
    return side_of("pytest:" + topic)


def click_side(topic: str) -> str:
    """Side of a Click hard-set topic (``p1-option-basics``) and every item written from it."""
    return side_of("click:" + topic)
