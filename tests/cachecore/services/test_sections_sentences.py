"""Sentence embeddings of a section: computed with its chunks, of its current text only, read by
recall as the sentence-level evidence, and filled in by the background refresh for sections
chunked before sentences were (migration 0025)."""

from __future__ import annotations

import numpy as np
import pytest

from cachecore.embedding import get_embedder
from cachecore.engine.evidence import FEATURES
from cachecore.engine.text import split_sentences
from cachecore.models import Section, SectionSentence
from cachecore.services.recall import recall
from cachecore.services.reembed import embeddings_refresh
from cachecore.services.sections import section_chunks_compute, section_sentences_compute, sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller

pytestmark = pytest.mark.django_db

VISIBILITY = ("The visibility timeout is the number of seconds the broker waits for a worker to acknowledge a "
              "task. After it, the message is delivered to another worker. Set it in broker_transport_options.")
PREFETCH = "The prefetch multiplier sets how many messages each worker process reserves ahead of time."
QUERY = "how long does the broker wait for an ack before redelivery?"


def _sentences(section: Section) -> list[tuple[int, str, list[float]]]:
    return [(s.ordinal, s.sha256, np.round(np.asarray(s.embedding), 5).tolist())
            for s in SectionSentence.objects.filter(section=section).order_by("ordinal")]


def test_an_upsert_embeds_each_sentence_with_the_chunks(make_tenant):
    tenant = make_tenant()
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "v", "text": VISIBILITY}], chunks="now")
    section = Section.objects.get(tenant=tenant)
    rows = _sentences(section)
    assert section.chunks_ready and len(rows) == len(split_sentences(VISIBILITY)) == 3
    assert {sha for _, sha, _ in rows} == {section.sha256}
    assert set(SectionSentence.objects.values_list("embedding_model", flat=True)) == {get_embedder().version}
    # Each is the model's vector of that sentence.
    expected = get_embedder().embed(split_sentences(VISIBILITY))
    assert np.allclose([v for _, _, v in rows], expected, atol=1e-4)


def test_a_changed_text_replaces_them_and_a_stale_computation_writes_nothing(make_tenant):
    tenant = make_tenant()
    caller = tenant_caller(tenant)
    sections_upsert(caller=caller, sections=[{"id": "v", "text": VISIBILITY}], chunks="now")
    sections_upsert(caller=caller, sections=[{"id": "v", "text": PREFETCH}], chunks="later")
    section = Section.objects.get(tenant=tenant)
    # Until computed again, the old sentences stay under the old hash (never read: recall
    # joins on the section's current hash).
    assert {sha for _, sha, _ in _sentences(section)} != {section.sha256}
    section_chunks_compute(section_pks=[section.pk])
    assert [(o, sha) for o, sha, _ in _sentences(section)] == [(0, section.sha256)]


def test_recall_reads_the_sentence_evidence_of_its_candidates(make_tenant):
    tenant = make_tenant()
    # Every candidate qualifies (the prefetch trail's question is far from the query).
    tenant.similarity_threshold = 0.0
    tenant.save()
    caller = tenant_caller(tenant)
    sections_upsert(caller=caller, sections=[{"id": "v", "text": VISIBILITY}, {"id": "p", "text": PREFETCH}],
                    chunks="now")
    trail_record(caller=caller, scope="default", query="what is the visibility timeout?", steps=[], cited=["v"],
                 signal={"source": "caller", "accepted": True})
    trail_record(caller=caller, scope="default", query="what does the prefetch multiplier do?", steps=[],
                 cited=["p"], signal={"source": "caller", "accepted": True})
    explain = recall(caller=caller, scope="default", query=QUERY, explain=True).diagnostics.explain
    by_question = {c["query_normalised"]: c["features"] for c in explain}
    right = by_question["what is the visibility timeout"]
    assert right["sentence_known"] == 1.0 and right["sentence_margin"] > 0
    # The other trail's cited section is the right one's rival, and the other way round.
    wrong = by_question["what does the prefetch multiplier do"]
    assert wrong["sentence_known"] == 1.0 and wrong["sentence_margin"] == pytest.approx(-right["sentence_margin"])
    assert set(FEATURES) <= set(right)


def test_the_refresh_embeds_the_sentences_of_sections_chunked_before_them(make_tenant):
    tenant = make_tenant()
    caller = tenant_caller(tenant)
    sections_upsert(caller=caller, sections=[{"id": "v", "text": VISIBILITY}, {"id": "p", "text": PREFETCH}],
                    chunks="now")
    trail_record(caller=caller, scope="default", query="what is the visibility timeout?", steps=[], cited=["v"],
                 signal={"source": "caller", "accepted": True})
    before = {s.external_id: _sentences(s) for s in Section.objects.filter(tenant=tenant)}
    SectionSentence.objects.filter(section__tenant=tenant).delete()
    features = recall(caller=caller, scope="default", query=QUERY, explain=True).diagnostics.explain[0]["features"]
    assert features["sentence_known"] == 0.0 and features["sentence_margin"] == 0.0

    result = embeddings_refresh()
    assert result.sections >= 2
    assert {s.external_id: _sentences(s) for s in Section.objects.filter(tenant=tenant)} == before
    features = recall(caller=caller, scope="default", query=QUERY, explain=True).diagnostics.explain[0]["features"]
    assert features["sentence_known"] == 1.0
    # Nothing left: a second run embeds no sentence again.
    assert section_sentences_compute(section_pks=[]) == 0
    assert embeddings_refresh().sections == 0
