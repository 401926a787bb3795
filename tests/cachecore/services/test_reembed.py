"""An embedding model change: recall never compares vectors of two models, and the background
refresh embeds stored trails and chunks again with the current model."""

from cachecore.embedding import get_embedder
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


def test_a_redacted_trail_of_another_model_cannot_be_re_embedded_and_stays_unmatched(make_tenant):
    tenant = make_tenant()
    trail = _seed(tenant)
    Trail.objects.filter(pk=trail.pk).update(embedding_model="another-model@0123456789ab", query="",
                                              query_normalised="")
    result = embeddings_refresh()
    assert result.redacted_left >= 1
    assert Trail.objects.get(pk=trail.pk).embedding_model == "another-model@0123456789ab"
    assert recall(caller=tenant_caller(tenant), scope="default", query=QUERY).answer.outcome == "miss"
