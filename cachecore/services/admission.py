"""Admission: whether a recorded trail may be served, from the caller's signal and, under the
tenant's ``signal+verifier`` policy, the built-in verifier's verdict on the answer."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import F, Q

from cachecore.embedding import DIMENSIONS, get_embedder
from cachecore.engine.text import split_chunks
from cachecore.engine.verifier import Verdict, Verifier
from cachecore.models import Section, SectionChunk, SignalSource
from tenants.models import AdmissionPolicy, Tenant
from tenants.scopes import SHARED_NAMESPACE

POSITIVE_SOURCES = {SignalSource.VERIFIER, SignalSource.USER, SignalSource.CALLER}

_lock = threading.Lock()
_verifier: Verifier | None = None


def get_verifier() -> Verifier:
    """The process-wide verifier (its exemplar vectors are embedded once)."""
    global _verifier
    if _verifier is None:
        with _lock:
            if _verifier is None:
                _verifier = Verifier(get_embedder().embed)
    return _verifier


def cited_chunk_vectors(*, tenant: Tenant, section_ids: Sequence[str],
                        namespaces: Mapping[str, str] | None = None) -> tuple[np.ndarray, int]:
    """Vectors of the cited sections' chunks for their current text: the stored chunk
    embeddings where ready, else computed now from the text, at most
    ``TRAILCACHE_SYNC_CHUNK_LIMIT`` of them (in the order cited), as an upsert embeds at most that
    many in its request. Returns the vectors and how many chunks were left out (not checked).
    ``namespaces``: each id's section namespace as the record resolved it (absent: shared)."""
    order = {section_id: i for i, section_id in enumerate(section_ids)}
    namespaces = namespaces or {}
    cited = Q()
    for section_id in section_ids:
        cited |= Q(external_id=section_id, namespace=namespaces.get(section_id, SHARED_NAMESPACE))
    sections = sorted(Section.objects.filter(cited, tenant=tenant, external_id__in=section_ids)
                      .only("pk", "external_id", "text", "sha256", "chunks_ready"),
                      key=lambda s: order.get(s.external_id, len(order)))
    embedder = get_embedder()
    ready = [s.pk for s in sections if s.chunks_ready]
    stored = list(SectionChunk.objects.filter(section_id__in=ready, sha256=F("section__sha256"),
                                              embedding_model=embedder.version)
                  .values_list("section_id", "embedding")) if ready else []
    vectors = [np.asarray(v, dtype=np.float32) for _, v in stored]
    # Chunks of another model (not re-embedded yet) are computed now, like chunks not ready.
    have = {pk for pk, _ in stored}
    pending = [chunk for s in sections if s.pk not in have and s.text for chunk in split_chunks(s.text)]
    now = pending[:settings.TRAILCACHE_SYNC_CHUNK_LIMIT]
    if now:
        vectors.extend(embedder.embed(now))
    matrix = np.vstack(vectors) if vectors else np.zeros((0, DIMENSIONS), dtype=np.float32)
    return matrix, len(pending) - len(now)


def admission_decide(
    *, tenant: Tenant, signal: dict[str, Any] | None, answer: str | None, cited: Sequence[str],
    namespaces: Mapping[str, str] | None = None,
) -> tuple[bool, Verdict | None]:
    """(admitted, verdict). Admitted only with a positive signal; under ``signal+verifier``
    the answer must also pass the verifier (no answer → not admitted)."""
    source = (signal or {}).get("source") or ""
    positive = (signal or {}).get("accepted") is True and source in POSITIVE_SOURCES
    if tenant.admission_policy != AdmissionPolicy.SIGNAL_VERIFIER:
        return positive, None
    if not answer or not answer.strip():
        return False, Verdict(False, ["no answer to verify (admission policy is signal + verifier)"])
    vectors, left_out = cited_chunk_vectors(tenant=tenant, section_ids=cited, namespaces=namespaces)
    verdict = get_verifier().check(answer, vectors)
    if left_out:
        # Support found in the chunks checked stands; an answer resting on the others fails (pending).
        verdict = replace(verdict, reasons=[*verdict.reasons, (
            f"{left_out} chunks of the cited sections not checked (not embedded yet, over the per-request cap of "
            f"{settings.TRAILCACHE_SYNC_CHUNK_LIMIT})")])
    return positive and verdict.passed, verdict
