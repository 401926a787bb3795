"""Trails and citations are hash-partitioned by tenant (migration 0011): the shape of the tables,
the keys, what the recall's statements read, deletes through the composite foreign keys, and
the migration both ways on a database with rows."""

from __future__ import annotations

import re

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from cachecore.models import Citation, RecallEvent, Trail
from cachecore.selectors import nearest
from cachecore.services import recall_log
from cachecore.services.recall import recall
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_delete, trail_record
from tenants.caller import tenant_caller

PARTITIONS = 16
MIGRATION = ("cachecore", "0011_partition_trails_by_tenant")
PARTITIONED = ("cachecore_trail", "cachecore_citation")
QUERY = "How do I install Acme on Debian?"


def _seed(tenant, *, trails: int = 1) -> list[Trail]:
    sections_upsert(caller=tenant_caller(tenant), sections=[
        {"id": "doc#install", "text": "To install Acme on Debian, run apt install acme."},
        {"id": "doc#config", "text": "Acme reads its configuration from /etc/acme/acme.toml."},
    ])
    return [trail_record(caller=tenant_caller(tenant),
                         scope="default", query=f"{QUERY} ({i})" if i else QUERY, steps=[],
                         cited=["doc#install", "doc#config"], signal={"source": "caller", "accepted": True})
            for i in range(trails)]


def _fetch(sql: str, params: list[object] | None = None) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(sql, params or [])
        return cur.fetchall()


def _partitions(table: str) -> int:
    return _fetch("SELECT count(*) FROM pg_inherits WHERE inhparent = %s::regclass", [table])[0][0]


@pytest.mark.django_db
def test_trails_and_citations_are_hash_partitioned_by_tenant_with_the_tenant_in_every_unique_key():
    for table in PARTITIONED:
        strategy, key = _fetch(
            "SELECT p.partstrat, a.attname FROM pg_partitioned_table p JOIN pg_attribute a "
            "ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0] WHERE p.partrelid = %s::regclass", [table],
        )[0]
        assert (strategy, key) == ("h", "tenant_id")
        assert _partitions(table) == PARTITIONS
        unique = _fetch(
            "SELECT c.relname, array_agg(a.attname ORDER BY a.attname) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = %s::regclass AND i.indisunique GROUP BY c.relname", [table],
        )
        assert unique and all("tenant_id" in columns for _, columns in unique), unique
    # One HNSW index per partition, built from the parent's.
    assert _partitions("trail_embedding_hnsw") == PARTITIONS
    # The foreign keys to a trail carry the tenant.
    keys = dict(_fetch("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                       "WHERE confrelid = 'cachecore_trail'::regclass AND contype = 'f' AND conparentid = 0"))
    assert keys == {
        "citation_trail_fk": "FOREIGN KEY (tenant_id, trail_id) REFERENCES cachecore_trail(tenant_id, id) "
                             "ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED",
        "recallevent_trail_fk": "FOREIGN KEY (tenant_id, trail_id) REFERENCES cachecore_trail(tenant_id, id) "
                                "ON DELETE SET NULL (trail_id) DEFERRABLE INITIALLY DEFERRED",
        "recallevent_recorded_trail_fk": "FOREIGN KEY (tenant_id, recorded_trail_id) REFERENCES "
                                         "cachecore_trail(tenant_id, id) ON DELETE SET NULL (recorded_trail_id) "
                                         "DEFERRABLE INITIALLY DEFERRED",
    }


@pytest.mark.django_db
def test_every_table_that_references_a_trail_holds_the_tenant_in_every_unique_key():
    """What a table distributed by tenant (Citus) can enforce: the recall log's key too (0013)."""
    referencing = {row[0] for row in _fetch(
        "SELECT conrelid::regclass::text FROM pg_constraint WHERE confrelid = 'cachecore_trail'::regclass "
        "AND contype = 'f' AND conparentid = 0")}
    assert referencing == {"cachecore_citation", "cachecore_recallevent"}
    for table in referencing | {"cachecore_trail"}:
        unique = _fetch(
            "SELECT c.relname, array_agg(a.attname::text ORDER BY a.attname) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = %s::regclass AND i.indisunique GROUP BY c.relname", [table])
        assert unique and all("tenant_id" in columns for _, columns in unique), (table, unique)
    assert _fetch("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'cachecore_recallevent_pkey'"
                  ) == [("PRIMARY KEY (id, tenant_id)",)]


def _touched(sql: str) -> dict[str, set[str]]:
    """The partitions of each partitioned table that the plan of ``sql`` reads or writes."""
    with transaction.atomic(), connection.cursor() as cur:
        # The HNSW path sends its settings with the query; EXPLAIN takes the query alone.
        *settings, query = [s for s in re.split(r";\s*(?=SET LOCAL|SELECT|WITH)", sql.strip()) if s.strip()]
        for statement in settings:
            cur.execute(statement)
        cur.execute(f"EXPLAIN (COSTS OFF) {query}")
        plan = "\n".join(r[0] for r in cur.fetchall())
    return {t: set(re.findall(rf"\b{t}_p\d\d\b", plan)) for t in PARTITIONED}


def _statements_reading(tables: tuple[str, ...], queries: list[dict]) -> list[str]:
    return [q["sql"] for q in queries if any(t in q["sql"] for t in tables)]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["exact", "hnsw"])
def test_every_statement_of_a_recall_reads_one_partition_of_trails_and_citations(make_tenant, settings, path):
    tenants = [make_tenant() for _ in range(6)]  # spread over several partitions
    for tenant in tenants:
        _seed(tenant, trails=3)
    if path == "hnsw":  # every scope over the exact-search limit: the HNSW statement
        settings.TRAILCACHE_EXACT_SEARCH_MAX_TRAILS = -1
    nearest._scope_sizes.clear()
    tenant = tenants[0]
    with CaptureQueriesContext(connection) as captured:
        result = recall(caller=tenant_caller(tenant), scope="default", query=QUERY)
    nearest._scope_sizes.clear()
    assert result.answer.outcome == "prefetch"
    statements = _statements_reading(PARTITIONED, captured.captured_queries)
    assert any("<=>" in s and ("SET LOCAL hnsw" in s) == (path == "hnsw") for s in statements)
    for sql in statements:
        touched = _touched(sql)
        assert all(len(parts) <= 1 for parts in touched.values()), (sql, touched)
        assert touched["cachecore_trail"], sql  # each of them reads trails, pruned to one


@pytest.mark.django_db
def test_deleting_a_trail_cascades_to_citations_and_nulls_the_recall_log(make_tenant):
    tenant = make_tenant()
    served, recorded = _seed(tenant, trails=2)
    event_id = recall(caller=tenant_caller(tenant), scope="default", query=QUERY).recall_id
    RecallEvent.objects.filter(pk=event_id).update(recorded_trail=recorded)
    assert RecallEvent.objects.get(pk=event_id).trail_id == served.pk

    trail_delete(caller=tenant_caller(tenant), trail_id=served.pk)  # through Django's on_delete
    assert not Citation.objects.filter(trail_id=served.pk).exists()
    assert RecallEvent.objects.get(pk=event_id).trail_id is None

    with connection.cursor() as cur:  # through the database's keys alone
        cur.execute("DELETE FROM cachecore_trail WHERE tenant_id = %s AND id = %s", [tenant.pk, recorded.pk])
    assert not Citation.objects.filter(trail_id=recorded.pk).exists()
    event = RecallEvent.objects.get(pk=event_id)
    assert event.recorded_trail_id is None and event.tenant_id == tenant.pk


@pytest.mark.django_db
def test_a_citation_or_recall_cannot_point_at_another_tenants_trail(make_tenant):
    tenant, other = make_tenant(), make_tenant()
    (trail,) = _seed(tenant)
    with pytest.raises(IntegrityError), transaction.atomic():
        Citation.objects.create(trail=trail, tenant=other, section_id="doc#x", position=9, recorded_hash="0" * 64)
        connection.check_constraints()
    with pytest.raises(IntegrityError), transaction.atomic():
        RecallEvent.objects.create(tenant=other, scope="default", outcome="miss", latency_ms=1.0, trail=trail)
        connection.check_constraints()


@pytest.mark.django_db
def test_tenants_in_the_same_and_in_other_partitions_never_see_each_others_trails(make_tenant):
    tenants = [make_tenant() for _ in range(20)]  # 20 tenants over 16 partitions: some share one
    owner = tenants[0]
    (trail,) = _seed(owner)
    assert recall(caller=tenant_caller(owner), scope="default", query=QUERY).answer.trail_id == str(trail.pk)
    for other in tenants[1:]:
        assert recall(caller=tenant_caller(other), scope="default", query=QUERY).answer.outcome == "miss"
        assert not Trail.objects.filter(tenant=other).exists()


def _counts() -> dict[str, int]:
    return {t: _fetch(f"SELECT count(*) FROM {t}")[0][0] for t in (*PARTITIONED, "cachecore_recallevent")}


def _migrate(target: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(target)


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_a_database_with_rows_back_and_forth(make_tenant):
    tenants = [make_tenant() for _ in range(3)]
    for tenant in tenants:
        _seed(tenant, trails=4)
        recall(caller=tenant_caller(tenant), scope="default", query=QUERY)
    assert recall_log.flush()   # the recalls' log entries are written after their answers
    before = _counts()
    ids = set(Trail.objects.values_list("pk", flat=True))
    graph = MigrationExecutor(connection).loader.graph
    previous = sorted(p for p in graph.node_map[MIGRATION].parents if p[0] == "cachecore")
    latest = graph.leaf_nodes("cachecore")
    try:
        _migrate(previous)
        assert _partitions("cachecore_trail") == 0 and _partitions("cachecore_citation") == 0
        assert _counts() == before and set(Trail.objects.values_list("pk", flat=True)) == ids
        assert _fetch("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                      "WHERE conname = 'cachecore_trail_pkey'") == [("PRIMARY KEY (id)",)]
    finally:
        _migrate(latest)
    assert _partitions("cachecore_trail") == PARTITIONS and _partitions("cachecore_citation") == PARTITIONS
    assert _counts() == before and set(Trail.objects.values_list("pk", flat=True)) == ids
    # Everything still works on the moved tables, new citations take fresh ids.
    tenant = tenants[0]
    assert recall(caller=tenant_caller(tenant), scope="default", query=QUERY).answer.outcome == "prefetch"
    _seed(tenant, trails=1)
    assert _counts()["cachecore_citation"] == before["cachecore_citation"] + 2
