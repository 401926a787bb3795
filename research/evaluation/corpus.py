"""The corpus side of the harness: ingest a documentation tree as sections, a full-text
search over a tenant's sections (the simulated agent's ``search``/``read`` tools), and the
edits of the staleness experiment."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db import connection

from cachecore import services
from cachecore.engine.docsplit import DocSection, split_file, split_tree
from cachecore.models import Section
from tenants.models import Tenant

UPSERT_BATCH = 250           # sections per sections_upsert call (the API allows ≤ 1000)
MAX_ID_LENGTH = 512          # Section.external_id
SEARCH_LIMIT = 5


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
                         chunks: str = "sync") -> services.UpsertResult:
    """``sections_upsert`` with invalidation done in the call rather than as a background job,
    and chunk embeddings computed in the call (``sync``), deferred (``defer``) or left to the
    service's own rule (``jobs``)."""
    if chunks not in CHUNK_MODES:
        raise ValueError(f"chunks must be one of {CHUNK_MODES}")
    if chunks == "jobs":
        return services.sections_upsert(tenant=tenant, sections=sections)
    return services.sections_upsert(tenant=tenant, sections=sections, invalidation="now",
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
        services.section_chunks_compute(section_pks=pks[start:start + batch])
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


# ---- the agent's tools --------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9_]+")


def or_query(text: str) -> str:
    """A ``websearch_to_tsquery`` string with OR semantics over the text's words."""
    return " or ".join(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


class FullTextSearch:
    """``search(q)`` → top ids by ``ts_rank_cd`` over the sections' English tsvectors (OR of
    the query's words; ties by id), ``read(id)`` → current text. The tsvectors live in a
    harness-owned temporary table with a GIN index, built once per run from the tenant's
    sections (``refresh`` after edits). Dropped by ``close`` or with the connection."""

    # ts_rank_cd normalisation 1: divide by 1 + log(document length), so long sections
    # matching many common words do not drown short precise ones.
    RANK_NORMALISATION = 1
    # The heading (the text's first paragraph) weighted A, the whole text D, as documentation
    # search engines weight titles. Measured on the full Python docs, 178 FAQ questions:
    # unweighted text finds a gold section for 4 % of the questions (2 % of the paraphrases),
    # title-weighted 78 % (16 %); normalisation 2 (divide by length) favours near-empty
    # sections (38 % / 19 % unweighted, 47 % / 13 % weighted).
    TSVECTOR = ("setweight(to_tsvector('english', split_part(text, E'\\n\\n', 1)), 'A') || "
                "setweight(to_tsvector('english', text), 'D')")

    def __init__(self, tenant: Tenant, *, limit: int = SEARCH_LIMIT) -> None:
        self.tenant, self.limit = tenant, limit
        self.table = f"eval_fts_{uuid.uuid4().hex[:12]}"
        with connection.cursor() as cur:
            cur.execute(f"CREATE TEMP TABLE {self.table} (external_id text PRIMARY KEY, tsv tsvector NOT NULL)")
            cur.execute(
                f"INSERT INTO {self.table} SELECT external_id, {self.TSVECTOR} "
                "FROM cachecore_section WHERE tenant_id = %s AND text IS NOT NULL",
                [tenant.pk],
            )
            cur.execute(f"CREATE INDEX ON {self.table} USING gin (tsv)")
            cur.execute(f"ANALYZE {self.table}")
        self.searches = 0
        self.reads = 0

    def search(self, q: str) -> list[str]:
        self.searches += 1
        terms = or_query(q)
        if not terms:
            return []
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT external_id FROM {self.table}, websearch_to_tsquery('english', %s) q "
                f"WHERE tsv @@ q ORDER BY ts_rank_cd(tsv, q, {self.RANK_NORMALISATION}) DESC, external_id LIMIT %s",
                [terms, self.limit],
            )
            return [row[0] for row in cur.fetchall()]

    def read(self, section_id: str) -> str | None:
        self.reads += 1
        return (Section.objects.filter(tenant=self.tenant, external_id=section_id)
                .values_list("text", flat=True).first())

    def texts(self, section_ids: Iterable[str]) -> dict[str, str | None]:
        ids = list(section_ids)
        found = dict(Section.objects.filter(tenant=self.tenant, external_id__in=ids).values_list("external_id", "text"))
        return {sid: found.get(sid) for sid in ids}

    def refresh(self, section_ids: Sequence[str]) -> None:
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE {self.table} t SET tsv = {self.TSVECTOR.replace('text', 's.text')} FROM cachecore_section s "
                "WHERE s.tenant_id = %s AND s.external_id = t.external_id AND t.external_id = ANY(%s)",
                [self.tenant.pk, list(section_ids)],
            )

    def close(self) -> None:
        with connection.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self.table}")


# ---- edits for the staleness experiment ---------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])(\s+)(?=[A-Z0-9\"'(`])")
EDIT_MARK = " (Revised: this sentence was changed in a later edition.)"


def edit_sentence(text: str) -> str:
    """Change one sentence of a section: the first sentence after the heading paragraph gets
    a clause appended (the whole text if it has no such sentence). Always changes the hash."""
    head, sep, body = text.partition("\n\n")
    target = body if sep else head
    match = _SENTENCE_END.search(target)
    cut = match.start() if match else len(target.rstrip())
    edited = target[:cut] + EDIT_MARK + target[cut:]
    return head + sep + edited if sep else edited
