"""The engine's tables: sections (the caller's content, by hash), trails, citations and the
recall log."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import BooleanField, Q, Value
from django.db.models.expressions import RawSQL
from pgvector.django import HnswIndex, VectorField

from cachecore.embedding import DIMENSIONS, SHIPPED_MODEL_VERSION
from cachecore.engine import outcome as engine_outcome
from tenants.models import Tenant
from tenants.scopes import entries_visible_sql

if TYPE_CHECKING:
    from tenants.caller import Caller


# ---- restricted querysets: every read of a caller goes through ``visible_to(caller)`` -----------

class ScopedQuerySet(models.QuerySet):
    """Rows of the caller's tenant, within its scope prefixes (``tenants.scopes``, the one rule)
    when the caller is limited to some. ``scope_field`` is the row's scope (or the path to it)."""

    scope_field = "scope"

    def visible_to(self, caller: Caller) -> ScopedQuerySet:
        rows = self.filter(tenant=caller.tenant)
        return rows.filter(caller.scope_q(field=self.scope_field)) if caller.scope_limited else rows


class CitationQuerySet(ScopedQuerySet):
    scope_field = "trail__scope"


class SectionQuerySet(models.QuerySet):
    def visible_to(self, caller: Caller) -> SectionQuerySet:
        """A section belongs to scopes (``Section.scopes``): a caller limited to scope prefixes
        sees those with an entry overlapping one of its prefixes, or every scope
        (``tenants.scopes.entries_visible``); others answer as if they did not exist. Citing a
        section never makes it visible."""
        rows = self.filter(tenant=caller.tenant)
        if not caller.scope_limited:
            return rows
        visible = RawSQL(entries_visible_sql('"cachecore_section"."scopes"', "%s::text[]"),
                         [list(caller.scope_prefixes)], output_field=BooleanField())
        return rows.filter(visible)


class JobQuerySet(models.QuerySet):
    def visible_to(self, caller: Caller) -> JobQuerySet:
        """A job spans the whole tenant (exports, erasures, fan-outs): none for a scope-limited caller."""
        rows = self.filter(tenant=caller.tenant)
        return rows.none() if caller.scope_limited else rows


class Section(models.Model):
    """The caller's unit of content, keyed by its own id within a tenant's id namespace."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sections")
    external_id = models.CharField(max_length=512)
    # The id namespace (docs/scopes.md, "Id namespaces"): "" the tenant's shared one (every
    # section of a tenant-wide caller); a limited key's own (``tenants.scopes.namespace_of``) for
    # an id it upserted that exists in "" outside its prefixes.
    namespace = models.TextField(blank=True, default="", db_default="")
    # Null when the caller keeps only the hash here (its trails recall as hints).
    text = models.TextField(null=True, blank=True)  # noqa: DJ001 - null means "not stored", unlike ""
    sha256 = models.CharField(max_length=64)
    token_count = models.PositiveIntegerField(default=0)
    chunks_ready = models.BooleanField(default=False)
    # Distinct content terms of the text (engine.evidence.section_terms): recall asks which of
    # the query's terms a cited section holds; document frequencies count them.
    terms = ArrayField(models.TextField(), default=list, blank=True)
    # The scope prefixes that may see it (``tenants.scopes``: ``["*"]`` every scope; empty: only
    # tenant-wide callers, in every scope). Checked when read, cited, written and served.
    # The database default too, so raw inserts (bulk loaders, COPY) get tenant-wide-only sections.
    scopes = ArrayField(models.CharField(max_length=200), default=list, db_default=Value("{}"), blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SectionQuerySet.as_manager()

    class Meta:
        ordering = ["external_id"]
        constraints = [
            # (tenant, external_id, namespace): lookups by (tenant, id) alone use it too.
            models.UniqueConstraint(fields=["tenant", "external_id", "namespace"],
                                    name="section_unique_id_in_namespace"),
            models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="section_sha256_hex"),
        ]
        indexes = [
            GinIndex(name="section_text_trgm", fields=["text"], opclasses=["gin_trgm_ops"]),
            # Whether a tenant has sections still waiting for their chunks (recall's covering read).
            models.Index(fields=["tenant"], name="section_chunks_pending",
                         condition=Q(chunks_ready=False) & Q(text__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} [{self.namespace}]" if self.namespace else self.external_id


class TermFrequency(models.Model):
    """How many of a tenant's sections hold a term (document frequency, for IDF). The row with
    the empty term counts the tenant's sections. Kept in step by the sections service."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    term = models.TextField(blank=True)
    sections = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "term"], name="termfrequency_unique_term"),
        ]

    def __str__(self) -> str:
        return f"{self.term or '(sections)'}: {self.sections}"


class SectionChunk(models.Model):
    """A sentence or short passage of a section with its embedding, for coverage."""

    section = models.ForeignKey(Section, on_delete=models.CASCADE, related_name="chunks")
    # The section's tenant, kept on the chunk so that a search over one tenant's chunks filters
    # inside the index scan (selectors/rivals.py).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    ordinal = models.PositiveIntegerField()
    # The section hash these chunks were computed from: stale chunks are never used.
    sha256 = models.CharField(max_length=64)
    text = models.TextField()
    embedding = VectorField(dimensions=DIMENSIONS)
    # The model that computed ``embedding`` (recall compares only vectors of the current one).
    embedding_model = models.CharField(max_length=100, default=SHIPPED_MODEL_VERSION)

    class Meta:
        ordering = ["section", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["section", "ordinal"], name="chunk_unique_ordinal"),
        ]
        indexes = [
            # A tenant's chunks (the exact rival search of a small tenant, selectors/rivals.py).
            models.Index(fields=["tenant", "embedding_model"], name="chunk_tenant_model"),
            # The rival search of a large tenant, filtered by tenant inside the scan.
            HnswIndex(name="chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
        ]

    def __str__(self) -> str:
        return f"{self.section_id}:{self.ordinal}"


class SectionSentence(models.Model):
    """One sentence of a section with its embedding: the sentence-level evidence of which
    section answers a query (``engine/evidence.py``, ``sentence_margin``). Computed with the
    section's chunks (``services.sections.section_chunks_compute``), read by section only: the
    sentences of a recall's candidates' cited sections and of the sections covering it best."""

    section = models.ForeignKey(Section, on_delete=models.CASCADE, related_name="sentences")
    ordinal = models.PositiveIntegerField()
    # The section hash these sentences were split from: stale sentences are never used.
    sha256 = models.CharField(max_length=64)
    embedding = VectorField(dimensions=DIMENSIONS)
    # The model that computed ``embedding`` (recall compares only vectors of the current one).
    embedding_model = models.CharField(max_length=100)

    class Meta:
        ordering = ["section", "ordinal"]
        constraints = [
            # Also the index recall reads a section's sentences by.
            models.UniqueConstraint(fields=["section", "ordinal"], name="sentence_unique_ordinal"),
        ]

    def __str__(self) -> str:
        return f"{self.section_id}:{self.ordinal}"


class TrailStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    PENDING = "pending", "Pending"
    STALE = "stale", "Stale"
    QUARANTINED = "quarantined", "Quarantined"


class SignalSource(models.TextChoices):
    VERIFIER = "verifier", "Verifier"
    USER = "user", "User"
    CALLER = "caller", "Caller"


class Trail(models.Model):
    """A query and the path that answered it: steps and cited sections with their hashes.
    Never an answer.

    Hash-partitioned by tenant in the database (16 partitions, migration 0011), like its
    citations: the primary key there is (id, tenant_id), every unique key holds the tenant, and
    a query that names the tenant touches one partition (raw SQL on trails says
    ``tenant_id = %s``). Django keeps ``id`` as the pk."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="trails")
    scope = models.CharField(max_length=200)
    # Emptied by retention after the tenant's query_retention_days; the embedding stays.
    query = models.TextField()
    query_normalised = models.TextField()
    query_redacted_at = models.DateTimeField(null=True, blank=True)
    embedding = VectorField(dimensions=DIMENSIONS)
    # The model that computed ``embedding``: recall searches only trails of the current model;
    # the others are re-embedded in the background (services/reembed.py).
    embedding_model = models.CharField(max_length=100, default=SHIPPED_MODEL_VERSION)
    steps = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=TrailStatus.choices, db_index=False)
    signal_source = models.CharField(max_length=16, choices=SignalSource.choices, blank=True)
    signal_accepted = models.BooleanField(null=True)
    verdict = models.JSONField(null=True, blank=True)
    subject = models.CharField(max_length=200, blank=True)
    hits = models.PositiveIntegerField(default=0)
    positive_feedback = models.PositiveIntegerField(default=0)
    negative_feedback = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_hit_at = models.DateTimeField(null=True, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # Prefetch only above this confidence: set when served text went uncited, lowered by later
    # citations (engine/boundary.py). Null: no boundary.
    prefetch_boundary = models.FloatField(null=True, blank=True)
    # Some recall's offer of this trail was cited and is kept as a positive exemplar
    # (engine/boundary.py): recall reads the trail's exemplars for a query only then, or when it
    # has a boundary.
    has_positives = models.BooleanField(default=False, db_default=False)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=TrailStatus.values), name="trail_status_valid"),
        ]
        indexes = [
            # Exact nearest-neighbour search in small scopes, and scope sizes.
            models.Index(fields=["tenant", "scope", "status"], name="trail_tenant_scope_status"),
            models.Index(fields=["tenant", "-created_at"], name="trail_tenant_created"),
            # No index on hits or last_hit_at: recall bumps both on every hit, and an update that
            # touches no indexed column stays a HOT update (no HNSW/trigram re-insertion).
            models.Index(fields=["expires_at"], name="trail_expires"),
            models.Index(fields=["tenant", "subject"], name="trail_tenant_subject",
                         condition=~Q(subject="")),
            HnswIndex(name="trail_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
            GinIndex(name="trail_query_trgm", fields=["query"], opclasses=["gin_trgm_ops"]),
        ]

    def __str__(self) -> str:
        return f"{self.scope}: {self.query[:60]}"


class Citation(models.Model):
    """A section a trail cited, with the hash it had when recorded. Keyed by the section's
    namespace and external id (the section the id resolved to when recorded), not a foreign key:
    a deleted section must still count as changed."""

    # The database's key is (tenant_id, trail_id) → the trail's (tenant_id, id), ON DELETE
    # CASCADE (migration 0011): partitioned tables are referenced through their whole key.
    trail = models.ForeignKey(Trail, on_delete=models.CASCADE, related_name="citations", db_constraint=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    section_id = models.CharField(max_length=512)
    # The cited section's ``Section.namespace`` ("" the shared one).
    section_namespace = models.TextField(blank=True, default="", db_default="")
    position = models.PositiveSmallIntegerField()
    recorded_hash = models.CharField(max_length=64)

    objects = CitationQuerySet.as_manager()

    class Meta:
        ordering = ["trail", "position"]
        constraints = [
            # The tenant is in every unique key: the table is partitioned by tenant.
            models.UniqueConstraint(fields=["trail", "section_id", "tenant"], name="citation_unique_section"),
        ]
        indexes = [
            # Reverse index: which trails cite a section (invalidation, console, the covering read).
            models.Index(fields=["tenant", "section_id", "section_namespace"], name="citation_by_section"),
        ]

    def __str__(self) -> str:
        return f"{self.trail_id} cites {self.section_id}"


def choices_of(name: str, enum: type[StrEnum], labels: Mapping[str, str]) -> type[models.TextChoices]:
    """Model choices derived from an engine enum: its members, names and values, one label each
    (keyed by member name). The engine's vocabulary is the one definition; a member without a
    label is an error at import, a new member a migration (``makemigrations --check``)."""
    if set(labels) != set(enum.__members__):
        raise TypeError(f"labels of {enum.__name__} must name exactly {sorted(enum.__members__)}, got {sorted(labels)}")
    return models.TextChoices(name, [(member, (enum[member].value, labels[member])) for member in enum.__members__],
                              module=__name__)


# What a recall answered (cachecore.engine.outcome.Outcome).
RecallOutcome = choices_of("RecallOutcome", engine_outcome.Outcome,
                           {"PREFETCH": "Prefetch", "HINT": "Hint", "MISS": "Miss"})
# Why a miss was logged (cachecore.engine.outcome.MissReason).
MissReason = choices_of("MissReason", engine_outcome.MissReason,
                        {"NO_CANDIDATE": "No similar trail", "STALE": "Every cited section changed"})


# The exemplar columns of a recall log entry that keeps none (``RecallEvent.objects...update(**NO_EXEMPLAR)``):
# a negative cleared by citations, an exemplar whose query is gone when the model changes.
NO_EXEMPLAR = {"exemplar_for": None, "exemplar_cited": None, "exemplar_embedding": None, "exemplar_bar": None,
               "exemplar_embedding_model": "", "chosen_for": None, "chosen_bar": None}


class RecallEvent(models.Model):
    """One recall, logged for stats and feedback."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="recall_events")
    scope = models.CharField(max_length=200)
    # Emptied after the tenant's query_retention_days.
    query = models.TextField(blank=True)
    subject = models.CharField(max_length=200, blank=True)
    # Both trail keys are (tenant_id, …) → the trail's (tenant_id, id) in the database, ON DELETE
    # SET NULL of the trail column only (migration 0011).
    trail = models.ForeignKey(Trail, null=True, blank=True, on_delete=models.SET_NULL, related_name="recalls",
                              db_constraint=False)
    outcome = models.CharField(max_length=16, choices=RecallOutcome.choices)
    miss_reason = models.CharField(max_length=16, choices=MissReason.choices, blank=True)
    # Shadow mode: the answer was a miss; this is what recall would have answered (prefetch,
    # hint or miss), with the would-be trail first in ``trail_ids`` and its sections in
    # ``offered_ids``. Empty for a recall that served.
    shadow_outcome = models.CharField(max_length=16, blank=True)
    # The answer's reason (engine.decide.Reason) and the calibrated confidence of its trail.
    reason = models.CharField(max_length=32, blank=True)
    confidence = models.FloatField(null=True)
    similarity = models.FloatField(null=True)
    coverage = models.FloatField(null=True)
    escalated = models.BooleanField(default=False)
    # The query asked the answer's trail's question again: the one it was recorded for (verbatim
    # or restated) or one an agent cited it for before. The trail's own evidence decided the
    # answer, not the prefetch cut, so its label says nothing about the cut.
    asked_again = models.BooleanField(default=False, db_default=False)
    latency_ms = models.FloatField()
    served_ids = ArrayField(models.CharField(max_length=512), default=list, blank=True)
    # Every section id the answer named (served as text or hinted).
    offered_ids = ArrayField(models.CharField(max_length=512), default=list, blank=True)
    # Every trail whose sections were served or hinted (more than one when trails were merged).
    trail_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    # The calibrated confidence of each trail in ``trail_ids``, in the same order (empty on rows
    # logged before it was kept): a record citing a trail served beside the best one learns at
    # that trail's own confidence.
    trail_confidences = ArrayField(models.FloatField(), default=list, db_default=Value("{}"), blank=True)
    # The most confident candidates the answer did not name (``PASSED_OVER``), best first, with
    # their confidences: a record that cites one of them instead of what was offered teaches it a
    # positive for the question asked again (services/trails.py). Empty on rows logged before.
    passed_trail_ids = ArrayField(models.UUIDField(), default=list, db_default=Value("{}"), blank=True)
    passed_confidences = ArrayField(models.FloatField(), default=list, db_default=Value("{}"), blank=True)
    # Filled by the record that names this recall_id.
    recorded_trail = models.ForeignKey(Trail, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                       db_constraint=False)
    served_cited = models.PositiveIntegerField(null=True)
    # The label from behaviour: the following record cited some of the offered sections (True),
    # none of them (False); null while no record named this recall.
    offered_cited = models.BooleanField(null=True)
    feedback = models.BooleanField(null=True)
    feedback_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # An exemplar (engine/boundary.py): a labelled recall kept as evidence for the trail it
    # offered, with the recall query's embedding and the bar it sets for queries like it. A
    # negative (``exemplar_cited`` false): the following record left the trail's sections uncited
    # for others. A positive (true): it cited them. Null otherwise; gone with the log entry
    # (retention, erasure).
    exemplar_for = models.UUIDField(null=True, blank=True)
    exemplar_cited = models.BooleanField(null=True, blank=True)
    exemplar_embedding = VectorField(dimensions=DIMENSIONS, null=True, blank=True)
    # The model that computed ``exemplar_embedding``: an exemplar of another model counts for
    # nothing until the refresh embeds its query again (services/reembed.py).
    exemplar_embedding_model = models.CharField(max_length=100, blank=True, default="", db_default="")
    exemplar_bar = models.FloatField(null=True, blank=True)
    # A second exemplar of the same query, always a positive, beside a negative: the candidate
    # the answer passed over (``passed_trail_ids``) whose own sections the record cited instead of
    # the offered ones, with its bar. It shares ``exemplar_embedding``; null otherwise.
    chosen_for = models.UUIDField(null=True, blank=True)
    chosen_bar = models.FloatField(null=True, blank=True)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(outcome__in=RecallOutcome.values), name="recall_outcome_valid"),
        ]
        indexes = [
            models.Index(fields=["tenant", "-created_at"], name="recall_tenant_created"),
            models.Index(fields=["trail", "-created_at"], name="recall_trail_created"),
            models.Index(fields=["tenant", "subject"], name="recall_tenant_subject", condition=~Q(subject="")),
            # The few recalls that are exemplars, by trail (read only for trails that have some).
            models.Index(fields=["tenant", "exemplar_for"], name="recall_exemplars",
                         condition=Q(exemplar_for__isnull=False)),
            models.Index(fields=["tenant", "chosen_for"], name="recall_chosen",
                         condition=Q(chosen_for__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.outcome} {self.scope} {self.created_at:%Y-%m-%d %H:%M}"


# ---- background work ----------------------------------------------------------------------------

class JobKind(models.TextChoices):
    SECTION_CHUNKS = "section_chunks", "Section chunk embeddings"
    TRAILS_INVALIDATE = "trails_invalidate", "Trail invalidation fan-out"
    EXPORT = "export", "Compliance export"
    SUBJECT_ERASE = "subject_erase", "Subject erasure"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Job(models.Model):
    """Durable background work: written in the transaction of the request that accepted it,
    published to the broker after commit, re-published by a sweeper while it never started.
    Progress as numbers; a short error code when it failed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=32, choices=JobKind.choices)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    progress_done = models.PositiveBigIntegerField(default=0)
    progress_total = models.PositiveBigIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    actor_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when a publish reached the broker; null means the sweeper must publish it.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Touched with each progress step; a running job silent for long is handed back to the queue.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Exports: the file under MEDIA_ROOT, deleted after TRAILCACHE_EXPORT_RETENTION_DAYS.
    file_name = models.CharField(max_length=300, blank=True)
    file_expires_at = models.DateTimeField(null=True, blank=True)
    file_deleted_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=JobKind.values), name="job_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="job_status_valid"),
        ]
        indexes = [
            models.Index(fields=["tenant", "kind", "-created_at"], name="job_tenant_kind_created"),
            models.Index(fields=["status", "created_at"], name="job_unfinished",
                         condition=Q(status__in=["queued", "running"])),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} {self.pk}"

    @property
    def finished(self) -> bool:
        return self.status in (JobStatus.DONE, JobStatus.FAILED)

    @property
    def percent(self) -> int:
        if self.status == JobStatus.DONE:
            return 100
        if not self.progress_total:
            return 0
        return min(100, int(100 * self.progress_done / self.progress_total))


class DailyStat(models.Model):
    """Recall counts per tenant, scope and UTC day, rolled up from the recall log so charts
    over months never scan raw events (which retention deletes anyway)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="daily_stats")
    scope = models.CharField(max_length=200)
    day = models.DateField()
    recalls = models.PositiveIntegerField(default=0)
    prefetch = models.PositiveIntegerField(default=0)
    hint = models.PositiveIntegerField(default=0)
    miss = models.PositiveIntegerField(default=0)
    stale = models.PositiveIntegerField(default=0)
    escalated = models.PositiveIntegerField(default=0)
    feedback_positive = models.PositiveIntegerField(default=0)
    feedback_negative = models.PositiveIntegerField(default=0)
    served_cited = models.PositiveIntegerField(default=0)
    served_total = models.PositiveIntegerField(default=0)
    latency_ms_sum = models.FloatField(default=0.0)
    # Prefetches whose served sections the following record cited (savings, × the baseline).
    cited_prefetches = models.PositiveIntegerField(default=0)
    # Shadow mode: recalls, would-be prefetches, and of those the labelled and the uncited ones.
    shadow_recalls = models.PositiveIntegerField(default=0)
    shadow_prefetch = models.PositiveIntegerField(default=0)
    shadow_prefetch_labelled = models.PositiveIntegerField(default=0)
    shadow_prefetch_uncited = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["tenant", "day", "scope"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "scope", "day"], name="dailystat_unique_day"),
        ]
        indexes = [models.Index(fields=["tenant", "day"], name="dailystat_tenant_day")]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.scope} {self.day}"
