"""A small deterministic agent using Trailcache through the Python client, against `make run`.

    make run                                    # in another terminal; it prints an API key
    pip install ./clients/python                # (already in .venv)
    TRAILCACHE_API_KEY=tc_… .venv/bin/python examples/agent_loop.py

The agent answers questions over the demo tenant's product manual with a local search function
(keyword overlap, no model) and an extractive "answer" (the best section's first sentences):

1. a first question: recall misses, the agent searches, the user accepts the answer, the agent
   records the trail (linked to the recall);
2. the same question from another user (other case and punctuation: the same once normalised):
   recall serves the verified section text (prefetch), no search at all; the agent says it
   helped (feedback). A reworded question would get a hint: see 3;
3. a close but different question: recall gives a hint (the section ids, no text), which the
   agent reads first before searching.

Each run works in a scope of its own (``example:agent-loop:<random>``), so a run never finds the
trail of an earlier one; it never changes the demo's sections (it only reads them).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from trailcache import NotFoundError, RecallResult, Trailcache

# The demo tenant's manual (devtools/demo.py): the agent's "index" is these sections' current text.
DEMO_SECTION_IDS = [
    "manual/install.md#requirements", "manual/install.md#linux", "manual/install.md#windows",
    "manual/sync.md#conflicts", "manual/sync.md#selective", "manual/sync.md#bandwidth",
    "manual/account.md#password", "manual/account.md#delete", "manual/account.md#two-factor",
    "manual/billing.md#plans", "manual/billing.md#invoices",
]

FIRST = "Where can I set upload and download limits?"
# The same question typed by another user: normalised (case, punctuation) it is the trail's own,
# so it is served as text. A true rewording gets a hint under the shipped defaults.
REWORDED = "where can i set upload and download limits"
DIFFERENT = "Where can I remove upload and download limits?"  # close, but another need: only a hint

STOPWORDS = frozenset("a an and are can do does for how i in is it my of on or the to what when where which with you "
                      "your".split())


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS}


@dataclass
class Answer:
    question: str
    text: str
    cited: list[str]
    steps: list[dict] = field(default_factory=list)
    recall: RecallResult | None = None
    tool_calls: int = 0


class Agent:
    """Recall before the first search; search only when nothing verified was served."""

    def __init__(self, tc: Trailcache, corpus: dict[str, str], scope: str,
                 out: Callable[[str], object] = print) -> None:
        self.tc, self.corpus, self.scope, self.out = tc, corpus, scope, out

    def search(self, query: str, k: int = 3) -> list[str]:
        """Keyword overlap over the local copy of the sections; ties broken by id (deterministic)."""
        q = words(query)
        scored = sorted(((len(q & words(text)), sid) for sid, text in self.corpus.items()), key=lambda x: (-x[0], x[1]))
        return [sid for score, sid in scored[:k] if score > 0]

    def answer(self, question: str) -> Answer:
        hit = self.tc.recall(question, scope=self.scope)
        how = f"{hit.outcome} ({hit.reason}, confidence {hit.confidence:.2f})"
        if hit.failed_open:
            self.out(f"   recall → the cache is unreachable ({hit.error}); carrying on without it")
        if hit.served:
            sections = hit.served_sections
            self.out(f"   recall → {how}: {len(sections)} verified section(s), no search needed")
            best = sections[0]
            return Answer(question, first_sentences(best.text or ""), [s.id for s in sections],
                          [{"tool": "recall", "args": {"q": question}, "returned": [s.id for s in sections]}], hit, 0)
        steps, calls = [], 0
        candidates: list[str] = []
        if hit.outcome == "hint":
            self.out(f"   recall → {how}: reading {', '.join(hit.section_ids)} first")
            candidates += hit.section_ids
        else:
            self.out(f"   recall → {how}: searching")
        found = self.search(question)
        calls += 1
        steps.append({"tool": "search", "args": {"q": question}, "returned": found})
        self.out(f"   search → {', '.join(found)}")
        for sid in found:
            if sid not in candidates:
                candidates.append(sid)
        best = max(candidates, key=lambda sid: (len(words(question) & words(self.corpus.get(sid, ""))),
                                                -candidates.index(sid)))
        calls += 1
        steps.append({"tool": "read", "args": {"id": best}, "returned": [best]})
        return Answer(question, first_sentences(self.corpus[best]), [best], steps, hit, calls)

    def accepted(self, answer: Answer) -> None:
        """The user accepted the answer: record the trail; say whether what was served helped."""
        if answer.recall and answer.recall.served:
            self.tc.feedback(answer.recall, accepted=True)
            self.out("   feedback → the served sections answered it")
            return
        trail = self.tc.record(answer.question, answer.cited, scope=self.scope, steps=answer.steps,
                               recall_id=answer.recall, answer=answer.text)
        self.out(f"   accepted → recorded trail {trail.trail_id} ({trail.status}) citing {', '.join(answer.cited)}")


def first_sentences(text: str, n: int = 2) -> str:
    return " ".join(re.split(r"(?<=[.!?])\s+", text.strip())[:n])


def load_corpus(tc: Trailcache) -> dict[str, str]:
    corpus = {}
    for sid in DEMO_SECTION_IDS:
        try:
            section = tc.get_section(sid)
        except NotFoundError:
            continue
        if section.text:
            corpus[sid] = section.text
    return corpus


def run(tc: Trailcache, scope: str, out: Callable[[str], object] = print) -> list[Answer]:
    corpus = load_corpus(tc)
    if not corpus:
        raise SystemExit("none of the demo sections were found: use the API key `make run` printed (tenant 'demo')")
    agent = Agent(tc, corpus, scope, out)
    answers = []
    for i, (question, accept) in enumerate([(FIRST, True), (REWORDED, True), (DIFFERENT, False)], start=1):
        out(f"\n{i}. {question}")
        answer = agent.answer(question)
        out(f"   answer ({answer.tool_calls} tool calls) → {answer.text}")
        if accept:
            agent.accepted(answer)
        answers.append(answer)
    return answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("TRAILCACHE_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--api-key", default=os.environ.get("TRAILCACHE_API_KEY"))
    parser.add_argument("--scope", default=f"example:agent-loop:{secrets.token_hex(4)}")
    args = parser.parse_args(argv)
    if not args.api_key:
        parser.error("pass --api-key or set TRAILCACHE_API_KEY (make run prints the demo tenant's key)")
    with Trailcache(args.url, args.api_key, fail_open=True) as tc:
        print(f"Trailcache at {args.url}, scope {args.scope}")
        answers = run(tc, args.scope)
    outcomes = [a.recall.outcome if a.recall else "-" for a in answers]
    print(f"\noutcomes: {' → '.join(outcomes)}")
    return 0 if not any(a.recall and a.recall.failed_open for a in answers) else 1


if __name__ == "__main__":
    sys.exit(main())
