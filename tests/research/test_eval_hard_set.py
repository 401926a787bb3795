"""Sanity checks for the hand-written hard set tests/data/eval/python_faq_hard.jsonl."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.research.evalsets import load_jsonl, norm

EVAL_DIR = Path(__file__).resolve().parents[1] / "data" / "eval"
BASE = EVAL_DIR / "python_faq.jsonl"
HARD = EVAL_DIR / "python_faq_hard.jsonl"
KINDS = {"parameter", "object", "version", "direction", "false_premise", "comparison", "other"}


@pytest.fixture(scope="module")
def base():
    return load_jsonl(BASE)


@pytest.fixture(scope="module")
def hard():
    return load_jsonl(HARD)


def _twins(hard):
    return [t for row in hard for t in row["twins"]]


def test_one_line_per_faq_entry_in_order(base, hard):
    assert len(hard) == 178
    assert [r["id"] for r in hard] == [r["id"] for r in base]


def test_row_shape(hard):
    for row in hard:
        assert set(row) == {"id", "paraphrases_extra", "twins"}, row["id"]
        assert isinstance(row["twins"], list) and row["twins"], row["id"]
        for t in row["twins"]:
            assert set(t) == {"question", "kind", "answered_by_source", "why"}, row["id"]
            assert isinstance(t["question"], str) and t["question"].strip(), row["id"]
            assert isinstance(t["why"], str) and t["why"].strip(), row["id"]
            assert isinstance(t["answered_by_source"], bool), row["id"]
            assert t["kind"] in KINDS, (row["id"], t["kind"])


def test_twin_counts(hard):
    twins = _twins(hard)
    assert len(twins) >= 238
    assert sum(len(r["twins"]) >= 2 for r in hard) >= 60
    assert sum(not t["answered_by_source"] for t in twins) >= 150
    kinds = Counter(t["kind"] for t in twins)
    for kind in KINDS:
        assert kinds[kind] >= 20, (kind, kinds[kind])


def test_twins_are_new_questions(base, hard):
    existing = set()
    for row in base:
        existing.add(norm(row["question"]))
        existing.update(norm(x) for x in row["paraphrases"] + row["distinct"])
    seen = set()
    for row in hard:
        for t in row["twins"]:
            key = norm(t["question"])
            assert key not in existing, (row["id"], t["question"])
            assert key not in seen, (row["id"], t["question"])
            seen.add(key)


def test_one_new_paraphrase_per_entry(base, hard):
    by_id = {r["id"]: r for r in base}
    for row in hard:
        extra = row["paraphrases_extra"]
        assert isinstance(extra, list) and len(extra) == 1, row["id"]
        assert isinstance(extra[0], str) and extra[0].strip(), row["id"]
        orig = by_id[row["id"]]
        old = {norm(p) for p in orig["paraphrases"]} | {norm(orig["question"])}
        assert norm(extra[0]) not in old, row["id"]
