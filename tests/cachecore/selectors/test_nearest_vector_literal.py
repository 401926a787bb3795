"""The query vector's pgvector literal: each component as ``%.7g``, whatever the vector."""

from __future__ import annotations

import numpy as np

from cachecore.selectors.nearest import vector_literal


def test_each_component_is_formatted_as_before() -> None:
    rng = np.random.default_rng(3)
    for size in (0, 1, 3, 384, 768):
        for _ in range(20):
            vector = (rng.standard_normal(size) * 10.0 ** rng.integers(-12, 4)).astype(np.float32)
            assert vector_literal(vector) == "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"
    assert vector_literal(np.array([0.0, -0.0, 1e-30, 123456789.0], dtype=np.float32)) == "[0,-0,1e-30,1.234568e+08]"


def test_a_literal_is_returned_as_it_is() -> None:
    assert vector_literal("[1,2]") == "[1,2]"


def test_the_database_reads_it_back(db) -> None:
    from django.db import connection

    vector = np.random.default_rng(5).standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    with connection.cursor() as cur:
        cur.execute("SELECT (%s::vector <#> %s::vector)", [vector_literal(vector), vector_literal(vector)])
        (negative_inner,) = cur.fetchone()
    assert abs(-negative_inner - 1.0) < 1e-5
