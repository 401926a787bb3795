"""The deterministic simulated agent: two tools (``search``, ``read``) over the ingested
sections, optionally a ``recall`` first. Pure: the tools are callables, so the policy is
unit-tested on fakes and run against PostgreSQL full-text search by the harness.

Policy (the same for every question):

1. With a cache, the first call is ``recall(query)``. ``prefetch`` → the agent has the served
   sections' text (tokens read); sections left out by the budget are read first. ``hint`` →
   it reads the valid sections first. ``miss`` → as without a cache.
2. ``search(query)`` → top 5 ids; read the unread results in rank order (at most
   ``reads_per_search``), then reformulate once (keywords only), search again and read the
   unread results in rank order until the call limit.
3. It stops as soon as it has read (or been served) a gold section — the oracle stand-in
   for "the agent recognised the answer" — or at the call limit (8 tool calls, recall
   included).

It answers with an extract (the first sentences) of the section it cites when it found a
gold section, else with a non-answer citing what it read last.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

NON_ANSWER = "The documentation I found doesn't cover this."
CALL_LIMIT = 8
READS_PER_SEARCH = 3

# Words a keyword reformulation drops: English function words, question words, and words
# that appear in nearly every section of this kind of documentation.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only
or other our out over own same she should so some such than that the their them then there these they this
those through to too under until up very was we were what when where which while who whom why will with
would you your yours anything something someone way ways possible tell explain give get make use using used
want need python
""".split())

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")


def keywords(query: str) -> str:
    """The keyword reformulation: the query's words minus stopwords, in order, deduplicated."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in STOPWORDS and word not in seen and len(word) > 1:
            seen.append(word)
    return " ".join(seen)


def answer_extract(text: str, *, sentences: int = 3) -> str:
    """The first ``sentences`` sentences of a section's prose (the heading paragraph and code
    blocks skipped), as the agent's answer."""
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    prose = [p for p in paragraphs[1:] if not p.startswith((" ", ">>>", "$")) and len(p.split()) > 3]
    body = " ".join(" ".join(p.split()) for p in (prose or paragraphs))
    parts = [s.strip() for s in _SENTENCE_END.split(body) if s.strip()]
    return " ".join(parts[:sentences])


@dataclass
class AgentRun:
    query: str
    success: bool = False          # a gold section was read or served
    cited: list[str] = field(default_factory=list)
    answer: str = NON_ANSWER
    calls: int = 0
    tokens: int = 0
    read: list[str] = field(default_factory=list)
    served: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    recall_outcome: str | None = None   # None: no cache used
    recall_id: str | None = None
    recall_trail_id: str | None = None
    recall_similarity: float | None = None
    recall_escalated: bool = False
    found_by: str | None = None   # "prefetch", "hint-read", "search-read"

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "steps"}


SearchFn = Callable[[str], Sequence[str]]
ReadFn = Callable[[str], str | None]
CountFn = Callable[[str], int]
RecallFn = Callable[[str], dict[str, Any]]


def run_agent(
    query: str,
    *,
    gold: Collection[str],
    search: SearchFn,
    read: ReadFn,
    count_tokens: CountFn,
    recall: RecallFn | None = None,
    call_limit: int = CALL_LIMIT,
    reads_per_search: int = READS_PER_SEARCH,
) -> AgentRun:
    """Answer ``query`` with the policy above; deterministic given deterministic tools."""
    gold = set(gold)
    run = AgentRun(query=query)
    texts: dict[str, str] = {}

    def done(section_id: str, text: str, how: str) -> AgentRun:
        run.success, run.found_by = True, how
        run.cited, run.answer = [section_id], answer_extract(text) or text[:300]
        return run

    def do_read(section_id: str) -> str | None:
        run.calls += 1
        text = read(section_id)
        run.steps.append({"tool": "read", "args": {"id": section_id}, "returned": [section_id] if text else []})
        if text is not None:
            run.read.append(section_id)
            texts[section_id] = text
            run.tokens += count_tokens(text)
        return text

    to_read_first: list[str] = []
    if recall is not None:
        run.calls += 1
        result = recall(query)
        run.recall_outcome = result.get("outcome")
        run.recall_id = result.get("recall_id")
        run.recall_trail_id = result.get("trail_id")
        run.recall_similarity = result.get("similarity")
        run.recall_escalated = bool(result.get("escalated"))
        if result.get("hint"):
            run.tokens += count_tokens(result["hint"])
        sections = result.get("sections") or []
        if run.recall_outcome == "prefetch":
            for s in sections:
                if s.get("text") is None:
                    continue
                run.served.append(s["id"])
                texts[s["id"]] = s["text"]
                run.tokens += count_tokens(s["text"])
            for sid in run.served:
                if sid in gold:
                    return done(sid, texts[sid], "prefetch")
            to_read_first = list(result.get("omitted") or [])
        elif run.recall_outcome == "hint":
            to_read_first = [s["id"] for s in sections if s.get("status") == "valid"]
    for sid in to_read_first:
        if run.calls >= call_limit:
            break
        text = do_read(sid)
        if text is not None and sid in gold:
            return done(sid, text, "hint-read")

    reformulated = keywords(query)
    queries = [query] + ([reformulated] if reformulated and reformulated != query.lower() else [])
    for n, q in enumerate(queries):
        if run.calls >= call_limit:
            break
        run.calls += 1
        ids = list(search(q))
        run.steps.append({"tool": "search", "args": {"q": q}, "returned": ids})
        unread = [i for i in ids if i not in texts]
        last_search = n == len(queries) - 1
        for sid in unread if last_search else unread[:reads_per_search]:
            if run.calls >= call_limit:
                break
            text = do_read(sid)
            if text is not None and sid in gold:
                return done(sid, text, "search-read")
    last = run.read[-1] if run.read else (run.served[-1] if run.served else None)
    run.cited = [last] if last else []
    return run
