"""The dynamic-int8 model version: built from the package's file, deterministically (the pinned
sha256), kept under its own version name, close to but not the same as the package file's
vectors (so stored vectors are re-embedded, never compared across the two); an erasure drops the
subject's cached query vectors."""

from __future__ import annotations

import numpy as np
import pytest

from cachecore import embedding
from cachecore.embedding import (
    QUANTISED_MODEL_SHA256,
    QUANTISED_MODEL_VERSION,
    SHIPPED_MODEL_VERSION,
    Embedder,
    EmbeddingModelError,
    build_quantised_model,
    shipped_model,
)

QUESTIONS = ["how do i reset my password", "configure the proxy on linux", "why does the sync fail with a timeout",
             "rotate an api key without downtime"]


def test_the_build_is_deterministic_and_pinned(tmp_path):
    built = build_quantised_model(tmp_path)
    assert built.name == embedding.QUANTISED_MODEL_FILE
    assert embedding._sha256_file(built) == QUANTISED_MODEL_SHA256
    mtime = built.stat().st_mtime_ns
    assert build_quantised_model(tmp_path) == built and built.stat().st_mtime_ns == mtime  # kept, not rebuilt
    built.write_bytes(b"not a model")
    assert embedding._sha256_file(build_quantised_model(tmp_path)) == QUANTISED_MODEL_SHA256  # rebuilt whole
    assert not [p for p in tmp_path.iterdir() if p.name not in (built.name, ".build.lock")]


def test_the_two_versions_give_close_but_different_vectors():
    path, sha = shipped_model("dynamic-int8")
    quantised = Embedder(path, expected_sha256=sha, cache_size=0)
    package = Embedder(*shipped_model("int8-weights")[:1], cache_size=0)
    assert (quantised.version, package.version) == (QUANTISED_MODEL_VERSION, SHIPPED_MODEL_VERSION)
    a, b = quantised.embed(QUESTIONS), package.embed(QUESTIONS)
    cosine = (a * b).sum(axis=1)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert cosine.min() > 0.93 and not np.allclose(a, b, atol=1e-3)
    # The same text still embeds the same way within a version.
    assert np.array_equal(quantised.embed_one(QUESTIONS[0]), quantised.embed([QUESTIONS[0]])[0])


@pytest.mark.parametrize("variant", ["dynamic-int8", "int8-weights"])
def test_a_texts_vector_does_not_depend_on_the_texts_embedded_beside_it(variant):
    """A section's chunks are embedded with the other sections of their upsert, a trail's question
    with other trails' by the re-embed job; a query alone. The same words must be the same vector
    whichever way they came (the dynamic-int8 model quantises a run's activations with one scale
    for the whole input, so a batched run gave another vector: cosine 0.97-0.99)."""
    path, sha = shipped_model(variant)
    model = Embedder(path, expected_sha256=sha, cache_size=0)
    alone = np.stack([model.embed_one(q) for q in QUESTIONS])
    long = "the worker acknowledges the message only after the task returns, " * 12
    for beside in ([], [long], [long, "hi"], QUESTIONS[::-1]):
        texts = [*beside, *QUESTIONS]
        together = model.embed(texts)[len(beside):]
        assert np.array_equal(together, alone), (variant, len(beside))


def test_an_unknown_variant_is_refused():
    with pytest.raises(EmbeddingModelError, match="unknown embedding model variant"):
        shipped_model("fp16")


@pytest.mark.django_db
def test_erasure_drops_the_subjects_cached_query_vectors(make_tenant):
    from cachecore.services.erasure import subject_erase
    from tenants.caller import tenant_caller

    tenant, other = make_tenant(), make_tenant()
    embedder = embedding.get_embedder()
    embedder.embed_query("alice asks about invoices", tenant=tenant.pk, subject="alice")
    embedder.embed_query("bob asks about invoices", tenant=tenant.pk, subject="bob")
    embedder.embed_query("alice asks about invoices", tenant=other.pk, subject="alice")
    subject_erase(caller=tenant_caller(tenant), subject="alice")
    mine = [text for _, text in embedder.queries._by_tenant[str(tenant.pk)]]
    assert mine == ["bob asks about invoices"]
    assert [text for _, text in embedder.queries._by_tenant[str(other.pk)]] == ["alice asks about invoices"]
