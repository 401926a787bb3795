"""The per-process cache of query embeddings: a hit is the very vector the model gave, the
cache is bounded, a model change never serves another model's vector, and the thread settings
come from the environment with documented defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cachecore import embedding
from cachecore.embedding import DEFAULT_CACHE_SIZE, Embedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(cache_size=3)


def test_a_hit_returns_the_identical_vector_and_skips_the_model(embedder):
    embedder.cache_clear()
    first = embedder.embed_one("how do i install acme sync on ubuntu")
    misses, hits = embedder.cache_misses, embedder.cache_hits
    again = embedder.embed_one("how do i install acme sync on ubuntu")
    assert embedder.cache_hits == hits + 1 and embedder.cache_misses == misses
    assert np.array_equal(first, again)
    uncached = embedder.embed_one("how do i install acme sync on ubuntu", cache=False)
    assert np.array_equal(first, uncached)
    assert first.dtype == np.float32 and first.shape == (384,)


def test_a_cached_vector_cannot_be_changed_by_a_caller(embedder):
    vector = embedder.embed_one("rotate the api key")
    with pytest.raises(ValueError):
        vector[0] = 1.0


def test_the_cache_is_bounded_and_evicts_the_least_recently_used(embedder):
    embedder.cache_clear()
    for text in ("one", "two", "three"):
        embedder.embed_one(text)
    embedder.embed_one("one")  # now the most recent
    embedder.embed_one("four")  # evicts "two"
    keys = [text for _, text in embedder._cache]
    assert len(keys) == 3 and keys == ["three", "one", "four"]
    for i in range(20):
        embedder.embed_one(f"query {i}")
    assert len(embedder._cache) == 3


def test_the_model_version_is_in_the_key(embedder):
    embedder.cache_clear()
    shipped = embedder.version
    embedder.embed_one("reset my password")
    assert (shipped, "reset my password") in embedder._cache
    misses = embedder.cache_misses
    try:
        embedder.version = "another-model@0123456789ab"
        embedder.embed_one("reset my password")
        assert embedder.cache_misses == misses + 1
        assert ("another-model@0123456789ab", "reset my password") in embedder._cache
    finally:
        embedder.version = shipped
        embedder.cache_clear()


def test_size_zero_turns_the_cache_off():
    off = Embedder(cache_size=0)
    off.embed_one("no cache here")
    off.embed_one("no cache here")
    assert off.cache_hits == 0 and not off._cache


def test_the_process_embedder_takes_threads_spinning_and_cache_size_from_settings(settings, monkeypatch):
    settings.TRAILCACHE_EMBEDDING_THREADS = 2
    settings.TRAILCACHE_EMBEDDING_SPINNING = True
    settings.TRAILCACHE_EMBEDDING_CACHE_SIZE = 7
    monkeypatch.setattr(embedding, "_embedder", None)
    built = embedding.get_embedder()
    assert (built.threads, built.spinning, built.cache_size) == (2, True, 7)


def test_documented_defaults_and_environment_values():
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.TRAILCACHE_EMBEDDING_THREADS, s.TRAILCACHE_EMBEDDING_SPINNING, s.TRAILCACHE_EMBEDDING_CACHE_SIZE)")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TRAILCACHE_", "DATABASE_"))}
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "TRAILCACHE_DEV": "true",
                  "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/unused"})
    default = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                             timeout=120)
    assert default.stdout.split() == ["1", "False", str(DEFAULT_CACHE_SIZE)], default.stderr
    documented = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name in ("TRAILCACHE_EMBEDDING_THREADS", "TRAILCACHE_EMBEDDING_SPINNING", "TRAILCACHE_EMBEDDING_CACHE_SIZE"):
        assert f"`{name}`" in documented
    clean.update({"TRAILCACHE_EMBEDDING_THREADS": "2", "TRAILCACHE_EMBEDDING_SPINNING": "true",
                  "TRAILCACHE_EMBEDDING_CACHE_SIZE": "0"})
    chosen = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                            timeout=120)
    assert chosen.stdout.split() == ["2", "True", "0"], chosen.stderr
