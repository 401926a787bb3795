"""selectors.rivals.chunk_route: the covering read scans a tenant's chunks exactly while they
are few, or a large share of a small chunk index, and reads the chunks' HNSW index beyond,
against a real PostgreSQL with pgvector."""

from __future__ import annotations

import pytest
from django.db import connection

from cachecore.embedding import get_embedder
from cachecore.selectors import rivals
from cachecore.selectors.nearest import vector_literal
from cachecore.selectors.recall_snapshot import recall_covering
from tenants.caller import tenant_caller


def test_the_exact_limit_grows_with_the_index_between_its_floor_and_its_cap():
    assert rivals.exact_chunks_limit(-1.0) == rivals.EXACT_MAX_CHUNKS  # never analysed: a large index
    assert rivals.exact_chunks_limit(0.0) == rivals.EXACT_MIN_CHUNKS
    assert rivals.exact_chunks_limit(1_712.0) == rivals.EXACT_MIN_CHUNKS  # a documentation tenant alone
    assert rivals.exact_chunks_limit(29_496.0) == 1_717  # the same beside the Python docs tenant
    assert rivals.exact_chunks_limit(1_000_000.0) == rivals.EXACT_MAX_CHUNKS
    limits = [rivals.exact_chunks_limit(float(rows)) for rows in range(0, 100_000, 997)]
    assert limits == sorted(limits)


@pytest.mark.django_db
def test_a_tenant_past_the_floor_alone_in_the_index_reads_it_through_hnsw(caller):
    caller.upsert({
        "broker#visibility": "The visibility timeout is the number of seconds the broker waits for a worker to "
                             "acknowledge a task before redelivering it.",
        "tasks#retry": "A task can retry itself with self.retry, after a countdown, up to max_retries times.",
    })
    tenant = caller.tenant
    rivals._sizes.clear()
    with connection.cursor() as cur:
        cur.execute("ANALYZE cachecore_sectionchunk")
    assert rivals.chunk_route(tenant.pk) == "exact"
    with connection.cursor() as cur:  # the retry section's first chunk, copied past the floor
        cur.execute(
            "INSERT INTO cachecore_sectionchunk (section_id, tenant_id, ordinal, sha256, text, embedding, "
            "embedding_model) SELECT ch.section_id, ch.tenant_id, ch.ordinal + g, ch.sha256, ch.text, ch.embedding, "
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
    assert rivals.chunk_route(tenant.pk) == "exact"  # the route is cached for a minute
    rivals._sizes.clear()
    assert rivals.chunk_route(tenant.pk) == "hnsw"
    vector = vector_literal(get_embedder().embed_one("how long does the broker wait for an ack?"))
    found = recall_covering(caller=tenant_caller(tenant), scope="default", vector=vector, terms=[],
                            threshold=0.3, exclude=[])
    assert [s for s, _ in found.sections] == ["broker#visibility", "tasks#retry"]
