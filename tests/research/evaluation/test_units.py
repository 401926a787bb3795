"""Pure parts of the evaluation harness, no database: agent policy on fake tools, the naive
text cache, the sweep and gate accounting, edits, progress."""

from __future__ import annotations

import io

import numpy as np
import pytest

from docingest.ingest import in_subtrees
from docingest.progress import Progress
from research.evaluation.agent import NON_ANSWER, answer_extract, keywords, run_agent
from research.evaluation.corpus import EDIT_MARK, edit_sentence, or_query
from research.evaluation.metrics import (
    THRESHOLDS,
    edit_sample_size,
    gate_accounting,
    sweep_point,
    threshold_sweep,
)
from research.evaluation.naive import NaiveTextCache, changed_served

DOCS = {f"d{i}": f"Heading {i}\n\nSection {i} says something. It has more. And more. And a fourth." for i in range(20)}


class FakeTools:
    def __init__(self, results: dict[str, list[str]]) -> None:
        self.results = results
        self.searches: list[str] = []
        self.reads: list[str] = []

    def search(self, q: str) -> list[str]:
        self.searches.append(q)
        return self.results.get(q, self.results.get("*", []))

    def read(self, sid: str) -> str | None:
        self.reads.append(sid)
        return DOCS.get(sid)


def count(text: str) -> int:
    return len(text.split())


def test_found_on_first_search_stops_at_gold() -> None:
    tools = FakeTools({"how do I x?": ["d1", "d2", "d3", "d4", "d5"]})
    run = run_agent("how do I x?", gold={"d2"}, search=tools.search, read=tools.read, count_tokens=count)
    assert run.success and run.found_by == "search-read"
    assert run.calls == 3 and tools.reads == ["d1", "d2"]
    assert run.cited == ["d2"]
    assert run.answer == "Section 2 says something. It has more. And more."
    assert run.tokens == count(DOCS["d1"]) + count(DOCS["d2"])
    assert [s["tool"] for s in run.steps] == ["search", "read", "read"]


def test_reformulates_once_then_hits_call_limit_with_non_answer() -> None:
    q = "How can I frobnicate the widget?"
    tools = FakeTools({q: ["d1", "d2", "d3", "d4", "d5"], keywords(q): ["d2", "d6", "d7", "d8", "d9"]})
    run = run_agent(q, gold={"d19"}, search=tools.search, read=tools.read, count_tokens=count)
    assert not run.success
    assert tools.searches == [q, "frobnicate widget"]
    # search, 3 reads, search, reads of unread results until 8 calls.
    assert run.calls == 8 and tools.reads == ["d1", "d2", "d3", "d6", "d7", "d8"]
    assert run.answer == NON_ANSWER and run.cited == ["d8"]


def test_prefetch_with_gold_needs_one_call_and_no_search() -> None:
    tools = FakeTools({"*": ["d1"]})

    def recall(q: str) -> dict:
        return {"outcome": "prefetch", "recall_id": "r", "trail_id": "t", "similarity": 0.9,
                "sections": [{"id": "d3", "status": "valid", "text": DOCS["d3"]}], "omitted": []}

    run = run_agent("q", gold={"d3"}, search=tools.search, read=tools.read, count_tokens=count, recall=recall)
    assert run.success and run.found_by == "prefetch" and run.calls == 1 and not tools.searches
    assert run.tokens == count(DOCS["d3"]) and run.served == ["d3"] and run.recall_outcome == "prefetch"


def test_hint_reads_valid_sections_first_then_falls_back_to_search() -> None:
    tools = FakeTools({"*": ["d1", "d9"]})

    def recall(q: str) -> dict:
        return {"outcome": "hint", "hint": "start with d4", "sections": [
            {"id": "d4", "status": "valid"}, {"id": "d5", "status": "changed"}]}

    run = run_agent("q", gold={"d9"}, search=tools.search, read=tools.read, count_tokens=count, recall=recall)
    assert tools.reads == ["d4", "d1", "d9"]   # valid first, changed never, then search results
    assert run.success and run.calls == 5   # recall, read, search, read, read
    assert run.tokens == count("start with d4") + sum(count(DOCS[i]) for i in ("d4", "d1", "d9"))


def test_miss_behaves_as_without_cache_plus_one_call() -> None:
    tools = FakeTools({"*": ["d1", "d2"]})
    bare = run_agent("q", gold={"d2"}, search=tools.search, read=tools.read, count_tokens=count)
    cached = run_agent("q", gold={"d2"}, search=tools.search, read=tools.read, count_tokens=count,
                       recall=lambda q: {"outcome": "miss", "sections": []})
    assert cached.success == bare.success and cached.calls == bare.calls + 1 and cached.tokens == bare.tokens


def test_deterministic() -> None:
    tools = FakeTools({"*": ["d3", "d1", "d2"]})
    a = run_agent("q x", gold={"d7"}, search=tools.search, read=tools.read, count_tokens=count)
    b = run_agent("q x", gold={"d7"}, search=tools.search, read=tools.read, count_tokens=count)
    assert a.as_dict() == b.as_dict()


def test_keywords_and_or_query() -> None:
    assert keywords("Why is there no goto in Python?") == "goto"
    assert keywords("How do I create a .pyc file?") == "create pyc file"
    assert or_query("How do I (create) a pyc-file?") == "how or do or i or create or a or pyc or file"


def test_answer_extract_skips_heading_and_code() -> None:
    text = "What is X?\n\n    code = 1\n\nX is a thing. It does Y. It also does Z. Not this one."
    assert answer_extract(text) == "X is a thing. It does Y. It also does Z."


def test_naive_cache_serves_stored_text_above_threshold_only() -> None:
    cache = NaiveTextCache(threshold=0.8)
    cache.store("a", np.array([1.0, 0.0]), {"s1": "old text"})
    cache.store("b", np.array([0.0, 1.0]), {"s2": "other"})
    hit = cache.lookup(np.array([0.95, 0.05]))
    assert hit is not None and hit.key == "a" and hit.sections == {"s1": "old text"}
    assert cache.lookup(np.array([1.0, 1.0])) is None   # cosine 0.707 < 0.8
    assert changed_served(hit.sections, {"s1": "new text"}) == ["s1"]
    assert changed_served(hit.sections, {"s1": "old text"}) == []
    assert changed_served(hit.sections, {}) == ["s1"]   # deleted counts as changed
    assert NaiveTextCache(threshold=0.5).lookup(np.array([1.0, 0.0])) is None


def test_threshold_sweep_and_point() -> None:
    sweep = threshold_sweep([0.9, 0.7, None, 0.55], [0.6, 0.52, None])
    assert [r["threshold"] for r in sweep] == list(THRESHOLDS)
    first = sweep[0]
    assert first == {"threshold": 0.3, "hit_rate": 0.75, "false_hit_rate": round(2 / 3, 4)}
    assert sweep_point(sweep, 0.5) == {"threshold": 0.5, "hit_rate": 0.75, "false_hit_rate": round(2 / 3, 4)}
    at_70 = sweep_point(sweep, 0.7)
    assert at_70 == {"threshold": 0.7, "hit_rate": 0.5, "false_hit_rate": 0.0}
    assert sweep[-1]["hit_rate"] == 0.0
    rates = [r["hit_rate"] for r in sweep]
    assert rates == sorted(rates, reverse=True)   # monotone in the threshold


def test_gate_accounting() -> None:
    acc = gate_accounting([(True, True), (True, False), (False, True), (False, False), (True, True)])
    assert acc["wrong_admitted"] == 1 and acc["correct_rejected"] == 1 and acc["admitted"] == 3
    assert acc["wrong_admitted_rate"] == 0.5 and acc["correct_rejected_rate"] == round(1 / 3, 4)


@pytest.mark.parametrize(("n", "fraction", "expected"), [(0, 0.5, 0), (10, 0.05, 1), (20, 0.25, 5), (7, 0.5, 4)])
def test_edit_sample_size(n: int, fraction: float, expected: int) -> None:
    assert edit_sample_size(n, fraction) == expected


def test_edit_sentence_changes_one_sentence() -> None:
    text = "Title\n\nFirst sentence. Second one.\n\nMore."
    edited = edit_sentence(text)
    assert edited != text and edited.startswith("Title\n\nFirst sentence." + EDIT_MARK + " Second one.")
    assert edit_sentence("Only a heading") == "Only a heading" + EDIT_MARK


def test_in_subtrees() -> None:
    assert in_subtrees("faq/general.rst.txt#x", ["faq"])
    assert in_subtrees("faq/general.rst.txt#x", ["faq/general.rst.txt"])
    assert not in_subtrees("faqs/x.rst.txt#x", ["faq"])
    assert in_subtrees("anything#x", [])


def test_progress_prints_to_stream() -> None:
    out = io.StringIO()
    with Progress("work", 3, stream=out) as bar:
        for _ in range(3):
            bar.step()
    assert "work" in out.getvalue() and "3/3" in out.getvalue()
