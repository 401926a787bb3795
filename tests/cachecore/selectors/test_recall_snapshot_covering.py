"""selectors.recall_snapshot.recall_covering (selectors.rivals): the tenant's sections that
cover a query best, visible to the recall's scope only, by either route (exact scan, HNSW), and
the trails citing the best of them, against a real PostgreSQL with pgvector."""

from __future__ import annotations

import pytest

from cachecore.embedding import get_embedder
from cachecore.selectors.nearest import vector_literal
from cachecore.selectors.recall_snapshot import recall_covering
from tenants.caller import tenant_caller

pytestmark = pytest.mark.django_db

SECTIONS = {
    "broker#visibility": "The visibility timeout is the number of seconds the broker waits for a worker to "
                         "acknowledge a task before redelivering it to another worker.",
    "broker#prefetch": "The prefetch multiplier sets how many messages each worker process reserves ahead.",
    "tasks#retry": "A task can retry itself with self.retry, after a countdown, up to max_retries times.",
}


def _covering(caller, scope: str, query: str, *, threshold: float = 0.3, exclude=(), **kw):
    vector = vector_literal(get_embedder().embed_one(query))
    return recall_covering(caller=tenant_caller(caller.tenant), scope=scope, vector=vector, terms=[],
                           threshold=threshold, exclude=list(exclude), **kw)


def _best(caller, scope: str, query: str, **kw) -> list[tuple[str, float]]:
    return _covering(caller, scope, query, **kw).sections


@pytest.mark.parametrize("chunk_route_as", ["exact", "hnsw"])
def test_the_section_that_answers_comes_first_by_either_route(caller, chunk_route_as):
    caller.upsert(SECTIONS)
    best = _best(caller, "default", "how long does the broker wait for an ack before redelivery?",
                 chunk_route_as=chunk_route_as)
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
    pancakes = _best(caller, "default", "a recipe for pancakes with blueberries")
    assert [b[0] for b in best] == ["broker#visibility"] and best[0][1] < 0.5
    assert pancakes[0][0] == "broker#visibility" and pancakes[0][1] > 0.6


@pytest.mark.parametrize("chunk_route_as", ["exact", "hnsw"])
def test_trails_citing_the_best_sections_are_candidates_whatever_their_question(caller, chunk_route_as):
    caller.upsert(SECTIONS)
    ack = "what is the ack window of the transport?"
    ours = caller.record(query=ack, cited=["broker#visibility"]).json()["trail_id"]
    other = caller.record(query="retrying a failed job", cited=["tasks#retry"]).json()["trail_id"]
    elsewhere = caller.record(query=ack, cited=["broker#visibility"], scope="elsewhere").json()["trail_id"]
    query = "how long does the broker wait for an ack before redelivery?"
    found = _covering(caller, "default", query, chunk_route_as=chunk_route_as)
    assert [c.trail_id for c in found.candidates] == [ours] and found.candidates[0].via_sections
    # Read with its cited sections, as the first read gives them.
    assert [c.section_id for c in found.candidates[0].cited] == ["broker#visibility"]
    assert found.candidates[0].cited[0].text == SECTIONS["broker#visibility"]
    assert other not in {c.trail_id for c in found.candidates} and elsewhere != ours
    assert -1.0 <= found.candidates[0].similarity <= 1.0
    # Already among the nearest questions: not found twice. Over the threshold only.
    assert _covering(caller, "default", query, exclude=[ours]).candidates == []
    assert _covering(caller, "default", query, threshold=0.99).candidates == []
    assert _covering(caller, "default", query, threshold=0.99).sections[0][0] == "broker#visibility"


def test_the_covering_read_counts_the_sections_still_waiting_for_their_chunks(caller):
    from cachecore.services.sections import sections_upsert

    caller.upsert(SECTIONS)
    query = "how long does the broker wait for an ack before redelivery?"
    assert _covering(caller, "default", query).chunks_pending == 0
    sections_upsert(caller=tenant_caller(caller.tenant), chunks="later",
                    sections=[{"id": f"later#{i}", "text": f"Section {i} waits for its chunks."} for i in range(3)])
    assert _covering(caller, "default", query).chunks_pending == 3


def test_a_section_cited_by_many_trails_is_read_up_to_its_cap(caller):
    """A section thousands of trails cite must not make the read a scan of them all: only the
    first ``citing_per_section`` citations of each route section are read."""
    caller.upsert(SECTIONS)
    for n in range(6):
        caller.record(query=f"ack window of the transport, variant {n}", cited=["broker#visibility"])
    query = "how long does the broker wait for an ack before redelivery?"
    assert len(_covering(caller, "default", query).candidates) == 3   # SECTION_ROUTE trails at most
    capped = _covering(caller, "default", query, citing_per_section=2).candidates
    assert len(capped) == 2 and all(c.via_sections for c in capped)
    assert all([s.section_id for s in c.cited] == ["broker#visibility"] for c in capped)


@pytest.mark.parametrize("chunk_route_as", ["exact", "hnsw"])
def test_the_best_sections_come_with_their_best_sentence(caller, chunk_route_as):
    from cachecore.models import SectionSentence

    caller.upsert(SECTIONS)
    query = "how long does the broker wait for an ack before redelivery?"
    found = _covering(caller, "default", query, chunk_route_as=chunk_route_as)
    sentences = dict(found.sentences)
    assert set(sentences) == {s for s, _ in found.sections}
    # Each is the query's best cosine to one of the section's sentences (here one sentence each).
    assert sentences["broker#visibility"] == pytest.approx(dict(found.sections)["broker#visibility"], abs=1e-4)
    # A section whose sentences are gone (or of an older text) has none: unknown, not poor.
    SectionSentence.objects.filter(section__external_id="tasks#retry").delete()
    SectionSentence.objects.filter(section__external_id="broker#prefetch").update(sha256="0" * 64)
    assert set(dict(_covering(caller, "default", query, chunk_route_as=chunk_route_as).sentences)) == {
        "broker#visibility"}
