"""selectors.rivals.chunk_route: the covering read scans a tenant's chunks exactly while they
are few, or a small share of a large chunk index, and reads the chunks' HNSW index beyond; a
recall that may not see every section keeps the exact scan up to the old cap. Against a real
PostgreSQL with pgvector."""

from __future__ import annotations

import pytest
from django.db import connection

from cachecore.embedding import get_embedder
from cachecore.selectors import rivals
from cachecore.selectors.nearest import vector_literal
from cachecore.selectors.recall_snapshot import recall_covering
from tenants.caller import Caller, tenant_caller


def test_the_exact_limit_grows_with_the_index_between_its_floor_and_its_cap():
    assert rivals.exact_chunks_limit(-1.0) == rivals.EXACT_MAX_CHUNKS  # never analysed: a large index
    assert rivals.exact_chunks_limit(0.0) == rivals.EXACT_MIN_CHUNKS
    assert rivals.exact_chunks_limit(1_712.0) == rivals.EXACT_MIN_CHUNKS  # a documentation tenant alone
    assert rivals.exact_chunks_limit(29_496.0) == 1_717  # the same beside the Python docs tenant
    assert rivals.exact_chunks_limit(1_000_000.0) == rivals.EXACT_MAX_CHUNKS
    limits = [rivals.exact_chunks_limit(float(rows)) for rows in range(0, 100_000, 997)]
    assert limits == sorted(limits)


SECTIONS = {
    "broker#visibility": "The visibility timeout is the number of seconds the broker waits for a worker to "
                         "acknowledge a task before redelivering it.",
    "tasks#retry": "A task can retry itself with self.retry, after a countdown, up to max_retries times.",
}


def _past_the_floor(tenant) -> None:
    """Chunks of the retry section past the floor, each with a random vector (as far from any
    question as unrelated text; identical copies would leave the HNSW graph no way through
    them); the chunk table analysed."""
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO cachecore_sectionchunk (section_id, tenant_id, ordinal, sha256, text, embedding, "
            "embedding_model) SELECT ch.section_id, ch.tenant_id, ch.ordinal + g, ch.sha256, ch.text, "
            "(SELECT array_agg(random() - 0.5) FROM generate_series(1, 384) d WHERE g > 0)::vector, "
            "ch.embedding_model FROM cachecore_sectionchunk ch JOIN cachecore_section s ON s.id = ch.section_id "
            "CROSS JOIN generate_series(1000, 1000 + %s) g "
            "WHERE ch.tenant_id = %s AND s.external_id = 'tasks#retry' AND ch.ordinal = 0",
            [rivals.EXACT_MIN_CHUNKS, tenant.pk],
        )
        cur.execute("ANALYZE cachecore_sectionchunk")
        cur.execute("SELECT count(*), (SELECT reltuples FROM pg_class WHERE relname = 'cachecore_sectionchunk') "
                    "FROM cachecore_sectionchunk")
        chunks, rows = cur.fetchone()
    assert chunks > rivals.EXACT_MIN_CHUNKS and rows < rivals.EXACT_MIN_CHUNKS ** 2 / 100  # alone, past the floor


@pytest.mark.django_db
def test_a_tenant_past_the_floor_alone_in_the_index_reads_it_through_hnsw(caller):
    caller.upsert(SECTIONS)
    tenant = caller.tenant
    rivals._sizes.clear()
    with connection.cursor() as cur:
        cur.execute("ANALYZE cachecore_sectionchunk")
    assert rivals.chunk_route(tenant_caller(tenant)) == "exact"
    _past_the_floor(tenant)
    assert rivals.chunk_route(tenant_caller(tenant)) == "exact"  # the route is cached for a minute
    rivals._sizes.clear()
    assert rivals.chunk_route(tenant_caller(tenant)) == "hnsw"
    vector = vector_literal(get_embedder().embed_one("how long does the broker wait for an ack?"))
    found = recall_covering(caller=tenant_caller(tenant), scope="default", vector=vector, terms=[],
                            threshold=0.3, exclude=[])
    assert [s for s, _ in found.sections] == ["broker#visibility", "tasks#retry"]


@pytest.mark.django_db
def test_a_recall_that_may_not_see_every_section_keeps_the_exact_scan(caller, outsider):
    """HNSW reads the nearest chunks before their sections' visibility: a scope-limited key, or
    any recall of a tenant with sections held to scopes, scans exactly up to the old cap."""
    caller.upsert(SECTIONS)
    outsider.upsert(SECTIONS)
    outsider.upsert({"internal#notes": "Notes for the team only."}, scopes=["internal:"])
    _past_the_floor(caller.tenant)
    _past_the_floor(outsider.tenant)
    rivals._sizes.clear()
    assert rivals.chunk_route(tenant_caller(caller.tenant)) == "hnsw"
    assert rivals.chunk_route(Caller(tenant=caller.tenant, scope_prefixes=("public:",))) == "exact"
    assert rivals.chunk_route(tenant_caller(outsider.tenant)) == "exact"
