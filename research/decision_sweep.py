"""The shipped defaults' decisions at several values of one of the engine's fixed margins
(a ``decide.Policy`` field), every read made once and decided at each value.

``python -m research.decision_sweep --corpus faq|celery|flask|qqp --field FIELD --values A,B,…
[--side calibration|held_out]``

* ``faq``, ``celery``, ``flask``: the replay's tenant (``research.calibration_replay``: the
  corpus ingested, every section's chunks, one trail per item citing its gold section), then
  every item's two same-need rewordings and two close-but-different questions recalled. Per side
  and value, the prefetches by class: a same-need question served its own trail, another trail
  carrying its gold section, or a wrong one; a close question its gold section answers anyway,
  one served a section that answers it (where the set names it), or a wrong one.
* ``qqp``: ``research.qqp_cache``'s tenant and sample of one side (10,000 trails, 500 duplicate
  and 500 non-duplicate ``b`` questions; ``--side``, calibration by default), the prefetches by
  label and whether the pair's trail was served.

No labels, no operating point: the defaults' first round. Used for
``section_route_min_similarity`` and ``ambiguity_margin`` (docs/evaluation.md). Research only:
product code never imports this module.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from research.corpora import CORPORA
from research.splits import CALIBRATION, HELD_OUT

CLASSES = ("same_own", "same_right", "same_wrong", "close_answered", "close_right", "close_wrong")
QQP_CLASSES = ("duplicate_pair", "duplicate_other", "non_duplicate_pair", "non_duplicate_other")


def classify(*, kind: str, own: bool, answered: bool, named: set[str], served: set[str]) -> str:
    """The class of a prefetch (``CLASSES``): ``kind`` same|close, ``own`` the item's own trail
    served, ``answered`` a close question its gold section answers anyway, ``named`` the sections
    that answer the question (the gold ones for a same-need question), ``served`` those served."""
    if kind == "same":
        return "same_own" if own else ("same_right" if named & served else "same_wrong")
    if answered:
        return "close_answered"
    return "close_right" if named & served else "close_wrong"


def _decider(tenant: Any, field: str, values: Sequence[float]) -> Callable[[str, str], dict[float, Any]]:
    """A function from a question and a scope to its decision at each value (one read, as recall
    makes it)."""
    from cachecore.embedding import get_embedder
    from cachecore.engine.decide import decide
    from cachecore.engine.pairfeatures import content_words
    from cachecore.engine.text import normalise_query
    from cachecore.selectors.nearest import vector_literal
    from cachecore.services.recall import _read, tenant_policy
    from tenants.caller import tenant_caller

    tenant.refresh_from_db()
    caller = tenant_caller(tenant, actor_label="research:decision_sweep")
    base = tenant_policy(tenant)
    if field not in {f.name for f in dataclasses.fields(base)}:
        raise ValueError(f"not a Policy field: {field!r}")
    policies = {v: dataclasses.replace(base, **{field: v}) for v in values}
    embedder = get_embedder()

    def decisions(question: str, scope: str) -> dict[float, Any]:
        query = normalise_query(question)
        vector = vector_literal(embedder.embed_query(query, tenant=tenant.pk))
        # Both reads for every question: the swept field may decide whether the second is needed.
        read = _read(caller=caller, scope=scope, query=query, vector=vector, terms=sorted(content_words(query)),
                     policy=None)
        return {v: decide(query=query, candidates=read.candidates, policy=p, budget=tenant.default_budget_tokens,
                          idf=read.idf, rivals=read.rivals, sentence_rivals=read.sentence_rivals)
                for v, p in policies.items()}

    return decisions


def sweep_corpus(corpus_name: str, field: str, values: Sequence[float]) -> dict[str, Any]:
    """A documentation corpus's prefetches by class, per side and value."""
    from research.calibration_replay import pick_items
    from research.corpora import ingest_corpus, record_items
    from tenants.models import Tenant
    from tenants.services import tenant_create

    corpus = CORPORA[corpus_name]
    tenant = tenant_create(slug=f"sweep-{corpus_name}-{random.randrange(16**6):06x}", name=f"Sweep ({corpus_name})")
    counts = {v: {HELD_OUT: Counter(), CALIBRATION: Counter()} for v in values}
    probes: dict[str, Counter] = {HELD_OUT: Counter(), CALIBRATION: Counter()}
    try:
        known = ingest_corpus(tenant, corpus.docs, corpus.subtrees)
        items = pick_items(corpus.items(), known, None)
        trail_of = record_items(tenant, corpus, items, known)
        decisions = _decider(tenant, field, values)
        for i in items:
            gold = {g for g in i.gold if g in known}
            asked = [("same", q, False, gold) for q in i.same_need[:2]]
            asked += [("close", c.question, c.answered_by_source,
                       gold if c.answered_by_source else {a for a in c.answer if a in known}) for c in i.close[:2]]
            for kind, question, answered, named in asked:
                probes[i.side]["same" if kind == "same" else ("close_answered" if answered else "close")] += 1
                for value, decision in decisions(question, corpus.scope).items():
                    if str(decision.outcome) == "prefetch":
                        served = {s["id"] for s in decision.sections}
                        counts[value][i.side][classify(kind=kind, own=trail_of[i.id] in decision.trails,
                                                       answered=answered, named=named, served=served)] += 1
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    return {"corpus": corpus_name, "field": field, "classes": list(CLASSES),
            "probes": {s: dict(c) for s, c in probes.items()},
            "values": {str(v): {s: {k: c[k] for k in CLASSES} for s, c in by_side.items()}
                       for v, by_side in counts.items()}}


def sweep_qqp(side: str, field: str, values: Sequence[float]) -> dict[str, Any]:
    """QQP's prefetches by label (duplicate or not) and whether the pair's trail was served."""
    from cachecore.engine.text import normalise_query
    from research.qqp_cache import SCOPE, populate_tenant, sample_pairs
    from research.splits import qqp_pairs
    from tenants.models import Tenant
    from tenants.services import tenant_create

    sample = sample_pairs(qqp_pairs(), side=side, duplicates=500, non_duplicates=500, trails=10_000, seed=0,
                          norm=normalise_query)
    tenant = tenant_create(slug=f"sweep-qqp-{random.randrange(16**6):06x}", name="Sweep (qqp)")
    counts = {v: Counter() for v in values}
    try:
        trail_of, _, _ = populate_tenant(tenant, sample.trail_questions, progress=False)
        decisions = _decider(tenant, field, values)
        for s in sample.pairs:
            pair_trail = trail_of.get(normalise_query(s.pair.a))
            for value, decision in decisions(s.pair.b, SCOPE).items():
                if str(decision.outcome) == "prefetch":
                    counts[value][s.label + ("_pair" if pair_trail in decision.trails else "_other")] += 1
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    labels = Counter(s.label for s in sample.pairs)
    return {"corpus": "qqp", "field": field, "classes": list(QQP_CLASSES),
            "probes": {side: dict(labels)},
            "values": {str(v): {side: {k: c[k] for k in QQP_CLASSES}} for v, c in counts.items()}}


def table(report: dict[str, Any]) -> str:
    """The sweep as a Markdown table, one row per side and value."""
    classes = report["classes"]
    lines = [f"| side | {report['field']} | " + " | ".join(classes) + " |", "|---|---|" + "---|" * len(classes)]
    for side in report["probes"]:
        for value, by_side in report["values"].items():
            lines.append(f"| {side} | {value} | " + " | ".join(str(by_side[side][k]) for k in classes) + " |")
    probes = "; ".join(f"{s}: {dict(c)}" for s, c in report["probes"].items())
    return "\n".join(lines) + f"\n\nprobes: {probes}"


def main(argv: Sequence[str] | None = None) -> int:
    import django

    parser = argparse.ArgumentParser(prog="python -m research.decision_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=(*sorted(CORPORA), "qqp"), required=True)
    parser.add_argument("--field", required=True, help="a decide.Policy field, e.g. ambiguity_margin")
    parser.add_argument("--values", required=True, help="comma-separated values to decide at")
    parser.add_argument("--side", choices=(CALIBRATION, HELD_OUT), default=CALIBRATION, help="QQP's side")
    args = parser.parse_args(argv)
    values = [float(x) for x in args.values.split(",") if x.strip()]
    django.setup()
    report = (sweep_qqp(args.side, args.field, values) if args.corpus == "qqp"
              else sweep_corpus(args.corpus, args.field, values))
    print(table(report))
    return 0


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(main())
