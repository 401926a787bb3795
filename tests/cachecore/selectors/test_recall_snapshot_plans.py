"""The plan of recall's first read where the tables have no statistics yet (a fresh install's
first minute, before autovacuum analyses what a new tenant loaded): each candidate's cited
sections are read by the candidate's key, never every citation of the tenant with its coverage
(25 ms instead of 1 ms on 378 sections, docs/performance.md). Against a real PostgreSQL with
pgvector; EXPLAIN ANALYZE counts the rows each table gave."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from cachecore.embedding import get_embedder
from cachecore.engine.pairfeatures import content_words
from cachecore.engine.text import normalise_query
from cachecore.selectors.nearest import vector_literal
from cachecore.selectors.recall_snapshot import generic_plan_settings, recall_snapshot, snapshot_sql
from cachecore.selectors.rivals import covering_sql
from tenants.caller import tenant_caller

pytestmark = pytest.mark.django_db

TOPICS = ["broker", "worker", "queue", "retry", "timeout", "schedule", "result", "routing", "logging", "signal"]
TRAILS = 40
CANDIDATES = 5
TABLES = ("cachecore_trail", "cachecore_citation", "cachecore_section", "cachecore_sectionchunk",
          "cachecore_sectionsentence", "cachecore_termfrequency")


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _forget_statistics() -> None:
    """As a fresh install has them (inside the test's transaction, rolled back after it): no
    column statistics, and the trails' and citations' partitions analysed while empty (the
    partitioning migration analyses them)."""
    like = " OR ".join(f"relname LIKE '{t}%%'" for t in TABLES)
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM pg_statistic WHERE starelid IN (SELECT oid FROM pg_class WHERE {like})")
        cur.execute("UPDATE pg_class SET reltuples = 0, relpages = 0 WHERE relkind = 'r' AND "
                    "(relname LIKE 'cachecore_trail_p%%' OR relname LIKE 'cachecore_citation_p%%')")


def test_a_candidates_cited_sections_are_read_by_its_key_without_statistics(caller):
    sections = {f"{topic}#{n}": f"How the {topic} behaves in case {n}: the {topic} setting number {n} "
                                f"controls what happens when the {topic} meets condition {n}."
                for topic in TOPICS for n in range(TRAILS // len(TOPICS))}
    caller.upsert(sections)
    for sid in sections:
        topic, n = sid.split("#")
        caller.record(query=f"what does {topic} setting {n} control", cited=[sid])
    _forget_statistics()
    query = normalise_query("what does the retry setting 2 control")
    vector = vector_literal(get_embedder().embed_one(query))
    terms = sorted(content_words(query))
    read_as = tenant_caller(caller.tenant)
    settings_sql, statement, params = snapshot_sql(caller=read_as, scope="default", terms=terms, limit=CANDIDATES)
    with connection.cursor() as cur:
        if settings_sql:
            cur.execute(settings_sql)
        cur.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", [vector, *params])
        raw = cur.fetchone()[0]
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    read: dict[str, float] = {}
    for node in _nodes(plan):
        relation = node.get("Relation Name", "")
        if relation.startswith(("cachecore_citation", "cachecore_sectionchunk")):
            table = "citation" if relation.startswith("cachecore_citation") else "chunk"
            read[table] = read.get(table, 0) + node["Actual Rows"] * node["Actual Loops"]
    # One citation per candidate; each short section is one chunk (or a few): never the
    # tenant's 40 citations per candidate.
    assert read.get("citation", 0) <= CANDIDATES, read
    assert read.get("chunk", 0) <= 3 * CANDIDATES, read
    # And the read itself answers as before: the candidates with their cited section's coverage.
    snapshot = recall_snapshot(caller=read_as, scope="default", vector=vector, terms=terms, limit=CANDIDATES)
    assert len(snapshot.candidates) == CANDIDATES
    assert snapshot.candidates[0].query_normalised == "what does retry setting 2 control"
    assert all(len(c.cited) == 1 and c.cited[0].coverage is not None for c in snapshot.candidates)


def test_a_small_tenants_generic_plan_reads_its_own_chunks_beside_a_large_tenant(make_caller):
    """The covering read's generic plan (the prepared statement a recall runs) on the exact
    path: a tenant with a few chunks beside one holding nearly all of them reads its own through
    the index, never a scan of every tenant's chunks."""
    large, small = make_caller(), make_caller()
    large.upsert({f"{topic}#{n}": f"The {topic} option {n} sets how the {topic} reacts to event {n}."
                  for topic in TOPICS for n in range(30)})
    small.upsert({"broker#visibility": "The visibility timeout is how long the broker waits for an ack."})
    with connection.cursor() as cur:
        cur.execute("SELECT tenant_id = %s, count(*) FROM cachecore_sectionchunk GROUP BY 1 ORDER BY 1",
                    [small.tenant.pk])
        assert [n for _, n in cur.fetchall()][0] >= 150  # the large tenant's chunks are there
        cur.execute("ANALYZE cachecore_sectionchunk")
    read_as = tenant_caller(small.tenant)
    settings_sql, statement, params = covering_sql(caller=read_as, scope="default", terms=[], threshold=0.3,
                                                   exclude=[])
    assert settings_sql == ""  # the exact path
    numbered = iter(range(1, 1000))
    body = re.sub(r"%s", lambda _: f"${next(numbered)}", statement)
    values = [vector_literal(get_embedder().embed_one("how long does the broker wait")), *params]
    with connection.cursor() as cur:
        cur.execute(f"{generic_plan_settings(settings_sql)}SET LOCAL plan_cache_mode = force_generic_plan")
        cur.execute(f"PREPARE covering_generic AS {body}")
        cur.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE covering_generic({', '.join(['%s'] * len(values))})",
                    values)
        raw = cur.fetchone()[0]
        cur.execute("DEALLOCATE covering_generic")
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    chunk_scans = [n for n in _nodes(plan) if n.get("Relation Name") == "cachecore_sectionchunk"]
    assert chunk_scans and all(n["Node Type"] != "Seq Scan" for n in chunk_scans), [n["Node Type"] for n in chunk_scans]
    assert sum(n.get("Rows Removed by Filter", 0) for n in chunk_scans) == 0
