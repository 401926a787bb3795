"""Match modes through the API: the learned second stage turns a near miss that embedding
similarity lets through into a miss, while a reworded paraphrase still hits."""

import pytest

from cachecore.models import RecallEvent

SECTIONS = {
    "faq#threads": "The global interpreter lock lets only one thread run Python bytecode at a time, so "
    "CPU-bound code does not get faster with threads. Use multiprocessing or a C extension instead.",
}
TRAIL = "Why is my threaded code not faster?"
PARAPHRASE = "Why doesn't using threads speed up my CPU-bound program?"
NEAR_MISS = "Why is my multiprocessing code not faster?"  # cosine 0.61, no polarity flip


def test_embedding_mode_lets_the_near_miss_hit(make_caller):
    caller = make_caller(match_mode="embedding")
    caller.upsert(SECTIONS)
    caller.record(query=TRAIL, cited=["faq#threads"])
    assert caller.recall(NEAR_MISS)["outcome"] != "miss"


def test_learned_mode_turns_the_near_miss_into_a_miss_and_keeps_the_paraphrase(make_caller):
    caller = make_caller(match_mode="learned")
    caller.upsert(SECTIONS)
    trail = caller.record(query=TRAIL, cited=["faq#threads"]).json()
    near = caller.recall(NEAR_MISS)
    assert near["outcome"] == "miss"
    assert near["similarity"] >= caller.tenant.similarity_threshold  # embedding alone would hit
    assert RecallEvent.objects.get(pk=near["recall_id"]).miss_reason == "no_candidate"
    para = caller.recall(PARAPHRASE)
    assert para["outcome"] == "prefetch" and para["trail_id"] == trail["trail_id"]
    assert caller.recall(TRAIL)["outcome"] == "prefetch"


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_trigram_modes_hit_the_same_question_and_miss_the_near_miss(make_caller, mode):
    caller = make_caller(match_mode=mode)
    caller.upsert(SECTIONS)
    caller.record(query=TRAIL, cited=["faq#threads"])
    assert caller.recall("why is my threaded code not faster")["outcome"] == "prefetch"
    if mode == "lexical":
        # Trigram similarity 0.6 at the default threshold 0.51: lexical alone cannot tell.
        assert caller.recall(NEAR_MISS)["outcome"] != "miss"
