"""Recall's two reads on a documentation tenant, timed as recall runs them (prepared, generic
plans), optionally with the statistics a fresh install has and beside a large tenant.

``python -m research.read_plans [--corpus flask] [--beside faq] [--forget-statistics]
[--analyze] [--questions 100] [--chunk-route auto|exact|hnsw]``

The corpus is ingested into a tenant of its own (``research.corpora.ingest_corpus``) with one
trail per item citing its gold section (``record_items``); ``--beside`` ingests a second corpus into another tenant
(its sections and chunks only) first. Each question's two reads (``recall_snapshot``,
``recall_covering``) are timed in a fresh database session, once all are warm; printed: p50 of
each. ``--forget-statistics`` first makes the tables' statistics what a fresh install has: no
column statistics, the trails' and citations' partitions analysed while empty (it needs the
database's superuser, as the embedded server gives; run ``ANALYZE`` after to restore them);
``--analyze`` analyses the tables instead, as autovacuum does within a minute or so.
``--chunk-route`` forces the covering read's route over the tenant's chunks (``auto``: the
product's choice, ``rivals.chunk_route``, printed); with ``exact`` or ``hnsw`` it also prints how
many questions found the same best sections as the other route. ``--recall`` also times
``services.recall`` on the same questions (embedding included, the query-vector cache emptied
before each call; the product's route only).
Both tenants are deleted at the end. Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence

TABLES = ("cachecore_trail", "cachecore_citation", "cachecore_section", "cachecore_sectionchunk",
          "cachecore_sectionsentence", "cachecore_termfrequency")


def forget_statistics() -> None:
    """The statistics of a fresh install's first minute (see the module's docstring)."""
    from django.db import connection

    like = " OR ".join(f"relname LIKE '{t}%%'" for t in TABLES)
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM pg_statistic WHERE starelid IN (SELECT oid FROM pg_class WHERE {like})")
        cur.execute("UPDATE pg_class SET reltuples = 0, relpages = 0 WHERE relkind = 'r' AND "
                    "(relname LIKE 'cachecore_trail_p%%' OR relname LIKE 'cachecore_citation_p%%')")
        cur.execute("UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE relname IN "
                    "('cachecore_section', 'cachecore_sectionchunk', 'cachecore_sectionsentence', "
                    "'cachecore_termfrequency')")


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="flask", choices=("faq", "celery", "flask"))
    parser.add_argument("--beside", default=None, choices=("faq", "celery", "flask"))
    parser.add_argument("--forget-statistics", action="store_true")
    parser.add_argument("--analyze", action="store_true")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--chunk-route", default="auto", choices=("auto", "exact", "hnsw"))
    parser.add_argument("--recall", action="store_true")
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.db import connection

    from cachecore.embedding import get_embedder
    from cachecore.engine.pairfeatures import content_words
    from cachecore.engine.text import normalise_query
    from cachecore.selectors.nearest import vector_literal
    from cachecore.selectors.recall_snapshot import recall_covering, recall_snapshot
    from cachecore.selectors.rivals import chunk_route
    from cachecore.services.recall import recall
    from research.calibration_replay import pick_items
    from research.corpora import CORPORA, ingest_corpus, record_items
    from tenants.caller import tenant_caller
    from tenants.models import Tenant
    from tenants.services import tenant_create

    tag = f"{random.randrange(16**6):06x}"
    made: list[Tenant] = []
    try:
        if args.beside:
            other = tenant_create(slug=f"plans-beside-{tag}", name="Read plans (beside)")
            made.append(other)
            ingest_corpus(other, CORPORA[args.beside].docs, CORPORA[args.beside].subtrees)
        corpus = CORPORA[args.corpus]
        tenant = tenant_create(slug=f"plans-{tag}", name="Read plans")
        made.append(tenant)
        known = ingest_corpus(tenant, corpus.docs, corpus.subtrees)
        items = pick_items(corpus.items(), known, None)
        record_items(tenant, corpus, items, known)
        if args.forget_statistics:
            forget_statistics()
        elif args.analyze:
            with connection.cursor() as cur:
                cur.execute(f"ANALYZE {', '.join(TABLES)}")
        connection.close()  # a new session: its prepared statements are planned from now on
        tenant.refresh_from_db()
        caller = tenant_caller(tenant, actor_label="research:read_plans")
        questions = [q for i in items for q in i.same_need][: args.questions]
        embedder = get_embedder()
        reads = []
        for q in questions:
            query = normalise_query(q)
            reads.append((vector_literal(embedder.embed_query(query, tenant=tenant.pk)), sorted(content_words(query))))
        forced = None if args.chunk_route == "auto" else args.chunk_route
        other = {"exact": "hnsw", "hnsw": "exact"}.get(args.chunk_route)
        times: dict[str, list[float]] = {"first read": [], "covering read": []}
        same = 0
        for rep in range(2):  # the first pass warms the caches and prepares the statements
            for vector, terms in reads:
                t0 = time.perf_counter()
                snapshot = recall_snapshot(caller=caller, scope=corpus.scope, vector=vector, terms=terms, limit=5)
                t1 = time.perf_counter()
                exclude = [c.trail_id for c in snapshot.candidates]
                covering = recall_covering(caller=caller, scope=corpus.scope, vector=vector, terms=terms,
                                           threshold=tenant.similarity_threshold, exclude=exclude,
                                           chunk_route_as=forced)
                t2 = time.perf_counter()
                if rep:
                    times["first read"].append((t1 - t0) * 1000)
                    times["covering read"].append((t2 - t1) * 1000)
                elif other:
                    against = recall_covering(caller=caller, scope=corpus.scope, vector=vector, terms=terms,
                                              threshold=tenant.similarity_threshold, exclude=exclude,
                                              chunk_route_as=other)
                    same += [s for s, _ in covering.sections] == [s for s, _ in against.sections]
        if args.recall:
            times["services.recall"] = []
            for rep in range(2):
                for q in questions:
                    embedder.cache_clear()
                    t0 = time.perf_counter()
                    recall(caller=caller, scope=corpus.scope, query=q)
                    if rep:
                        times["services.recall"].append((time.perf_counter() - t0) * 1000)
        print(f"{args.corpus} ({len(known)} sections, {len(items)} trails)"
              + (f" beside {args.beside}" if args.beside else "")
              + (", statistics forgotten" if args.forget_statistics else ", analysed" if args.analyze else "")
              + f", chunk route {forced or chunk_route(caller) + ' (auto)'}"
              + ": " + ", ".join(f"{k} p50 {statistics.median(v):.2f} ms (p90 {_p90(v):.2f})"
                                 for k, v in times.items())
              + (f"; the same best sections as the {other} route for {same}/{len(reads)}" if other else ""))
    finally:
        for t in made:
            Tenant.objects.filter(pk=t.pk).delete()
    return 0


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(main())
