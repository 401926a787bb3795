"""A trail's embedding stays in its row (STORAGE MAIN, migration 0012): exact scans and HNSW
re-ranks read it without a trip through the TOAST table."""

from __future__ import annotations

import secrets

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from cachecore.models import Trail
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller

MIGRATION = ("cachecore", "0012_trail_embedding_storage_main")


def _fetch(sql: str, params: list[object] | None = None) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(sql, params or [])
        return cur.fetchall()


def _storage() -> set[str]:
    """The embedding column's strategy on the partitioned table and on every partition."""
    return {row[0] for row in _fetch(
        "SELECT a.attstorage FROM pg_attribute a WHERE a.attname = 'embedding' AND a.attrelid IN "
        "(SELECT relid FROM pg_partition_tree('cachecore_trail'))")}


def _record(tenant, query: str) -> Trail:
    # ~700 bytes of incompressible step arguments: with the 1.5 kB vector the row is over the
    # 2 kB at which PostgreSQL starts moving values out of it.
    steps = [{"tool": "search", "args": {"q": secrets.token_hex(350)}, "returned": ["doc#a"]}]
    return trail_record(caller=tenant_caller(tenant), scope="default", query=query, steps=steps, cited=["doc#a"],
                        signal={"source": "caller", "accepted": True})


def _embedding_out_of_line(trail: Trail) -> bool:
    return _fetch("SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL FROM cachecore_trail "
                  "WHERE tenant_id = %s AND id = %s", [trail.tenant_id, trail.pk])[0][0]


@pytest.mark.django_db
def test_a_large_trail_keeps_its_embedding_in_the_row_where_pgvectors_default_moved_it_out(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant),
                    sections=[{"id": "doc#a", "text": "Acme listens on port 8080 by default."}])
    assert _storage() == {"m"}
    kept = _record(tenant, "Which port does Acme listen on?")
    assert not _embedding_out_of_line(kept)
    # The same row under pgvector's own strategy (EXTERNAL) loses its vector to the TOAST table.
    with connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")  # Django's deferred keys would block the ALTER
        cur.execute("ALTER TABLE cachecore_trail ALTER COLUMN embedding SET STORAGE EXTERNAL")
    moved = _record(tenant, "What port does Acme use?")
    assert _embedding_out_of_line(moved)


@pytest.mark.django_db(transaction=True)
def test_the_storage_migration_goes_back_and_forth():
    executor = MigrationExecutor(connection)
    previous = [p for p in executor.loader.graph.node_map[MIGRATION].parents if p[0] == "cachecore"]
    latest = executor.loader.graph.leaf_nodes("cachecore")
    try:
        executor.migrate(previous)
        assert _storage() == {"e"}
    finally:
        MigrationExecutor(connection).migrate(latest)
    assert _storage() == {"m"}
