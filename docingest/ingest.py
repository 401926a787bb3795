"""Ingest a documentation tree (Sphinx HTML, reST, Markdown) as a tenant's sections: split it,
upsert it in batches through the product's ``sections_upsert`` with its follow-up work run as
the caller chooses, and compute the chunk embeddings of the sections that need them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cachecore.models import Section
from cachecore.services.sections import UpsertResult, section_chunks_compute, sections_upsert
from docingest.common import DocSection
from docingest.tree import split_file, split_tree
from tenants.caller import tenant_caller
from tenants.models import Tenant

UPSERT_BATCH = 250           # sections per sections_upsert call (the API allows ≤ 1000)
MAX_ID_LENGTH = 512          # Section.external_id


def in_subtrees(section_id: str, subtrees: Sequence[str]) -> bool:
    """Whether a section id ``<relpath>#<anchor>`` lies under one of ``subtrees``
    (a folder such as ``faq`` or a file such as ``tutorial/index.rst.txt``); no filter → all."""
    if not subtrees:
        return True
    relpath = section_id.split("#", 1)[0]
    for prefix in subtrees:
        prefix = prefix.strip("/")
        if relpath == prefix or relpath.startswith(prefix + "/"):
            return True
    return False


def collect_sections(root: Path, subtrees: Sequence[str] = ()) -> list[DocSection]:
    """Sections of the tree (Sphinx HTML, reST, Markdown) under ``subtrees``, empty text and
    over-long ids skipped, first of duplicate ids kept; in the splitter's stable order."""
    seen: set[str] = set()
    out: list[DocSection] = []
    for section in _split(Path(root), subtrees):
        if not section.text.strip() or len(section.id) > MAX_ID_LENGTH or section.id in seen:
            continue
        if in_subtrees(section.id, subtrees):
            seen.add(section.id)
            out.append(section)
    return out


def _split(root: Path, subtrees: Sequence[str]) -> Iterable[DocSection]:
    """Only the subtrees are split (splitting the whole Python docs takes ~15 s); ids stay
    relative to ``root``."""
    if not subtrees or root.is_file():
        yield from split_tree(root)
        return
    for prefix in sorted({p.strip("/") for p in subtrees}):
        path = root / prefix
        if path.is_file():
            yield from split_file(path, prefix)
        elif path.is_dir():
            for section in split_tree(path):
                yield DocSection(f"{prefix}/{section.id}", section.title, section.text)


@dataclass
class IngestResult:
    sections: int
    created: int
    updated: int
    unchanged: int
    seconds: float

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


# How an ingest gets the chunk embeddings coverage needs:
#   "jobs"  — as the API does: computed in the call for small upserts, as background jobs
#             (a Celery worker) for large ones;
#   "sync"  — computed in the call, whatever the size (no worker needed; slow for big trees);
#   "defer" — not computed; the caller computes them with ``chunks_ensure`` for the sections
#             that matter (the harness: every section a trail cites — coverage and the
#             verifier only ever look at cited sections, so recall behaves the same).
CHUNK_MODES = ("jobs", "sync", "defer")


def upsert_synchronously(*, tenant: Tenant, sections: Sequence[dict[str, str]],
                         chunks: str = "sync") -> UpsertResult:
    """``sections_upsert`` with invalidation done in the call rather than as a background job,
    and chunk embeddings computed in the call (``sync``), deferred (``defer``) or left to the
    service's own rule (``jobs``)."""
    if chunks not in CHUNK_MODES:
        raise ValueError(f"chunks must be one of {CHUNK_MODES}")
    if chunks == "jobs":
        return sections_upsert(caller=tenant_caller(tenant), sections=sections)
    return sections_upsert(caller=tenant_caller(tenant), sections=sections, invalidation="now",
                                    chunks="now" if chunks == "sync" else "later")


def chunks_pending(*, tenant: Tenant, section_ids: Iterable[str]) -> list[int]:
    """Primary keys of those of ``section_ids`` whose chunk embeddings are not ready."""
    return list(Section.objects.filter(tenant=tenant, external_id__in=list(section_ids), chunks_ready=False)
                .exclude(text=None).order_by("pk").values_list("pk", flat=True))


def chunks_ensure(*, tenant: Tenant, section_ids: Iterable[str], batch: int = 20,
                  on_batch: Callable[[int], None] | None = None) -> int:
    """Compute the chunk embeddings of those of ``section_ids`` that have none ready (the
    service's own ``section_chunks_compute``). Returns sections computed."""
    pks = chunks_pending(tenant=tenant, section_ids=section_ids)
    for start in range(0, len(pks), batch):
        section_chunks_compute(section_pks=pks[start:start + batch])
        if on_batch:
            on_batch(len(pks[start:start + batch]))
    return len(pks)


def ingest_sections(
    *, tenant: Tenant, sections: Sequence[DocSection], batch_size: int = UPSERT_BATCH,
    on_batch: Callable[[int], None] | None = None, chunks: str = "sync",
) -> IngestResult:
    started = time.perf_counter()
    created = updated = unchanged = 0
    batch_size = max(1, min(batch_size, 1000))
    for start in range(0, len(sections), batch_size):
        batch = sections[start:start + batch_size]
        result = upsert_synchronously(tenant=tenant, sections=[{"id": s.id, "text": s.text} for s in batch],
                                      chunks=chunks)
        created, updated, unchanged = created + result.created, updated + result.updated, unchanged + result.unchanged
        if on_batch:
            on_batch(len(batch))
    return IngestResult(len(sections), created, updated, unchanged, round(time.perf_counter() - started, 2))
