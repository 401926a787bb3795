"""A recorded question typed again in a few other words, and changed in one: what recall answers.

``python -m research.light_rewordings [--corpus faq|celery|flask|pytest|click ...] [--limit N] [--out DIR]``

The hard sets' same-need rewordings avoid the recorded question's words (that is what makes them
hard) and their close-but-different questions reuse them, so a scorer fitted on them reads shared
words as a near miss's. A user who asks again mostly keeps the words. ``tests/data/eval/
<set>_light.jsonl`` gives each item two *light* rewordings (another inflection, one synonym, a
generic word added or dropped, a clause moved: the same need) and one *near miss* (one change:
a version, a sibling object or setting, the opposite direction, a negation, the scope: another
need, which the item's gold section does not answer).

This study records one active trail per item (its question citing its gold section), as the
replay does, at the shipped defaults, then recalls every light rewording and near miss once. Per
side (calibration / held-out) and kind: the item's own trail served as text (prefetch) or as a
hint, another trail as text or as a hint, or a miss. For a near miss the own trail as text is a
wrong prefetch; another trail's text may be right (its section may answer the changed question).
Writes ``reports/light_rewordings/<corpus>.json``. Research only: product code never imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from research.corpora import CORPORA
from research.near_repeats import OUTCOMES, classify
from research.splits import CALIBRATION, HELD_OUT, REPO_ROOT
from research.stats import wilson

KINDS = ("light", "near_miss")


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
    tenant = _study_tenant(f"light-{corpus_name}", f"Light rewordings ({corpus_name})", overrides={}, floor=None)
    counts: dict[str, Counter] = {f"{side}:{kind}": Counter() for side in (CALIBRATION, HELD_OUT) for kind in KINDS}
    answers: list[dict[str, Any]] = []
    try:
        ids = ingest_corpus(tenant, corpus.docs, corpus.subtrees)
        items = [i for i in corpus.items() if i.gold and i.light and all(g in ids for g in i.gold)][:limit]
        caller = tenant_caller(tenant)
        own = record_items(tenant, corpus, items, ids)
        with Progress("recall light rewordings and near misses", len(items)) as bar:
            for i in items:
                for kind, query in [("light", q) for q in i.light] + [("near_miss", m.question) for m in i.near_miss]:
                    answer = recall(caller=caller, scope=corpus.scope, query=query).answer
                    outcome = classify(outcome=str(answer.outcome), trail_id=answer.trail_id, own=own[i.id])
                    counts[f"{i.side}:{kind}"][outcome] += 1
                    counts[f"{i.side}:{kind}"]["n"] += 1
                    answers.append({"item": i.id, "side": i.side, "kind": kind, "query": query, "outcome": outcome,
                                    "reason": str(answer.reason), "confidence": answer.confidence})
                bar.step()
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    return {"corpus": corpus_name, "items": len(items), "counts": {k: dict(c) for k, c in counts.items()},
            "answers": answers}


def _rate(k: int, n: int) -> str:
    if not n:
        return "–"
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {100 * k / n:.0f} % [{100 * lo:.0f}–{100 * hi:.0f}]"


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['corpus']}: {report['items']} items",
             "| side | kind | asked | " + " | ".join(o.replace("_", " ") for o in OUTCOMES) + " | headline |",
             "|---|---|---|" + "---|" * (len(OUTCOMES) + 1)]
    for key, c in report["counts"].items():
        side, kind = key.split(":")
        n = c.get("n", 0)
        headline = (f"own text {_rate(c.get('own_prefetch', 0), n)}" if kind == "light"
                    else f"any prefetch {_rate(c.get('own_prefetch', 0) + c.get('other_prefetch', 0), n)}")
        lines.append(f"| {side} | {kind} | {n} | " + " | ".join(str(c.get(o, 0)) for o in OUTCOMES)
                     + f" | {headline} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.light_rewordings")
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA), default=None,
                        help="repeatable; default: every corpus with a light set")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "light_rewordings")
    args = parser.parse_args(argv)
    names = args.corpus or [n for n, c in sorted(CORPORA.items()) if any(i.light for i in c.items())]
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        report = run(name, limit=args.limit)
        (args.out / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(table(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
