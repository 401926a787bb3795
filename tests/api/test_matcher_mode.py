"""Match modes through the API. The mode decides which candidates are considered at all (the
first stage); the calibrated scorer then decides between prefetch, hint and miss. A near miss
(the same words, another need) is never served as text in any mode; the same question is."""

import pytest

from cachecore.models import RecallEvent

SECTIONS = {
    "faq#threads": "The global interpreter lock lets only one thread run Python bytecode at a time, so "
    "CPU-bound code does not get faster with threads. Use multiprocessing or a C extension instead.",
}
TRAIL = "Why is my threaded code not faster?"
PARAPHRASE = "Why doesn't using threads speed up my CPU-bound program?"
NEAR_MISS = "Why is my multiprocessing code not faster?"  # cosine 0.61, no polarity flip


@pytest.mark.parametrize("mode", ["embedding", "hybrid", "lexical", "learned"])
def test_every_mode_prefetches_the_same_question_and_never_serves_text_to_the_near_miss(make_caller, mode):
    caller = make_caller(match_mode=mode)
    caller.upsert(SECTIONS)
    trail = caller.record(query=TRAIL, cited=["faq#threads"]).json()
    same = caller.recall("why is my threaded code not faster")
    assert same["outcome"] == "prefetch" and same["trail_id"] == trail["trail_id"]
    near = caller.recall(NEAR_MISS)
    assert near["outcome"] != "prefetch"
    assert all("text" not in s for s in near["sections"])
    assert near["confidence"] < caller.tenant.prefetch_confidence


def test_embedding_mode_hints_the_near_miss_the_cosine_lets_through(make_caller):
    caller = make_caller(match_mode="embedding")
    caller.upsert(SECTIONS)
    caller.record(query=TRAIL, cited=["faq#threads"])
    near = caller.recall(NEAR_MISS)
    assert near["similarity"] >= caller.tenant.similarity_threshold  # cosine alone would have served it
    assert near["outcome"] in ("hint", "miss") and near["reason"] in ("low_confidence", "no_match")


def test_learned_mode_turns_the_near_miss_into_a_miss_and_keeps_the_paraphrase(make_caller):
    caller = make_caller(match_mode="learned")
    caller.upsert(SECTIONS)
    trail = caller.record(query=TRAIL, cited=["faq#threads"]).json()
    near = caller.recall(NEAR_MISS)
    assert near["outcome"] == "miss" and near["reason"] == "no_match"
    assert near["similarity"] >= caller.tenant.similarity_threshold  # embedding alone would hit
    assert RecallEvent.objects.get(pk=near["recall_id"]).miss_reason == "no_candidate"
    para = caller.recall(PARAPHRASE)
    assert para["outcome"] != "miss" and para["trail_id"] == trail["trail_id"]


def test_lexical_mode_does_not_consider_a_reworded_question_that_shares_few_trigrams(make_caller):
    caller = make_caller(match_mode="lexical")
    caller.upsert(SECTIONS)
    caller.record(query=TRAIL, cited=["faq#threads"])
    body = caller.recall("How can I make Python use every core when it computes in several threads")
    assert body["outcome"] == "miss" and body["reason"] == "no_match"
