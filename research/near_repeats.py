"""A recorded question asked again, nearly verbatim: what recall answers, at the shipped defaults.

``python -m research.near_repeats [--corpus celery|faq|flask] [--limit N] [--out DIR]``
``python -m research.near_repeats --qqp`` (the restatement rule on QQP's labelled pairs; no database)

Repeat traffic is this product's point, yet the hard sets the scorer is fitted on hold no
repeat: their same-need rewordings avoid the question's words and their near misses reuse them.
This study records one active trail per item of a corpus (its question, citing its gold
section), as the replay does, then recalls each item's question again in eight forms:

- ``verbatim``: the question itself;
- ``function_words``: one function word swapped ("how do I" → "how can I", "what is" → "what's",
  "can I" → "could I"; items whose question has none of them are left out);
- ``article_dropped``: the first "a", "an" or "the" left out (items without one are left out);
- ``prefixed``: "Quick question: " in front;
- ``greeted``: "Hi! " in front and " Thanks." after;
- ``emoji``: "Hi 👋 " in front and " 🙂" after;
- ``how_to``: "how do I" (or "how can I") asked as "how to";
- ``asker_changed``: "how do I" (or "how can I") asked as "how do you";
- ``keywords``: the question typed into a search box: its interrogative phrase ("how do I",
  "what is", "why does"), articles, auxiliaries, pronouns and prepositions of place left out;
- ``typo``: two letters swapped in the middle of its longest word (5 letters or more), as a
  hurried typist does;
- ``last_word_dropped``: the question without its last word.

The first three say the same thing as the recorded question (``evidence.restates``), and so do the
next three, whose framing normalisation leaves out (``text.without_framing``), and the next two,
asked by someone else around the same words (``evidence.asks_the_same``); keywords restate a
"how" question unless a word the rule keeps ("for", "with", "to") was left out, and any other
question never (its kind of answer is gone); the last two misspell or take away a word, which the
scorer judges (a typo of a word no section holds restates). It also asks each item's first same-need rewording and first
close-but-different question plain and in the three framings (``framed``). Per form: the recorded
trail served as text (prefetch), as a hint, another trail served as text or hint, or a miss. Writes
``reports/near_repeats/<corpus>.json``. Research only: product code never imports this module.

``--qqp`` applies the restatement rule to every pair of the vendored QQP slice and counts how
often it calls a pair the same question among duplicates and non-duplicates (nothing here was
fitted on QQP: the rule has no constant).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from research.corpora import CORPORA
from research.splits import REPO_ROOT

FORMS = ("verbatim", "function_words", "article_dropped", "prefixed", "greeted", "emoji", "how_to",
         "asker_changed", "keywords", "typo", "last_word_dropped")
OUTCOMES = ("own_prefetch", "own_hint", "other_prefetch", "other_hint", "miss")
_SWAPS = ((r"^how do i\b", "how can i"), (r"^what is\b", "what's"), (r"^can i\b", "could i"),
          (r"^how does\b", "how can"), (r"^is it possible to\b", "can i"))
# A question typed into a search box: its interrogative phrase, articles, auxiliaries, pronouns
# and prepositions of place left out ("how do I give a task a name in celery?" → "give task name
# celery"). Written here for the study, not from the product's rule.
_ASKING = re.compile(r"^(how|what|why|when|where|which|who)( (do|does|did|can|could|should|would|is|are))?"
                     r"( (i|you|we|one))?( to)?\b ?")
_KEYWORD_DROPPED = frozenset("a an the my your i you is are do does on in at of by".split())


def forms_of(question: str) -> dict[str, str]:
    """The forms of ``question`` this study recalls (see the module docstring); a form that does
    not apply to it is absent."""
    q = question.strip()
    lower = q.lower()
    out = {"verbatim": q}
    for pattern, repl in _SWAPS:
        if re.search(pattern, lower):
            out["function_words"] = re.sub(pattern, repl, lower, count=1)
            break
    dropped = re.sub(r"\b(a|an|the) ", "", q, count=1, flags=re.IGNORECASE)
    if dropped != q:
        out["article_dropped"] = dropped
    framings = framed(q)
    out["prefixed"], out["greeted"], out["emoji"] = framings["prefixed"], framings["greeted"], framings["emoji"]
    if re.search(r"^how (do|can) i\b", lower):
        out["how_to"] = re.sub(r"^how (do|can) i\b", "how to", lower, count=1)
        out["asker_changed"] = re.sub(r"^how (do|can) i\b", "how do you", lower, count=1)
    keywords = [w for w in _ASKING.sub("", lower.rstrip("?!. ")).split() if w not in _KEYWORD_DROPPED]
    if len(keywords) >= 2:
        out["keywords"] = " ".join(keywords)
    longest = max(re.findall(r"[A-Za-z]+", q), key=len, default="")
    if len(longest) >= 5:
        m = len(longest) // 2
        out["typo"] = q.replace(longest, longest[:m - 1] + longest[m] + longest[m - 1] + longest[m + 1:], 1)
    words = q.rstrip("?. ").split()
    if len(words) > 2:
        out["last_word_dropped"] = " ".join(words[:-1]) + "?"
    return out


FRAMINGS = ("plain", "greeted", "prefixed", "emoji")


def framed(question: str) -> dict[str, str]:
    """``question`` plain and in three framings ("Hi! … Thanks.", "Quick question: …", "Hi 👋 …
    🙂"): the forms ``prefixed``, ``greeted`` and ``emoji`` of a recorded question, and what is
    asked of an item's first rewording and first close question."""
    return {"plain": question, "greeted": f"Hi! {question} Thanks.", "prefixed": "Quick question: " + question,
            "emoji": f"Hi 👋 {question} 🙂"}


def classify(*, outcome: str, trail_id: str | None, own: str) -> str:
    """One of ``OUTCOMES`` for a recall's answer."""
    if outcome == "miss" or trail_id is None:
        return "miss"
    return f"{'own' if trail_id == own else 'other'}_{'prefetch' if outcome == 'prefetch' else 'hint'}"


def run(corpus_name: str, *, limit: int | None = None) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from cachecore.services.recall import recall
    from docingest.progress import Progress
    from research.corpora import ingest_corpus, record_items
    from research.match_calibration import _study_tenant
    from tenants.caller import tenant_caller
    from tenants.models import Tenant

    corpus = CORPORA[corpus_name]
    # At the shipped defaults: no low floor, the tenant's own cuts.
    tenant = _study_tenant(f"near-{corpus_name}", f"Near repeats ({corpus_name})", overrides={}, floor=None)
    counts: dict[str, Counter] = {f: Counter() for f in FORMS}
    # An item's first rewording and first close question, plain and framed.
    asked: dict[str, Counter] = {f"{kind}_{f}": Counter() for kind in ("same_need", "close") for f in FRAMINGS}
    try:
        ids = ingest_corpus(tenant, corpus.docs, corpus.subtrees)
        items = [i for i in corpus.items() if i.gold and all(g in ids for g in i.gold)][:limit]
        caller = tenant_caller(tenant)
        own = record_items(tenant, corpus, items, ids)
        with Progress("recall near repeats", len(items)) as bar:
            for i in items:
                for form, query in forms_of(i.question).items():
                    answer = recall(caller=caller, scope=corpus.scope, query=query).answer
                    counts[form][classify(outcome=str(answer.outcome), trail_id=answer.trail_id, own=own[i.id])] += 1
                    counts[form]["n"] += 1
                for kind, question in (("same_need", i.same_need[0] if i.same_need else None),
                                       ("close", i.close[0].question if i.close else None)):
                    for f, query in (framed(question) if question else {}).items():
                        answer = recall(caller=caller, scope=corpus.scope, query=query).answer
                        asked[f"{kind}_{f}"][classify(outcome=str(answer.outcome), trail_id=answer.trail_id,
                                                      own=own[i.id])] += 1
                        asked[f"{kind}_{f}"]["n"] += 1
                bar.step()
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    return {"corpus": corpus_name, "items": len(items), "forms": {f: dict(c) for f, c in counts.items()},
            "framed": {f: dict(c) for f, c in asked.items()}}


def qqp_rule() -> dict[str, Any]:
    """How often ``evidence.restates`` calls a QQP pair the same question, by label."""
    from cachecore.engine.evidence import TextEvidence, restates
    from cachecore.engine.text import normalise_query
    from research.splits import qqp_pairs

    counts: Counter[str] = Counter()
    for pair in qqp_pairs():
        label = "duplicate" if pair.duplicate else "non_duplicate"
        counts[label] += 1
        counts[f"{label}_restated"] += restates(TextEvidence.of(normalise_query(pair.a)),
                                                TextEvidence.of(normalise_query(pair.b)))
    return dict(counts)


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['corpus']}: {report['items']} recorded questions, asked again at the shipped defaults", "",
             "| form | asked | own trail as text | own as hint | another trail as text | another as hint | miss |",
             "|---|---|---|---|---|---|---|"]
    for form, c in report["forms"].items():
        n = c.get("n", 0)
        if n:
            lines.append(f"| {form} | {n} | " + " | ".join(f"{c.get(o, 0)}" for o in OUTCOMES) + " |")
    lines += ["", "Each item's first rewording (same need) and first close question, plain and framed:", "",
              "| asked | n | own trail as text | own as hint | another trail as text | another as hint | miss |",
              "|---|---|---|---|---|---|---|"]
    for name, c in report.get("framed", {}).items():
        if c.get("n", 0):
            lines.append(f"| {name} | {c['n']} | " + " | ".join(f"{c.get(o, 0)}" for o in OUTCOMES) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.near_repeats")
    parser.add_argument("--corpus", default="celery", choices=sorted(CORPORA))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--qqp", action="store_true", help="the restatement rule on QQP's labelled pairs")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "near_repeats")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.qqp:
        report = qqp_rule()
        (args.out / "qqp-rule.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        for label in ("duplicate", "non_duplicate"):
            print(f"{label}: restated {report.get(label + '_restated', 0)} of {report.get(label, 0)}")
        return 0
    report = run(args.corpus, limit=args.limit)
    (args.out / f"{args.corpus}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
