"""Sanity checks for the labelled evaluation set tests/data/eval/python_faq.jsonl."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.pydocs import require_python_docs
from tests.research.evalsets import load_jsonl, norm

DATASET = Path(__file__).resolve().parents[1] / "data" / "eval" / "python_faq.jsonl"
FAQ_FILES = {"general", "programming", "design", "library", "extending", "windows", "gui", "installed"}


@pytest.fixture(scope="module")
def rows():
    return load_jsonl(DATASET)


def test_dataset_parses_and_is_large_enough(rows):
    assert len(rows) >= 150
    for row in rows:
        assert set(row) == {"id", "question", "gold", "paraphrases", "distinct"}, row.get("id")
        assert isinstance(row["question"], str) and row["question"].strip()
        for key in ("gold", "paraphrases", "distinct"):
            assert isinstance(row[key], list) and row[key], (row["id"], key)
            assert all(isinstance(x, str) and x.strip() for x in row[key]), (row["id"], key)


def test_ids_unique_and_well_formed(rows):
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    for r in rows:
        m = re.fullmatch(r"faq-([a-z]+)-(\d{3})", r["id"])
        assert m and m.group(1) in FAQ_FILES, r["id"]


def test_gold_ids_point_into_the_faq(rows):
    for r in rows:
        assert len(r["gold"]) == len(set(r["gold"])), r["id"]
        for g in r["gold"]:
            m = re.fullmatch(r"faq/([a-z]+)\.rst\.txt#[a-z][a-z0-9-]*", g)
            assert m and m.group(1) in FAQ_FILES, (r["id"], g)
        # the entry's own FAQ file comes first
        assert r["gold"][0].startswith(f"faq/{r['id'].split('-')[1]}.rst.txt#"), r["id"]


def test_paraphrases_and_distinct_questions(rows):
    total_distinct = 0
    for r in rows:
        q = norm(r["question"])
        paras = [norm(p) for p in r["paraphrases"]]
        dists = [norm(d) for d in r["distinct"]]
        assert all(p != q for p in paras), r["id"]
        assert all(d != q for d in dists), r["id"]
        assert not set(paras) & set(dists), r["id"]
        total_distinct += len(dists)
    assert total_distinct >= 150


def test_distinct_question_never_names_a_question_with_the_same_gold(rows):
    by_text = {}
    for r in rows:
        for t in [r["question"], *r["paraphrases"]]:
            by_text.setdefault(norm(t), []).append(r)
    for r in rows:
        for d in r["distinct"]:
            for other in by_text.get(norm(d), []):
                assert not set(other["gold"]) & set(r["gold"]), (r["id"], d, other["id"])


def test_every_gold_id_is_produced_by_split_tree(rows):
    from docingest import split_tree

    produced = {s.id for s in split_tree(require_python_docs())}
    missing = sorted({g for r in rows for g in r["gold"]} - produced)
    assert not missing, missing


def test_question_is_the_heading_of_its_first_gold_section(rows):
    from docingest import split_tree

    titles = {s.id: s.title for s in split_tree(require_python_docs() / "faq")}
    for r in rows:
        title = titles[r["gold"][0][len("faq/") :]]
        assert norm(r["question"]).rstrip("?") == norm(title).rstrip("?"), r["id"]
