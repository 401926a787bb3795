"""Sections: upsert by hash, delete, invalidation of the trails citing them, chunk embeddings."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from cachecore.access import require_permission
from cachecore.embedding import get_embedder
from cachecore.engine.evidence import SECTION_COUNT_TERM, section_terms
from cachecore.engine.text import content_hash, split_chunks, split_sentences
from cachecore.errors import InvalidInput, NotFound, ScopeForbidden
from cachecore.models import (
    Job,
    JobKind,
    Section,
    SectionChunk,
    SectionSentence,
    Trail,
    TrailStatus,
)
from cachecore.selectors.sections import namespace_asked, section_rows, sections_resolve, sections_resolved
from cachecore.services.jobs import job_create, job_progress, register
from cachecore.signals import report_trails_invalidated
from tenants.caller import Caller
from tenants.models import AuditAction, KeyPermission, Tenant
from tenants.scopes import EVERY_SCOPE, SHARED_NAMESPACE, entries_within, prefix_within
from tenants.services import audit_record


@dataclass(frozen=True)
class UpsertResult:
    created: int
    updated: int
    unchanged: int
    invalidated_trails: int


# When the work an upsert sets off runs: "auto" by its size (in the call for a few sections, a
# background job for many), "now" in the call whatever the size, "job" always as a job; chunk
# embeddings "later" are left to the caller (``section_chunks_compute``).
INVALIDATION_MODES = ("auto", "now", "job")
CHUNK_MODES = ("auto", "now", "job", "later")


def section_scopes_clean(caller: Caller, scopes: Sequence[str] | None) -> list[str] | None:
    """A section's requested ``scopes`` for this caller (None: not given). A scope-limited caller
    may give only entries within its own prefixes (it cannot widen them) and never every scope
    (``*``); ScopeForbidden (403) names the entries otherwise."""
    if scopes is None:
        return None
    entries = sorted({e.strip() for e in scopes if e.strip()})
    if caller.scope_limited:
        outside = [e for e in entries
                   if e == EVERY_SCOPE or not any(prefix_within(e, p) for p in caller.scope_prefixes)]
        if outside:
            raise ScopeForbidden("a section of this API key belongs to its own scope prefixes",
                                 fields={"sections": [f"scope outside this API key's scope prefixes: {e}"
                                                      for e in outside]})
    return [EVERY_SCOPE] if EVERY_SCOPE in entries else entries


def sections_upsert(*, caller: Caller, sections: Sequence[dict[str, Any]], invalidation: str = "auto",
                    chunks: str = "auto") -> UpsertResult:
    """Create or update sections by external id; the server hashes the text. A section may
    carry ``hash`` instead of ``text`` (kept by hash only: it validates, but its trails can
    only hint), and ``scopes`` (the scope prefixes that may see it; ``["*"]`` every scope).
    Without ``scopes`` a new section of a tenant-wide caller is for tenant-wide callers only
    (empty), one of a scope-limited caller belongs to the caller's prefixes, and an existing
    section keeps its scopes. A tenant-wide caller writes the shared namespace. A scope-limited
    caller (docs/scopes.md, "Id namespaces") overwrites the section of its own namespace when
    there is one, else the shared one when that lies entirely within its prefixes; otherwise it
    creates the section — in the shared namespace when the id is free there, else in its own —
    and both creations answer alike. Decided on the rows locked for the write. An identical
    rewrite changes nothing. Trails citing a changed section are invalidated (stale when every
    cited section changed). All or nothing."""
    require_permission(caller, KeyPermission.SECTIONS_WRITE)
    tenant = caller.tenant
    if invalidation not in INVALIDATION_MODES or chunks not in CHUNK_MODES:
        raise ValueError(f"invalidation must be one of {INVALIDATION_MODES}, chunks one of {CHUNK_MODES}")
    ids = [s["id"] for s in sections]
    duplicates = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
    if duplicates:
        raise InvalidInput("duplicate section ids in one request",
                           fields={"sections": [f"duplicate id: {i}" for i in duplicates]})
    # id → (text or None, sha256): hash-only sections keep no text.
    incoming = {
        s["id"]: (s["text"], content_hash(s["text"])) if s.get("text") is not None else (None, s["hash"].lower())
        for s in sections
    }
    requested = {s["id"]: section_scopes_clean(caller, s.get("scopes")) for s in sections}
    own_scopes = sorted(caller.scope_prefixes)
    embedder = get_embedder()
    with transaction.atomic():
        terms_delta: Counter[str] = Counter()
        # Every row the ids could mean, locked in (id, namespace) order as a record's FOR SHARE
        # of its cited rows: the two never deadlock.
        rows = section_rows(caller=caller, section_ids=ids, lock="update")
        existing, namespace_for_new = _write_targets(caller, ids, rows)
        to_create: list[Section] = []
        to_update: list[Section] = []
        rescoped: list[Section] = []
        for section_id, (text, digest) in incoming.items():
            current = existing.get(section_id)
            scopes = requested[section_id]
            if current is None:
                to_create.append(Section(tenant=tenant, external_id=section_id, namespace=namespace_for_new[section_id],
                                         text=text, sha256=digest, scopes=own_scopes if scopes is None else scopes))
                continue
            if scopes is not None and scopes != sorted(current.scopes):
                current.scopes = scopes
                rescoped.append(current)
            if current.sha256 != digest or (current.text is None and text is not None):
                terms_delta.subtract(current.terms)
                current.text, current.sha256, current.chunks_ready = text, digest, False
                to_update.append(current)
        changed = to_create + to_update
        token_counts = embedder.count_tokens_batch([s.text or "" for s in changed])
        for section, tokens in zip(changed, token_counts):
            section.token_count = tokens
            section.terms = sorted(section_terms(section.text))
            terms_delta.update(section.terms)
        terms_delta[SECTION_COUNT_TERM] += len(to_create)
        now = timezone.now()
        Section.objects.bulk_create(to_create)
        written = to_update + [s for s in rescoped if s not in to_update]
        for section in written:
            section.updated_at = now
        Section.objects.bulk_update(written, ["text", "sha256", "token_count", "chunks_ready", "terms", "scopes",
                                              "updated_at"])
        term_frequencies_apply(tenant=tenant, delta=terms_delta)
        changed_keys = [(s.namespace, s.external_id) for s in to_update]
        invalidated = trails_invalidate_schedule(tenant=tenant, sections=changed_keys, mode=invalidation)
        report_trails_invalidated(sender=sections_upsert, tenant=tenant, count=invalidated)
        section_chunks_schedule(tenant=tenant, sections=changed, mode=chunks)
    return UpsertResult(
        created=len(to_create), updated=len(written),
        unchanged=len(incoming) - len(to_create) - len(written), invalidated_trails=invalidated,
    )


def _write_targets(caller: Caller, ids: Sequence[str], rows: Sequence[Section]
                   ) -> tuple[dict[str, Section], dict[str, str]]:
    """What an upsert of ``ids`` writes (docs/scopes.md, "Id namespaces"), from ``section_rows``'
    locked rows: the section each id overwrites, and for the others the namespace its new
    section goes to. A tenant-wide caller overwrites or creates in the shared namespace. A
    limited one overwrites what the id means for it (``sections_resolve``) when that is its own
    namespace's or lies entirely within its prefixes; else it creates — in the shared namespace
    when no section holds the id there, in its own otherwise. Nothing here is answered."""
    resolved = sections_resolve(caller=caller, rows=rows)
    if not caller.scope_limited:
        return resolved, dict.fromkeys(ids, SHARED_NAMESPACE)
    taken = {row.external_id for row in rows if row.namespace == SHARED_NAMESPACE}
    overwrite = {sid: row for sid, row in resolved.items()
                 if row.namespace == caller.namespace or entries_within(row.scopes, caller.scope_prefixes)}
    new = {sid: caller.namespace if sid in taken else SHARED_NAMESPACE for sid in ids if sid not in overwrite}
    return overwrite, new


def section_delete(*, caller: Caller, section_id: str, namespace: str | None = None) -> int:
    """Delete the section ``section_id`` means for the caller (``sections_resolved``; a
    tenant-wide caller may name a ``namespace``); trails citing it see it as changed. Returns
    invalidated trails. None: NotFound, as for an id that does not exist; a shared one the
    caller sees but that is not entirely within its scope prefixes: ScopeForbidden. Checked on
    the row locked for the delete; audited in the same transaction."""
    require_permission(caller, KeyPermission.SECTIONS_WRITE)
    tenant = caller.tenant
    namespace = namespace_asked(caller, namespace)
    with transaction.atomic():
        section = sections_resolved(caller=caller, section_ids=[section_id], namespace=namespace,
                                    lock="update").get(section_id)
        if section is None:
            raise NotFound("section not found")
        if section.namespace != caller.namespace and not entries_within(section.scopes, caller.scope_prefixes):
            raise ScopeForbidden("this API key may not delete this section (it belongs to other scopes too)",
                                 fields={"section_id": [f"not writable by this API key: {section_id}"]})
        delta = Counter({SECTION_COUNT_TERM: 1, **dict.fromkeys(section.terms, 1)})
        key = (section.namespace, section.external_id)
        section.delete()
        term_frequencies_apply(tenant=tenant, delta=Counter({t: -n for t, n in delta.items()}))
        invalidated = trails_invalidate_for_sections(tenant=tenant, sections=[key])
        report_trails_invalidated(sender=section_delete, tenant=tenant, count=invalidated)
        details: dict[str, Any] = {"trails_invalidated": invalidated}
        if key[0]:
            details["namespace"] = key[0]
        audit_record(tenant=tenant, actor=caller.user, actor_label=caller.actor_label,
                     action=AuditAction.SECTION_DELETE, target=section_id, details=details)
        return invalidated


def term_frequencies_apply(*, tenant: Tenant, delta: Counter[str]) -> None:
    """Add ``delta`` to the tenant's document frequencies (one statement; terms in sorted
    order, so concurrent upserts lock shared rows in the same order and never deadlock)."""
    rows = sorted((term, n) for term, n in delta.items() if n)
    if not rows:
        return
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO cachecore_termfrequency (tenant_id, term, sections) "
            "SELECT %s, v.term, v.n FROM unnest(%s::text[], %s::int[]) AS v(term, n) "
            "ON CONFLICT (tenant_id, term) "
            "DO UPDATE SET sections = cachecore_termfrequency.sections + EXCLUDED.sections",
            [tenant.pk, [t for t, _ in rows], [n for _, n in rows]],
        )


# A section's key in its tenant, as citations hold it: (namespace, external id).
SectionKey = tuple[str, str]


def trails_invalidate_for_sections(*, tenant: Tenant, sections: Sequence[SectionKey]) -> int:
    """Through the reverse index: trails citing any of ``sections`` ((namespace, id) pairs) are
    affected; those none of whose cited sections is unchanged become stale at once. Returns
    affected trails. Read-time validation stays the guarantee; this keeps statuses honest for
    the console."""
    if not sections:
        return 0
    with connection.cursor() as cur:
        cur.execute(
            """
            WITH affected AS (
                SELECT DISTINCT c.trail_id FROM cachecore_citation c
                JOIN cachecore_trail t ON t.tenant_id = c.tenant_id AND t.id = c.trail_id
                JOIN unnest(%(ids)s::text[], %(namespaces)s::text[]) AS k(id, ns)
                  ON c.section_id = k.id AND c.section_namespace = k.ns
                WHERE c.tenant_id = %(tenant)s AND t.tenant_id = %(tenant)s AND c.section_id = ANY(%(ids)s)
                  AND t.status IN ('active', 'pending')
            ), dead AS (  -- no cited section valid (cachecore.engine.outcome.section_state)
                SELECT a.trail_id FROM affected a
                WHERE NOT EXISTS (
                    SELECT 1 FROM cachecore_citation c2
                    JOIN cachecore_section s ON s.tenant_id = c2.tenant_id AND s.external_id = c2.section_id
                      AND s.namespace = c2.section_namespace
                    WHERE c2.tenant_id = %(tenant)s AND c2.trail_id = a.trail_id AND s.sha256 = c2.recorded_hash
                )
            ), marked AS (
                UPDATE cachecore_trail SET status = 'stale', status_changed_at = now()
                WHERE tenant_id = %(tenant)s AND id IN (SELECT trail_id FROM dead) RETURNING id
            )
            SELECT (SELECT count(*) FROM affected), (SELECT count(*) FROM marked)
            """,
            {"tenant": tenant.pk, "ids": [sid for _, sid in sections], "namespaces": [ns for ns, _ in sections]},
        )
        affected, _marked = cur.fetchone()
    return int(affected)


def trails_invalidate_schedule(*, tenant: Tenant, sections: Sequence[SectionKey], mode: str = "auto") -> int:
    """Invalidate now for a few changed sections ((namespace, id) pairs); for many, count the
    citing trails now and mark them in a background job (written in this transaction). Returns
    affected trails."""
    limit = {"now": math.inf, "job": 0}.get(mode, settings.TRAILCACHE_SYNC_INVALIDATION_MAX_SECTIONS)
    if len(sections) <= limit:
        return trails_invalidate_for_sections(tenant=tenant, sections=sections)
    cites = Q()
    for namespace in sorted({ns for ns, _ in sections}):
        cites |= Q(citations__section_namespace=namespace,
                   citations__section_id__in=[sid for ns, sid in sections if ns == namespace])
    affected = (Trail.objects.filter(tenant=tenant, status__in=[TrailStatus.ACTIVE, TrailStatus.PENDING])
                .filter(cites).distinct().count())
    job_create(tenant=tenant, kind=JobKind.TRAILS_INVALIDATE,
               params={"sections": [[ns, sid] for ns, sid in sections]}, progress_total=len(sections))
    return affected


def trails_invalidate_job_run(job: Job) -> dict[str, int]:
    """Job body: the fan-out for a large upsert (idempotent: it reads current hashes). A job
    queued before namespaces names shared ids only (``section_ids``)."""
    keys = [(ns, sid) for ns, sid in job.params.get("sections", [])]
    keys += [(SHARED_NAMESPACE, sid) for sid in job.params.get("section_ids", [])]
    affected = trails_invalidate_for_sections(tenant=job.tenant, sections=keys)
    return {"affected_trails": affected}


def section_chunks_schedule(*, tenant: Tenant, sections: Sequence[Section], mode: str = "auto") -> None:
    """Chunk embeddings for coverage. ``auto``: embedded in the call up to the per-request cap
    (``TRAILCACHE_SYNC_CHUNK_LIMIT`` chunks), the sections in the order given until the next one
    would pass it; the rest in a background job. A recall that needs a section whose chunks are
    still pending answers a hint with ``reason: "coverage_pending"``, never a miss for it.
    ``now``: all in the call; ``job``: all in the job; ``later``: left to the caller."""
    with_text = [s for s in sections if s.text]
    if not with_text or mode == "later":
        return
    cap = {"now": math.inf, "job": 0}.get(mode, settings.TRAILCACHE_SYNC_CHUNK_LIMIT)
    now: list[Section] = []
    needed = 0
    for section in with_text:
        chunks = len(split_chunks(section.text))
        if needed + chunks > cap:
            break
        needed += chunks
        now.append(section)
    if now:
        section_chunks_compute(section_pks=[s.pk for s in now])
    rest = with_text[len(now):]
    if rest:
        job_create(tenant=tenant, kind=JobKind.SECTION_CHUNKS, params={"section_pks": [s.pk for s in rest]},
                   progress_total=len(rest))


# Sections embedded per step of a chunks job (one progress update per step).
_CHUNK_JOB_BATCH = 50


def section_chunks_job_run(job: Job) -> dict[str, int]:
    """Job body: embed the chunks of a large upsert in steps, with progress."""
    pks = list(job.params.get("section_pks", []))
    written = 0
    for start in range(0, len(pks), _CHUNK_JOB_BATCH):
        written += section_chunks_compute(section_pks=pks[start:start + _CHUNK_JOB_BATCH])
        job_progress(job=job, done=min(start + _CHUNK_JOB_BATCH, len(pks)), total=len(pks))
    return {"chunks": written}


def section_chunks_compute(*, section_pks: Sequence[int]) -> int:
    """(Re)compute chunk and sentence embeddings of the given sections from their current text.
    Idempotent; sections gone or without text are skipped. Returns chunks written."""
    sections = list(Section.objects.filter(pk__in=section_pks).only("pk", "tenant_id", "text", "sha256"))
    pending: list[tuple[Section, list[str]]] = [
        (s, split_chunks(s.text)) for s in sections if s.text
    ]
    texts = [chunk for _, chunks in pending for chunk in chunks]
    embedder = get_embedder()
    vectors = embedder.embed(texts) if texts else []
    rows: list[SectionChunk] = []
    i = 0
    for section, chunks in pending:
        for ordinal, chunk in enumerate(chunks):
            rows.append(SectionChunk(section=section, tenant_id=section.tenant_id, ordinal=ordinal,
                                     sha256=section.sha256, text=chunk,
                                     embedding=vectors[i], embedding_model=embedder.version))
            i += 1
    sentences = _sentence_rows([s for s, _ in pending])
    with transaction.atomic():
        # Only sections whose text did not change meanwhile get these chunks.
        fresh = _fresh(pending=[s for s, _ in pending])
        SectionChunk.objects.filter(section_id__in=section_pks).delete()
        SectionChunk.objects.bulk_create([r for r in rows if r.section_id in fresh], batch_size=500)
        SectionSentence.objects.filter(section_id__in=section_pks).delete()
        SectionSentence.objects.bulk_create([r for r in sentences if r.section_id in fresh], batch_size=1000)
        Section.objects.filter(pk__in=fresh).update(chunks_ready=True)
    return sum(1 for r in rows if r.section_id in fresh)


def section_sentences_compute(*, section_pks: Sequence[int]) -> int:
    """(Re)compute the sentence embeddings alone of the given sections from their current text
    (sections whose chunks were computed before sentences were, or came from elsewhere).
    Idempotent; sections gone or without text are skipped. Returns sentences written."""
    sections = [s for s in Section.objects.filter(pk__in=section_pks).only("pk", "text", "sha256") if s.text]
    rows = _sentence_rows(sections)
    with transaction.atomic():
        fresh = _fresh(pending=sections)
        SectionSentence.objects.filter(section_id__in=section_pks).delete()
        kept = [r for r in rows if r.section_id in fresh]
        SectionSentence.objects.bulk_create(kept, batch_size=1000)
    return len(kept)


def _sentence_rows(sections: Sequence[Section]) -> list[SectionSentence]:
    """Each section's sentences (``split_sentences``) embedded, as unsaved rows."""
    split = [(s, split_sentences(s.text or "")) for s in sections]
    texts = [sentence for _, sentences in split for sentence in sentences]
    embedder = get_embedder()
    vectors = iter(embedder.embed(texts) if texts else [])
    return [SectionSentence(section=s, ordinal=ordinal, sha256=s.sha256, embedding=next(vectors),
                            embedding_model=embedder.version)
            for s, sentences in split for ordinal in range(len(sentences))]


def _fresh(*, pending: Sequence[Section]) -> set[int]:
    """Of sections read before embedding, those whose hash is still the one read (their rows
    are locked until the caller's transaction ends)."""
    current = dict(Section.objects.select_for_update().filter(pk__in=[s.pk for s in pending])
                   .values_list("pk", "sha256"))
    return {s.pk for s in pending if current.get(s.pk) == s.sha256}


register(JobKind.SECTION_CHUNKS, section_chunks_job_run)
register(JobKind.TRAILS_INVALIDATE, trails_invalidate_job_run)
