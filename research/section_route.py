"""A trail found only through its sections, whose question is unrelated to the query: how far
the section evidence may vouch for it (``decide.section_route_confidence``).

``python -m research.section_route anchor [--questions 4000] [--pairs 20000]``
    The cosine, under the shipped model, of random pairs of questions from the QQP slice's
    calibration side: two questions drawn at random are unrelated, so their upper percentiles
    say how close an unrelated question comes. The product's floor
    (``decide.SECTION_ROUTE_MIN_SIMILARITY``) is their 95th percentile, rounded to two decimals:
    a property of the model, not of any corpus's targets.

``python -m research.section_route compare --corpus faq|celery|flask [--floors 0,0.17,0.25]``
    The replay's tenant at the shipped defaults (``research.calibration_replay``: the corpus
    ingested, every section's chunks, one trail per item citing its gold section), then every
    item's two same-need rewordings and two close-but-different questions recalled once, each
    read decided again at every floor. Per side and floor, the prefetches by class: a same-need
    question served its own trail, another trail carrying its gold section, or a wrong one; a
    close question its gold section answers anyway, one served a section that answers it (where
    the set names it), or a wrong one. No labels, no operating point: the defaults' first
    round, with both questions of each kind.

Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from research.splits import CALIBRATION, HELD_OUT

CLASSES = ("same_own", "same_right", "same_wrong", "close_answered", "close_right", "close_wrong")


def random_pair_cosines(vectors: np.ndarray, *, pairs: int, seed: int = 7) -> np.ndarray:
    """The cosines of ``pairs`` random pairs of distinct rows of ``vectors`` (unit rows)."""
    if len(vectors) < 2:
        raise ValueError("need at least two vectors")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(vectors), size=pairs)
    j = rng.integers(0, len(vectors) - 1, size=pairs)
    j = j + (j >= i)  # a random other row
    return np.einsum("ij,ij->i", vectors[i], vectors[j])


def anchor(*, questions: int = 4000, pairs: int = 20000, seed: int = 7) -> dict[str, float]:
    """Percentiles of the cosine of random QQP calibration question pairs (the shipped model)."""
    from cachecore.embedding import get_embedder
    from cachecore.engine.text import normalise_query
    from research.splits import qqp_side

    texts = sorted({p.a for p in qqp_side(CALIBRATION)} | {p.b for p in qqp_side(CALIBRATION)})
    texts = random.Random(seed).sample(texts, min(questions, len(texts)))
    vectors = np.asarray(get_embedder().embed([normalise_query(t) for t in texts]), dtype=np.float64)
    cosines = random_pair_cosines(vectors, pairs=pairs, seed=seed)
    return {f"p{q}": round(float(np.percentile(cosines, q)), 4) for q in (50, 90, 95, 99)} | {
        "questions": len(texts), "pairs": pairs}


def classify(*, kind: str, own: bool, answered: bool, named: set[str], served: set[str]) -> str:
    """The class of a prefetch (``CLASSES``): ``kind`` same|close, ``own`` the item's own trail
    served, ``answered`` a close question its gold section answers anyway, ``named`` the sections
    that answer the question (the gold ones for a same-need question), ``served`` those served."""
    if kind == "same":
        return "same_own" if own else ("same_right" if named & served else "same_wrong")
    if answered:
        return "close_answered"
    return "close_right" if named & served else "close_wrong"


def compare(corpus_name: str, floors: Sequence[float]) -> dict[str, Any]:
    """The defaults' decisions at each floor, per side (see the module's docstring)."""
    from cachecore.embedding import get_embedder
    from cachecore.engine.decide import decide
    from cachecore.engine.pairfeatures import content_words
    from cachecore.engine.text import normalise_query
    from cachecore.selectors.nearest import vector_literal
    from cachecore.services.recall import _read, tenant_policy
    from cachecore.services.trails import trail_record
    from docingest.ingest import collect_sections, ingest_sections
    from research.corpora import CORPORA, chunks_ensure_cached
    from tenants.caller import tenant_caller
    from tenants.models import Tenant
    from tenants.services import tenant_create

    corpus = CORPORA[corpus_name]
    tenant = tenant_create(slug=f"section-route-{corpus_name}-{random.randrange(16**6):06x}",
                           name=f"Section route ({corpus_name})")
    counts: dict[float, dict[str, Counter]] = {f: {HELD_OUT: Counter(), CALIBRATION: Counter()} for f in floors}
    probes: dict[str, Counter] = {HELD_OUT: Counter(), CALIBRATION: Counter()}
    try:
        caller = tenant_caller(tenant, actor_label="research:section_route")
        sections = collect_sections(corpus.docs, corpus.subtrees)
        known = {s.id for s in sections}
        ingest_sections(tenant=tenant, sections=sections, chunks="defer")
        chunks_ensure_cached(tenant=tenant, section_ids=[s.id for s in sections])
        items = [i for i in corpus.items() if any(g in known for g in i.gold)]
        trail_of: dict[str, str] = {}
        for i in items:
            gold = [g for g in i.gold if g in known]
            trail_of[i.id] = str(trail_record(
                caller=caller, scope=corpus.scope, query=i.question,
                steps=[{"tool": "search", "args": {"q": i.question}, "returned": gold}],
                cited=gold, signal={"source": "caller", "accepted": True}).pk)
        tenant.refresh_from_db()
        base = tenant_policy(tenant)
        policies = {f: dataclasses.replace(base, section_route_min_similarity=f) for f in floors}
        embedder = get_embedder()
        for i in items:
            gold = {g for g in i.gold if g in known}
            asked = [("same", q, False, gold) for q in i.same_need[:2]]
            asked += [("close", c.question, c.answered_by_source,
                       gold if c.answered_by_source else {a for a in c.answer if a in known}) for c in i.close[:2]]
            for kind, question, answered, named in asked:
                probes[i.side]["same" if kind == "same" else ("close_answered" if answered else "close")] += 1
                query = normalise_query(question)
                vector = vector_literal(embedder.embed_query(query, tenant=tenant.pk))
                read = _read(caller=caller, scope=corpus.scope, vector=vector, terms=sorted(content_words(query)))
                for floor, policy in policies.items():
                    decision = decide(query=query, candidates=read.candidates, policy=policy,
                                      budget=tenant.default_budget_tokens, idf=read.idf, rivals=read.rivals,
                                      sentence_rivals=read.sentence_rivals)
                    if str(decision.outcome) != "prefetch":
                        continue
                    served = {s["id"] for s in decision.sections}
                    counts[floor][i.side][classify(kind=kind, own=trail_of[i.id] in decision.trails,
                                                   answered=answered, named=named, served=served)] += 1
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
    return {"corpus": corpus_name, "probes": {s: dict(c) for s, c in probes.items()},
            "floors": {str(f): {s: {k: c[k] for k in CLASSES} for s, c in by_side.items()}
                       for f, by_side in counts.items()}}


def table(report: dict[str, Any]) -> str:
    """The comparison as a Markdown table, one row per side and floor."""
    lines = ["| side | floor | " + " | ".join(CLASSES) + " |", "|---|---|" + "---|" * len(CLASSES)]
    for side in (HELD_OUT, CALIBRATION):
        for floor, by_side in report["floors"].items():
            lines.append(f"| {side} | {floor} | " + " | ".join(str(by_side[side][k]) for k in CLASSES) + " |")
    probes = "; ".join(f"{s}: {dict(c)}" for s, c in report["probes"].items())
    return "\n".join(lines) + f"\n\nprobes: {probes}"


def main(argv: Sequence[str] | None = None) -> int:
    import django

    parser = argparse.ArgumentParser(prog="python -m research.section_route", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("anchor")
    a.add_argument("--questions", type=int, default=4000)
    a.add_argument("--pairs", type=int, default=20000)
    c = sub.add_parser("compare")
    c.add_argument("--corpus", choices=("faq", "celery", "flask"), required=True)
    c.add_argument("--floors", default="0,0.17,0.25")
    args = parser.parse_args(argv)
    django.setup()
    if args.command == "anchor":
        print(anchor(questions=args.questions, pairs=args.pairs))
        return 0
    floors = [float(x) for x in args.floors.split(",") if x.strip()]
    print(table(compare(args.corpus, floors)))
    return 0


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(main())
