"""The query-vector cache, one per tenant: a hit is the very vector the model gave, a tenant
never gets a vector another tenant's question put there, each tenant's cache is bounded and LRU,
erasing a subject drops what it asked, a model change never serves another model's vector, and
the thread and cache settings come from the environment with documented defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cachecore import embedding
from cachecore.embedding import DEFAULT_CACHE_SIZE, Embedder, QueryVectorCache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(cache_size=3)


def _keys(cache: QueryVectorCache, tenant: str) -> list[str]:
    return [text for _, text in cache._by_tenant.get(tenant, {})]


def test_a_hit_returns_the_identical_vector_and_skips_the_model(embedder):
    embedder.cache_clear()
    first = embedder.embed_query("how do i install acme sync on ubuntu", tenant="t1")
    misses, hits = embedder.queries.misses, embedder.queries.hits
    again = embedder.embed_query("how do i install acme sync on ubuntu", tenant="t1")
    assert embedder.queries.hits == hits + 1 and embedder.queries.misses == misses
    assert again is first
    assert np.array_equal(first, embedder.embed_one("how do i install acme sync on ubuntu"))
    assert first.dtype == np.float32 and first.shape == (384,)


def test_another_tenant_never_gets_a_vector_this_tenant_cached(embedder):
    embedder.cache_clear()
    mine = embedder.embed_query("reset the router", tenant="t1")
    hits = embedder.queries.hits
    theirs = embedder.embed_query("reset the router", tenant="t2")
    assert embedder.queries.hits == hits  # a miss: the model ran again for t2
    assert theirs is not mine and np.array_equal(theirs, mine)
    assert _keys(embedder.queries, "t1") == _keys(embedder.queries, "t2") == ["reset the router"]


def test_a_cached_vector_cannot_be_changed_by_a_caller(embedder):
    vector = embedder.embed_query("rotate the api key", tenant="t1")
    with pytest.raises(ValueError):
        vector[0] = 1.0


def test_each_tenant_is_bounded_and_evicts_its_own_least_recently_used(embedder):
    embedder.cache_clear()
    for text in ("one", "two", "three"):
        embedder.embed_query(text, tenant="t1")
    embedder.embed_query("one", tenant="t1")  # now the most recent
    embedder.embed_query("four", tenant="t1")  # evicts "two"
    assert _keys(embedder.queries, "t1") == ["three", "one", "four"]
    embedder.embed_query("other", tenant="t2")
    for i in range(20):
        embedder.embed_query(f"query {i}", tenant="t1")
    assert len(_keys(embedder.queries, "t1")) == 3
    assert _keys(embedder.queries, "t2") == ["other"]  # t1's traffic never evicts t2's entries


def test_tenants_kept_are_bounded_least_recently_used_first():
    cache = QueryVectorCache(per_tenant=2, tenants=2)
    vector = np.zeros(384, dtype=np.float32)
    for tenant in ("a", "b", "c"):
        cache.put(tenant, "m", "q", vector.copy())
    assert list(cache._by_tenant) == ["b", "c"] and len(cache) == 2


def test_erasing_a_subject_drops_what_it_asked_and_nothing_else():
    cache = QueryVectorCache(per_tenant=10, tenants=10)
    vector = np.zeros(384, dtype=np.float32)
    cache.put("t1", "m", "asked by alice", vector.copy(), subject="alice")
    cache.put("t1", "m", "asked by bob", vector.copy(), subject="bob")
    cache.put("t1", "m", "anonymous", vector.copy())
    assert cache.get("t1", "m", "asked by bob", subject="alice") is not None  # alice asked it too
    cache.put("t2", "m", "asked by alice", vector.copy(), subject="alice")
    assert cache.forget_subject("t1", "alice") == 2
    assert _keys(cache, "t1") == ["anonymous"]
    assert _keys(cache, "t2") == ["asked by alice"]  # another tenant's alice is another subject


def test_an_entry_asked_by_too_many_subjects_goes_on_any_erasure():
    cache = QueryVectorCache(per_tenant=10, tenants=10)
    vector = np.zeros(384, dtype=np.float32)
    for i in range(QueryVectorCache.MAX_SUBJECTS + 1):
        cache.put("t1", "m", "popular", vector.copy(), subject=f"s{i}")
    assert cache.forget_subject("t1", "someone-else") == 1 and len(cache) == 0


def test_entries_expire_after_their_ttl():
    cache = QueryVectorCache(per_tenant=10, tenants=10, ttl_s=-1.0)  # already expired when stored
    cache.put("t1", "m", "q", np.zeros(384, dtype=np.float32))
    assert cache.get("t1", "m", "q") is None and len(cache) == 0


def test_the_model_version_is_in_the_key(embedder):
    embedder.cache_clear()
    shipped = embedder.version
    embedder.embed_query("reset my password", tenant="t1")
    misses = embedder.queries.misses
    try:
        embedder.version = "another-model@0123456789ab"
        embedder.embed_query("reset my password", tenant="t1")
        assert embedder.queries.misses == misses + 1
        assert list(embedder.queries._by_tenant["t1"]) == [(shipped, "reset my password"),
                                                           ("another-model@0123456789ab", "reset my password")]
    finally:
        embedder.version = shipped
        embedder.cache_clear()


def test_size_zero_turns_the_cache_off():
    off = Embedder(cache_size=0)
    off.embed_query("no cache here", tenant="t1")
    off.embed_query("no cache here", tenant="t1")
    assert off.queries.hits == 0 and len(off.queries) == 0


def test_the_process_embedder_takes_threads_spinning_and_cache_size_from_settings(settings, monkeypatch):
    settings.TRAILCACHE_EMBEDDING_THREADS = 2
    settings.TRAILCACHE_EMBEDDING_SPINNING = True
    settings.TRAILCACHE_EMBEDDING_CACHE_SIZE = 7
    settings.TRAILCACHE_EMBEDDING_CACHE_TENANTS = 3
    monkeypatch.setattr(embedding, "_embedder", None)
    built = embedding.get_embedder()
    assert (built.threads, built.spinning, built.cache_size, built.queries.tenants) == (2, True, 7, 3)
    assert built.version == embedding.model_version(built.model_path, embedding.QUANTISED_MODEL_SHA256)


def test_documented_defaults_and_environment_values():
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.TRAILCACHE_EMBEDDING_THREADS, s.TRAILCACHE_EMBEDDING_SPINNING, s.TRAILCACHE_EMBEDDING_CACHE_SIZE, "
            "s.TRAILCACHE_EMBEDDING_VARIANT)")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "DATABASE_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "TRAILCACHE_DEV": "true",
                  "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/unused"})
    default = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                             timeout=120)
    assert default.stdout.split() == ["1", "False", str(DEFAULT_CACHE_SIZE), "dynamic-int8"], default.stderr
    doc = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    for name in ("TRAILCACHE_EMBEDDING_THREADS", "TRAILCACHE_EMBEDDING_SPINNING", "TRAILCACHE_EMBEDDING_CACHE_SIZE",
                 "TRAILCACHE_EMBEDDING_CACHE_TENANTS", "TRAILCACHE_EMBEDDING_CACHE_TTL_S",
                 "TRAILCACHE_EMBEDDING_VARIANT", "TRAILCACHE_MODEL_DIR"):
        assert f"`{name}`" in doc
    clean.update({"TRAILCACHE_EMBEDDING_THREADS": "2", "TRAILCACHE_EMBEDDING_SPINNING": "true",
                  "TRAILCACHE_EMBEDDING_CACHE_SIZE": "0", "TRAILCACHE_EMBEDDING_VARIANT": "int8-weights"})
    chosen = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                            timeout=120)
    assert chosen.stdout.split() == ["2", "True", "0", "int8-weights"], chosen.stderr
    clean["TRAILCACHE_EMBEDDING_VARIANT"] = "fp16"
    bad = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "TRAILCACHE_EMBEDDING_VARIANT" in bad.stderr
