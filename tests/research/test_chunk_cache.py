"""research.corpora.chunks_ensure_cached gives a tenant the very chunk and sentence rows the
product's own path computes, from the cache when the (hash, model) was seen before."""

from __future__ import annotations

import numpy as np
import pytest

from cachecore.models import Section, SectionChunk, SectionSentence
from cachecore.services.sections import sections_upsert
from research.corpora import chunks_ensure_cached
from tenants.caller import tenant_caller

pytestmark = pytest.mark.django_db

TEXTS = {"a": "The worker acknowledges a task after it ran. " * 20, "b": "Beat sends periodic tasks on time."}


def _rows(tenant):
    return [(c.section.external_id, c.ordinal, c.text, np.round(np.asarray(c.embedding), 5).tolist())
            for c in SectionChunk.objects.filter(section__tenant=tenant).select_related("section")
            .order_by("section__external_id", "ordinal")]


def _sentence_rows(tenant):
    return [(s.section.external_id, s.ordinal, s.sha256, np.round(np.asarray(s.embedding), 5).tolist())
            for s in SectionSentence.objects.filter(section__tenant=tenant).select_related("section")
            .order_by("section__external_id", "ordinal")]


def test_the_second_tenant_gets_the_same_chunks_from_the_cache(make_tenant, tmp_path):
    first, second = make_tenant(), make_tenant()
    for tenant in (first, second):
        # Deferred chunks: the sections wait for the chunk job, as a large upsert's do.
        sections_upsert(caller=tenant_caller(tenant), sections=[{"id": k, "text": v} for k, v in TEXTS.items()],
                        chunks="later")
    assert chunks_ensure_cached(tenant=first, section_ids=list(TEXTS), cache_dir=tmp_path) == 2
    assert chunks_ensure_cached(tenant=second, section_ids=list(TEXTS), cache_dir=tmp_path) == 0
    assert _rows(first) == _rows(second) and len(_rows(first)) >= 3
    assert set(Section.objects.filter(tenant=second).values_list("chunks_ready", flat=True)) == {True}
    assert _sentence_rows(first) == _sentence_rows(second) and len(_sentence_rows(first)) == 21
    assert list(tmp_path.glob("sentences-*.pkl"))
