"""selectors.rivals: the tenant's sections that cover a query best, visible to the recall's
scope only, by either route (exact scan, HNSW), against a real PostgreSQL with pgvector."""

from __future__ import annotations

import pytest
from django.db import transaction

from cachecore.embedding import get_embedder
from cachecore.selectors.rivals import best_covering_sections
from tenants.caller import tenant_caller

pytestmark = pytest.mark.django_db

SECTIONS = {
    "broker#visibility": "The visibility timeout is the number of seconds the broker waits for a worker to "
                         "acknowledge a task before redelivering it to another worker.",
    "broker#prefetch": "The prefetch multiplier sets how many messages each worker process reserves ahead.",
    "tasks#retry": "A task can retry itself with self.retry, after a countdown, up to max_retries times.",
}


def _best(caller, scope: str, query: str, **kw) -> list[tuple[str, float]]:
    vector = get_embedder().embed_one(query)
    with transaction.atomic():
        return best_covering_sections(caller=tenant_caller(caller.tenant), scope=scope, embedding=vector, **kw)


@pytest.mark.parametrize("exact_max_chunks", [6000, 0], ids=["exact", "hnsw"])
def test_the_section_that_answers_comes_first_by_either_route(caller, exact_max_chunks):
    caller.upsert(SECTIONS)
    best = _best(caller, "default", "how long does the broker wait for an ack before redelivery?",
                 exact_max_chunks=exact_max_chunks)
    assert [b[0] for b in best][:1] == ["broker#visibility"]
    assert len(best) == 3 and best == sorted(best, key=lambda b: -b[1])
    assert all(-1.0 <= cos <= 1.0 for _, cos in best)


def test_sections_hidden_from_the_scope_and_other_tenants_never_count(caller, outsider):
    caller.upsert({"broker#prefetch": SECTIONS["broker#prefetch"]})
    caller.upsert({"broker#visibility": SECTIONS["broker#visibility"]}, scopes=["internal:"])
    outsider.upsert({"theirs#visibility": SECTIONS["broker#visibility"]})
    query = "how long does the broker wait for an ack before redelivery?"
    assert [b[0] for b in _best(caller, "public:docs", query)] == ["broker#prefetch"]
    assert [b[0] for b in _best(caller, "internal:docs", query)] == ["broker#visibility", "broker#prefetch"]


def test_a_changed_section_counts_by_its_current_text_only(caller):
    caller.upsert({"broker#visibility": SECTIONS["broker#visibility"]})
    caller.upsert({"broker#visibility": "Nothing about brokers any more: a recipe for pancakes with blueberries."})
    best = _best(caller, "default", "how long does the broker wait for an ack before redelivery?")
    vector = get_embedder().embed_one("a recipe for pancakes with blueberries")
    with transaction.atomic():
        pancakes = best_covering_sections(caller=tenant_caller(caller.tenant), scope="default", embedding=vector)
    assert [b[0] for b in best] == ["broker#visibility"] and best[0][1] < 0.5
    assert pancakes[0][0] == "broker#visibility" and pancakes[0][1] > 0.6
