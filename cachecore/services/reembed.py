"""A model change: vectors stored under another embedding model than the current one are
computed again, in the background. Recall compares only vectors of the current model (the
nearest-neighbour query and coverage filter on ``embedding_model``), so until a trail is
re-embedded it is simply not found; nothing is ever compared across two models."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from cachecore.embedding import get_embedder
from cachecore.engine.text import normalise_query
from cachecore.models import NO_EXEMPLAR, RecallEvent, Section, SectionChunk, Trail
from cachecore.services.sections import section_chunks_compute, section_sentences_compute

BATCH = 500


@dataclass(frozen=True)
class RefreshResult:
    model: str
    trails: int
    sections: int
    # Trails whose question text retention already removed: they cannot be embedded again and
    # stay unmatched until they expire.
    redacted_left: int
    # Recall-log exemplars (negatives and positives) embedded again from their query (those
    # without one are dropped).
    exemplars: int = 0


def embeddings_refresh(*, batch: int = BATCH, max_batches: int | None = None) -> RefreshResult:
    """Re-embed trails (their normalised question) and section chunks and sentences stored under
    another model, and embed the sentences of sections chunked before sentences were, ``batch``
    rows at a time claimed with SKIP LOCKED (two workers split the work). Idempotent: a second
    run finds nothing."""
    embedder = get_embedder()
    version = embedder.version
    trails = sections = 0
    done = 0
    while max_batches is None or done < max_batches:
        done += 1
        with transaction.atomic():
            rows = list(Trail.objects.select_for_update(skip_locked=True).exclude(embedding_model=version)
                        .exclude(query_normalised="").only("id", "query_normalised")[:batch])
            if not rows:
                break
            # Normalised as a query is now (a question stored before framing was left out).
            questions = [normalise_query(r.query_normalised) for r in rows]
            for row, vector in zip(rows, embedder.embed(questions)):
                row.embedding, row.embedding_model = vector, version
            Trail.objects.bulk_update(rows, ["embedding", "embedding_model"])
            trails += len(rows)
    while max_batches is None or done < max_batches:
        done += 1
        pks = list(SectionChunk.objects.exclude(embedding_model=version).values_list("section_id", flat=True)
                   .distinct()[:batch])
        if not pks:
            break
        section_chunks_compute(section_pks=pks)
        sections += len(pks)
    # Sections chunked before sentences were computed (migration 0025): their sentences. A
    # section whose text holds no sentence gets none, so each is tried once per run.
    tried: set[int] = set()
    while max_batches is None or done < max_batches:
        done += 1
        pks = [pk for pk in Section.objects.filter(chunks_ready=True, text__isnull=False)
               .exclude(sentences__embedding_model=version).exclude(pk__in=tried)
               .order_by("pk").values_list("pk", flat=True)[:batch]]
        if not pks:
            break
        section_sentences_compute(section_pks=pks)
        tried.update(pks)
        sections += len(pks)
    exemplars = 0
    while max_batches is None or done < max_batches:
        done += 1
        with transaction.atomic():
            events = list(RecallEvent.objects.select_for_update(skip_locked=True)
                          .filter(exemplar_for__isnull=False).exclude(exemplar_embedding_model=version)
                          .only("id", "query")[:batch])
            if not events:
                break
            # An exemplar is local to its recall's query: embedded again from it, or, when the
            # query is gone (redacted), dropped (a negative's trail keeps its boundary, trail-wide).
            gone = [e.pk for e in events if not normalise_query(e.query or "")]
            kept = [e for e in events if e.pk not in set(gone)]
            for event, vector in zip(kept, embedder.embed([normalise_query(e.query) for e in kept])):
                event.exemplar_embedding, event.exemplar_embedding_model = vector, version
            RecallEvent.objects.bulk_update(kept, ["exemplar_embedding", "exemplar_embedding_model"])
            RecallEvent.objects.filter(pk__in=gone).update(**NO_EXEMPLAR)
            exemplars += len(events)
    redacted = Trail.objects.exclude(embedding_model=version).filter(query_normalised="").count()
    return RefreshResult(model=version, trails=trails, sections=sections, redacted_left=redacted,
                         exemplars=exemplars)
