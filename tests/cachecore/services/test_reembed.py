"""An embedding model change: recall never compares vectors of two models, and the background
refresh embeds stored trails and chunks again with the current model."""

import numpy as np

from cachecore.embedding import get_embedder
from cachecore.engine.text import normalise_query
from cachecore.models import SectionChunk, Trail
from cachecore.services.recall import recall
from cachecore.services.reembed import embeddings_refresh
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import tenant_caller

QUERY = "How do I rotate the signing keys of the Acme gateway?"
TEXT = "Rotate the gateway's signing keys with acme keys rotate; the old key stays valid for a day."


def _seed(tenant):
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "keys#rotate", "text": TEXT}])
    return trail_record(caller=tenant_caller(tenant), scope="default", query=QUERY, steps=[], cited=["keys#rotate"],
                                 signal={"source": "caller", "accepted": True})


def test_every_stored_vector_carries_the_model_that_computed_it(make_tenant):
    tenant = make_tenant()
    trail = _seed(tenant)
    version = get_embedder().version
    assert Trail.objects.get(pk=trail.pk).embedding_model == version
    assert set(SectionChunk.objects.filter(section__tenant=tenant).values_list("embedding_model", flat=True)) == {
        version}


def test_trails_of_another_model_are_not_compared_until_re_embedded(make_tenant):
    tenant = make_tenant()
    trail = _seed(tenant)
    Trail.objects.filter(pk=trail.pk).update(embedding_model="another-model@0123456789ab")
    SectionChunk.objects.filter(section__tenant=tenant).update(embedding_model="another-model@0123456789ab")
    assert recall(caller=tenant_caller(tenant), scope="default", query=QUERY).answer.outcome == "miss"

    result = embeddings_refresh()
    assert result.trails >= 1 and result.sections >= 1
    assert Trail.objects.get(pk=trail.pk).embedding_model == get_embedder().version
    again = recall(caller=tenant_caller(tenant), scope="default", query=QUERY)
    assert again.answer.outcome == "prefetch" and again.answer.coverage is not None
    assert embeddings_refresh().trails == 0  # idempotent


def test_a_question_stored_with_its_framing_is_re_embedded_without_it(make_tenant):
    # Stored before conversational framing was left out of normalisation.
    tenant = make_tenant()
    trail = _seed(tenant)
    Trail.objects.filter(pk=trail.pk).update(embedding_model="another-model@0123456789ab",
                                              query_normalised="hi! " + QUERY.lower().rstrip("?") + "? thanks")
    assert embeddings_refresh().trails >= 1
    stored = Trail.objects.get(pk=trail.pk).embedding
    plain = get_embedder().embed([normalise_query(QUERY)])[0]
    assert float(np.dot(stored, plain)) > 0.9999


def test_a_redacted_trail_of_another_model_cannot_be_re_embedded_and_stays_unmatched(make_tenant):
    tenant = make_tenant()
    trail = _seed(tenant)
    Trail.objects.filter(pk=trail.pk).update(embedding_model="another-model@0123456789ab", query="",
                                              query_normalised="")
    result = embeddings_refresh()
    assert result.redacted_left >= 1
    assert Trail.objects.get(pk=trail.pk).embedding_model == "another-model@0123456789ab"
    assert recall(caller=tenant_caller(tenant), scope="default", query=QUERY).answer.outcome == "miss"


def test_a_negative_of_another_model_counts_for_nothing_until_its_query_is_embedded_again(make_caller):
    """A trail's negatives are local to their recall's query by cosine: one computed by another
    model would compare vectors of two models. Until the refresh embeds its query again, the
    trail's boundary is trail-wide (it holds for every query); then it is local again."""
    from cachecore.models import RecallEvent

    caller = make_caller(small_tenant_cut=False)  # bars and models, not the size of a one-section tenant

    caller.upsert({"doc#config": "Set ACME_HOME to move the configuration directory of Acme.",
                   "doc#logging": "Logs go to /var/log/acme; set ACME_LOG_DIR to move the log directory."})
    caller.tenant.prefetch_confidence, caller.tenant.hint_confidence = 0.05, 0.01
    caller.tenant.save(update_fields=["prefetch_confidence", "hint_confidence"])
    trail = caller.record(query="How do I move the Acme configuration directory?", cited=["doc#config"]).json()
    near_miss = caller.recall("How do I move the Acme log directory?")
    assert (near_miss["outcome"], near_miss["trail_id"]) == ("prefetch", trail["trail_id"])
    caller.record(query="How do I move the Acme log directory?", cited=["doc#logging"],
                  recall_id=near_miss["recall_id"], accepted=None)
    negative = RecallEvent.objects.get(pk=near_miss["recall_id"])
    assert negative.exemplar_embedding_model == get_embedder().version
    # A high bar, so that a trail-wide boundary would hold back a question unlike the near miss.
    RecallEvent.objects.filter(pk=negative.pk).update(exemplar_bar=0.99)
    Trail.objects.filter(pk=trail["trail_id"]).update(prefetch_boundary=0.99)
    unlike = "Which environment variable sets the Acme home?"
    assert caller.recall(unlike)["outcome"] == "prefetch"  # not like the near miss: its bar is local

    # The model changed since: the negative's vector belongs to another model's space.
    RecallEvent.objects.filter(pk=negative.pk).update(exemplar_embedding_model="another-model@0123456789ab")
    held = caller.recall(unlike)
    assert (held["outcome"], held["reason"]) == ("hint", "not_cited_before"), held

    result = embeddings_refresh()
    assert result.exemplars == 1
    negative.refresh_from_db()
    assert negative.exemplar_embedding_model == get_embedder().version and negative.exemplar_for is not None
    assert caller.recall(unlike)["outcome"] == "prefetch"
    assert caller.recall("Can the Acme log directory be moved?")["reason"] == "not_cited_before"
    assert embeddings_refresh().exemplars == 0  # idempotent


def test_a_negative_whose_query_is_gone_is_dropped_by_the_refresh(caller):
    from cachecore.models import RecallEvent

    caller.upsert({"doc#config": "Set ACME_HOME to move the configuration directory of Acme."})
    caller.tenant.prefetch_confidence, caller.tenant.hint_confidence = 0.05, 0.01
    caller.tenant.save(update_fields=["prefetch_confidence", "hint_confidence"])
    caller.record(query="How do I move the Acme configuration directory?", cited=["doc#config"])
    offered = caller.recall("How do I move the Acme log directory?")
    caller.upsert({"doc#other": "Something else entirely."})
    caller.record(query="How do I move the Acme log directory?", cited=["doc#other"],
                  recall_id=offered["recall_id"], accepted=None)
    RecallEvent.objects.filter(pk=offered["recall_id"]).update(exemplar_embedding_model="another-model@0123456789ab",
                                                               query="")
    assert embeddings_refresh().exemplars == 1
    event = RecallEvent.objects.get(pk=offered["recall_id"])
    assert (event.exemplar_for, event.exemplar_embedding, event.exemplar_embedding_model) == (None, None, "")
