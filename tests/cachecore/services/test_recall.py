"""Recall is a handful of SQL statements, however many trails match or sections they cite."""

import importlib

import pytest

from cachecore.embedding import get_embedder
from cachecore.services.recall import recall
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller


def _seed(tenant, trails, sections_per_trail):
    sections = [{"id": f"doc#{i}", "text": f"Section {i} explains how to install Acme, step {i}."}
                for i in range(trails * sections_per_trail)]
    sections_upsert(caller=tenant_caller(tenant), sections=sections)
    for t in range(trails):
        cited = [f"doc#{t * sections_per_trail + j}" for j in range(sections_per_trail)]
        trail_record(caller=tenant_caller(tenant), scope="default", query=f"How do I install Acme, variant {t}?",
                              steps=[], cited=cited, signal={"source": "caller", "accepted": True})


def test_recall_query_count_does_not_grow_with_trails_or_citations(make_tenant, django_assert_max_num_queries,
                                                                   monkeypatch):
    recall_service = importlib.import_module("cachecore.services.recall")  # the module, not the function

    monkeypatch.setattr(recall_service, "MERGE_SIMILARITY_MARGIN", 1.0)  # all five trails merge
    # Bands open wide: every trail over the threshold is confident enough to be merged.
    small, large = (make_tenant(prefetch_confidence=0.0, hint_confidence=0.0, small_tenant_cut=False) for _ in range(2))
    _seed(small, trails=1, sections_per_trail=1)
    _seed(large, trails=5, sections_per_trail=8)
    for tenant in (small, large):
        recall(caller=tenant_caller(tenant), scope="default", query="warm the scope-size cache")
        with django_assert_max_num_queries(8):
            result = recall(caller=tenant_caller(tenant), scope="default", query="How do I install Acme, variant 0?")
        assert result.answer.outcome == "prefetch"
    assert len(result.answer.trails) == 5 and len(result.answer.sections) == 40


def test_a_hit_updates_the_trail_in_place_without_touching_its_indexes(make_tenant):
    """hits/last_hit_at are in no index and pages keep free space: the update is HOT, so the
    HNSW and trigram indexes are not written on every hit."""
    from django.db import connection

    tenant = make_tenant()
    _seed(tenant, trails=1, sections_per_trail=1)

    def hot_updates() -> int:
        with connection.cursor() as cur:
            # Summed over the partitions (the table is partitioned by tenant).
            cur.execute("SELECT sum(pg_stat_get_xact_tuples_hot_updated(relid)) "
                        "FROM pg_partition_tree('cachecore_trail')")
            return cur.fetchone()[0]

    before = hot_updates()
    result = recall(caller=tenant_caller(tenant), scope="default", query="How do I install Acme, variant 0?")
    assert result.answer.outcome == "prefetch"
    # (Within one test transaction old row versions can't be pruned yet, so only the first
    # hit is checked; between requests, pruning keeps making room.)
    assert hot_updates() - before == 1


def test_outside_a_transaction_the_log_write_is_one_statement_without_a_wal_flush_wait(transactional_db,
                                                                                       make_tenant, settings):
    """A recall's own write when it writes inline (the writer thread off), outside any caller's
    transaction: one round trip (SET LOCAL and the statement in one implicit transaction),
    committed, with synchronous_commit off only for it."""
    from django.db import connection

    settings.TRAILCACHE_RECALL_LOG_QUEUE = 0
    from django.test.utils import CaptureQueriesContext

    from cachecore.models import RecallEvent, Trail

    tenant = make_tenant()
    _seed(tenant, trails=1, sections_per_trail=1)
    query = "How do I install Acme, variant 0?"
    recall(caller=tenant_caller(tenant), scope="default", query="warm the scope-size cache")
    with CaptureQueriesContext(connection) as captured:
        result = recall(caller=tenant_caller(tenant), scope="default", query=query)
    assert not connection.in_atomic_block
    writes = [q["sql"] for q in captured.captured_queries if "INSERT INTO cachecore_recallevent" in q["sql"]]
    assert len(writes) == 1 and writes[0].startswith("SET LOCAL synchronous_commit = off; ")
    assert captured.captured_queries[-1]["sql"] == writes[0]  # no COMMIT or savepoint after it
    event = RecallEvent.objects.get(pk=result.recall_id)  # committed: another transaction reads it
    assert event.outcome == "prefetch" and str(event.trail_id) == result.answer.trail_id
    assert Trail.objects.get(pk=result.answer.trail_id).hits == 1
    with connection.cursor() as cur:
        cur.execute("SHOW synchronous_commit")
        assert cur.fetchone()[0] == "on"  # the setting did not outlive the write


@pytest.mark.parametrize("path", ["exact", "hnsw"])
def test_outside_a_transaction_the_reads_are_two_prepared_statements_and_the_write_comes_after(
        transactional_db, make_tenant, settings, path):
    """The snapshot is one statement (no BEGIN, SET TRANSACTION or COMMIT of its own), prepared
    once per database session and then only executed, its SET LOCAL settings in the same round
    trip, the query's vector sent once; the covering sections and the trails citing them are a
    second one, prepared the same way: two round trips per recall once the scope's size is known.
    The write goes to the recall log's writer (its own connection, after the answer). It reads
    what the same statement planned inside a transaction reads."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from cachecore.models import RecallEvent
    from cachecore.selectors import nearest
    from cachecore.selectors.recall_snapshot import recall_snapshot
    from cachecore.services import recall_log

    if path == "hnsw":
        settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS = 0  # every non-empty scope goes through HNSW
    nearest._scope_sizes.clear()
    tenant = make_tenant()
    _seed(tenant, trails=3, sections_per_trail=2)
    try:
        recall(caller=tenant_caller(tenant), scope="default", query="warm the scope-size cache")
        assert nearest.search_path(tenant=tenant, scope="default") == path
        with CaptureQueriesContext(connection) as captured:
            result = recall(caller=tenant_caller(tenant), scope="default", query="How can I install Acme, variant 0?")
        assert result.answer.outcome == "prefetch" and len(result.answer.sections) == 2
        statements = [q["sql"] for q in captured.captured_queries]
        assert len(statements) == 2, statements
        read, cover = statements
        for statement in (read, cover):
            assert "EXECUTE recall_snapshot_" in statement and "PREPARE" not in statement  # by the first recall
            assert statement.count("'[") == 1  # the vector's literal, once
        assert read.startswith("SET LOCAL hnsw.") == (path == "hnsw")
        assert recall_log.flush() and RecallEvent.objects.filter(pk=result.recall_id).exists()
        with connection.cursor() as cur:  # no setting of the read outlived it
            cur.execute("SELECT current_setting('plan_cache_mode'), current_setting('enable_sort')")
            assert cur.fetchone() == ("force_custom_plan", "on")

        vector = nearest.vector_literal(get_embedder().embed_one("how do i install acme, variant 1?"))
        terms = ["acme", "instal", "variant"]
        prepared = recall_snapshot(caller=tenant_caller(tenant), scope="default", vector=vector, terms=terms, limit=5)
        with transaction.atomic():
            planned = recall_snapshot(caller=tenant_caller(tenant), scope="default", vector=vector, terms=terms,
                                      limit=5)
        assert len(prepared.candidates) == 3 and all(len(c.cited) == 2 for c in prepared.candidates)
        assert prepared == planned
    finally:
        nearest._scope_sizes.clear()


def test_a_question_asked_again_as_recorded_is_answered_from_the_first_read_alone(transactional_db, make_tenant):
    """The nearest questions hold the one recorded for this question, its sections unchanged:
    decide serves it whatever else comes close, so the second read (the sections covering the
    query and the trails citing them) is not run. A rewording, or the same question once a cited
    section changed, reads both."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    tenant = make_tenant()
    _seed(tenant, trails=3, sections_per_trail=2)
    caller = tenant_caller(tenant)
    recall(caller=caller, scope="default", query="warm the scope-size cache")

    def statements(query: str):
        with CaptureQueriesContext(connection) as captured:
            result = recall(caller=caller, scope="default", query=query)
        return result.answer, [q["sql"] for q in captured.captured_queries]

    asked, reads = statements("How do I install Acme, variant 0?")
    assert (asked.outcome, asked.confidence, asked.served_ids) == ("prefetch", 1.0, ["doc#0", "doc#1"])
    assert len(reads) == 1 and "EXECUTE recall_snapshot_" in reads[0], reads
    reworded, reads = statements("How can I install Acme, variant 0?")
    assert reworded.trail_id == asked.trail_id and len(reads) == 2, reads
    sections_upsert(caller=caller, sections=[{"id": "doc#0", "text": "Section 0 now says something else."}])
    changed, reads = statements("How do I install Acme, variant 0?")
    assert changed.outcome != "prefetch" or changed.trail_id != asked.trail_id
    assert len([r for r in reads if "EXECUTE recall_snapshot_" in r]) == 2, reads
    from cachecore.services import recall_log

    assert recall_log.flush()   # every log write done before the test's database goes


def test_a_recall_still_reads_when_the_session_lost_its_prepared_statement(transactional_db, make_tenant):
    """DEALLOCATE ALL (or DISCARD ALL, as a pooler may send) drops the session's prepared
    statements: the next recall answers as before (planning its read from then on)."""
    from django.db import connection

    tenant = make_tenant()
    _seed(tenant, trails=1, sections_per_trail=1)
    query = "How do I install Acme, variant 0?"
    first = recall(caller=tenant_caller(tenant), scope="default", query=query)
    with connection.cursor() as cur:
        cur.execute("DEALLOCATE ALL")
    for _ in range(2):
        again = recall(caller=tenant_caller(tenant), scope="default", query=query)
        assert again.answer.outcome == first.answer.outcome == "prefetch"
        assert again.answer.sections == first.answer.sections


def test_a_recall_still_reads_when_the_session_already_holds_its_statement(transactional_db, make_tenant):
    """A server connection shared by a pooler may hold the statement another client prepared:
    the recall does not fail on PREPARE, it answers as before."""
    from cachecore.selectors import recall_snapshot

    tenant = make_tenant()
    _seed(tenant, trails=1, sections_per_trail=1)
    query = "How do I install Acme, variant 0?"
    first = recall(caller=tenant_caller(tenant), scope="default", query=query)
    recall_snapshot._prepared.clear()  # this process forgets; the session still holds it
    for _ in range(2):
        again = recall(caller=tenant_caller(tenant), scope="default", query=query)
        assert again.answer.outcome == first.answer.outcome == "prefetch"
        assert again.answer.sections == first.answer.sections


def test_a_trails_positive_is_read_in_the_same_statements_and_shown_in_explain(make_tenant,
                                                                               django_assert_max_num_queries):
    tenant = make_tenant(prefetch_paused=True)
    _seed(tenant, trails=3, sections_per_trail=1)
    caller = tenant_caller(tenant)
    query = "What are the steps to set up Acme, variant 1?"
    first = recall(caller=caller, scope="default", query=query)
    assert first.answer.outcome == "hint"
    from cachecore.services import recall_log

    recall_log.flush()
    cited = [s["id"] for s in first.answer.sections][:1]
    trail_record(caller=caller, scope="default", query=query, steps=[], cited=cited, signal=None,
                 recall_id=first.recall_id)
    recall(caller=caller, scope="default", query="warm the scope-size cache")
    with django_assert_max_num_queries(8):
        again = recall(caller=caller, scope="default", query=query, explain=True)
    assert again.answer.outcome == "prefetch" and again.answer.trail_id == first.answer.trail_id
    best = next(c for c in again.diagnostics.explain if c["trail_id"] == first.answer.trail_id)
    assert best["cited_bar"] is not None and best["cited_bar"] < first.answer.confidence


def test_a_recorded_question_asked_again_in_other_function_words_is_served_its_trail(make_tenant):
    """At the shipped defaults and scorer: "how can I" for "how do I" is the question recorded
    (``evidence.restates``). The scorer alone gave such a repeat about 0.08 and served it
    another trail, if anything (research/near_repeats.py)."""
    tenant = make_tenant()
    caller = tenant_caller(tenant)
    sections_upsert(caller=caller, sections=[
        {"id": "tasks#names", "text": "Every task must have a unique name. You can give a task an explicit name "
                                      "with the name argument of the task decorator: @app.task(name='sum-of-two')."},
        {"id": "tasks#auto", "text": "Task names are generated from the module and the function name. Override "
                                     "gen_task_name on the app to change the automatic naming of every task."},
    ])
    recorded = {}
    for section, question in (("tasks#names", "How do I give a Celery task an explicit name?"),
                              ("tasks#auto", "How do I change how Celery names tasks automatically?")):
        recorded[section] = str(trail_record(caller=caller, scope="default", query=question, steps=[],
                                             cited=[section], signal={"source": "caller", "accepted": True}).pk)
    answer = recall(caller=caller, scope="default", query="How can I give the Celery task an explicit name?").answer
    assert (answer.outcome, answer.trail_id, answer.confidence) == ("prefetch", recorded["tasks#names"], 1.0)
    assert [s["id"] for s in answer.sections] == ["tasks#names"] and answer.sections[0]["text"].startswith("Every")
