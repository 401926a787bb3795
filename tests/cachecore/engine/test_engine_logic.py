"""The engine's pure logic: no database, no Django."""

import ast
from pathlib import Path

import numpy as np

from cachecore.engine.budget import fit_to_budget
from cachecore.engine.coverage import cosine, max_cosine
from cachecore.engine.hint import hint_text
from cachecore.engine.outcome import Outcome, SectionState, classify, section_state
from cachecore.engine.text import content_hash, normalise_query, split_chunks

V, C, M = SectionState.VALID, SectionState.CHANGED, SectionState.MISSING


def test_normalise_query_folds_case_space_and_edge_punctuation():
    assert normalise_query("  How do I\tInstall  Python?? ") == "how do i install python"
    assert normalise_query("Ｐｙｔｈｏｎ") == "python"
    assert normalise_query("What's a C++ lambda?") == "what's a c++ lambda"


def test_content_hash_is_sha256_of_utf8():
    import hashlib

    assert content_hash("é") == hashlib.sha256("é".encode()).hexdigest()
    assert content_hash("a") != content_hash("a ")


def test_split_chunks_groups_sentences_and_bounds_count():
    text = "First sentence here. Second one follows. " * 30
    chunks = split_chunks(text, max_words=20)
    assert all(len(c.split()) <= 20 for c in chunks)
    assert " ".join(chunks).split() == text.split()
    assert len(split_chunks(text, max_words=3, max_chunks=5)) == 5
    assert split_chunks("") == []


def test_section_state():
    assert section_state(recorded_hash="a", current_hash="a") is V
    assert section_state(recorded_hash="a", current_hash="b") is C
    assert section_state(recorded_hash="a", current_hash=None) is M


def test_classify_outcome_table():
    assert classify([V, V], coverage=0.9, coverage_floor=0.3).outcome is Outcome.PREFETCH
    assert classify([V, C], coverage=None, coverage_floor=0.3).outcome is Outcome.HINT
    assert classify([V, M], coverage=None, coverage_floor=0.3).outcome is Outcome.HINT
    dead = classify([C, M], coverage=None, coverage_floor=0.3)
    assert dead.outcome is Outcome.MISS and dead.stale
    low = classify([V], coverage=0.1, coverage_floor=0.3)
    assert low.outcome is Outcome.HINT and low.escalated
    unknown = classify([V], coverage=None, coverage_floor=0.3)
    assert unknown.outcome is Outcome.PREFETCH and not unknown.escalated
    assert classify([V], coverage=0.9, coverage_floor=0.3, servable=False).outcome is Outcome.HINT


def test_fit_to_budget_keeps_order_and_skips_what_does_not_fit():
    served, omitted = fit_to_budget([("a", 50), ("b", 100), ("c", 30)], 90)
    assert served == ["a", "c"] and omitted == ["b"]
    assert fit_to_budget([("a", 10)], 10) == (["a"], [])
    assert fit_to_budget([("a", 11)], 10) == ([], ["a"])


def test_coverage_is_max_cosine_over_chunks():
    q = np.array([1.0, 0.0])
    assert max_cosine(q, [[0.0, 1.0], [1.0, 1.0]]) == pytest_approx(2 ** -0.5)
    assert max_cosine(q, []) is None
    assert cosine([1, 0], [2, 0]) == pytest_approx(1.0)


def pytest_approx(x):
    import pytest

    return pytest.approx(x, abs=1e-6)


def test_hint_text_names_valid_and_changed():
    text = hint_text(valid=["a#1"], changed=["b#2"], missing=["c#3"], escalated=True)
    assert "start with a#1" in text and "b#2 changed since" in text and "c#3 no longer exist" in text
    assert "may not answer" in text


def test_engine_imports_nothing_of_django_or_the_project():
    engine = Path(__file__).resolve().parents[3] / "cachecore" / "engine"
    for path in engine.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                root = name.split(".")[0]
                assert root not in {"django", "rest_framework", "tenants", "api", "adminui", "config"}, (path, name)
                if root == "cachecore":
                    assert name.startswith("cachecore.engine"), (path, name)


def test_unverified_sections_hint_but_never_make_a_trail_stale():
    U = SectionState.UNVERIFIED
    only_unverified = classify([U, C], coverage=None, coverage_floor=0.3)
    assert only_unverified.outcome is Outcome.HINT and not only_unverified.stale
    assert classify([V, U], coverage=0.9, coverage_floor=0.3).outcome is Outcome.HINT


def test_state_counts_name_every_state():
    from cachecore.engine.outcome import state_counts

    assert state_counts([V, V, C]) == {"valid": 2, "changed": 1, "missing": 0, "unverified": 0}
    assert state_counts([]) == dict.fromkeys(("valid", "changed", "missing", "unverified"), 0)
