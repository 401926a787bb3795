"""Tenants, their settings, API keys, operator memberships and the audit log."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q

from tenants.scopes import scope_allowed, validate_scope_prefix


class AdmissionPolicy(models.TextChoices):
    SIGNAL = "signal", "Signal only"
    SIGNAL_VERIFIER = "signal+verifier", "Signal + built-in verifier"


# The coverage floor is calibrated on tests/data/paraphrase_pairs.jsonl (tests/cachecore/
# test_calibration.py). The first-stage cosine floor and the confidence bands come with the
# calibrated match scorer (cachecore/engine/match_scorer.json, chosen on the calibration split
# by research/match_calibration.py; tests/cachecore/test_match_scorer.py keeps them equal).
DEFAULT_SIMILARITY_THRESHOLD = 0.3
DEFAULT_COVERAGE_FLOOR = 0.32
DEFAULT_PREFETCH_CONFIDENCE = 0.87
DEFAULT_HINT_CONFIDENCE = 0.2


class MatchMode(models.TextChoices):
    """The engine's ``cachecore.engine.decide.MatchMode`` with labels (tenants import nothing of
    cachecore: tests/cachecore/test_vocabulary.py pins the two equal)."""

    EMBEDDING = "embedding", "Embedding similarity"
    HYBRID = "hybrid", "Embedding + trigram similarity"
    LEXICAL = "lexical", "Trigram similarity only"
    LEARNED = "learned", "Embedding, then a learned pair scorer"


class Tenant(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    trail_ttl_days = models.PositiveIntegerField(
        default=90, validators=[MinValueValidator(1), MaxValueValidator(3650)],
        help_text="Every trail expires this many days after it is recorded.",
    )
    pending_ttl_hours = models.PositiveIntegerField(
        default=24, validators=[MinValueValidator(1), MaxValueValidator(24 * 30)],
        help_text="A trail recorded without a positive signal waits this long for one, then is dropped.",
    )
    query_retention_days = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(3650)],
        help_text="Stored query text is redacted after this many days; the trail keeps matching by its embedding.",
    )
    recall_log_retention_days = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(3650)],
        help_text="Recall log entries are deleted after this many days (daily roll-ups are kept).",
    )
    similarity_threshold = models.FloatField(
        default=DEFAULT_SIMILARITY_THRESHOLD, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Minimum cosine similarity between the query and a trail's query for the trail to be "
        "considered at all (the confidence bands then decide prefetch, hint or miss).",
    )
    coverage_floor = models.FloatField(
        default=DEFAULT_COVERAGE_FLOOR, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="A would-be prefetch whose sections cover the query less than this becomes an escalated hint.",
    )
    prefetch_confidence = models.FloatField(
        default=DEFAULT_PREFETCH_CONFIDENCE, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="A match serves text (prefetch) only when the calibrated confidence that it is the same "
        "question reaches this; below, it is a hint.",
    )
    hint_confidence = models.FloatField(
        default=DEFAULT_HINT_CONFIDENCE, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Below this confidence a similar trail is not mentioned at all (miss).",
    )
    default_budget_tokens = models.PositiveIntegerField(
        default=2000, validators=[MinValueValidator(1), MaxValueValidator(100_000)],
        help_text="Token budget of a prefetch when the recall names none (tokens as the embedding tokenizer counts).",
    )
    admission_policy = models.CharField(
        max_length=32, choices=AdmissionPolicy.choices, default=AdmissionPolicy.SIGNAL,
        help_text="Signal only, or signal plus the built-in verifier on the answer text.",
    )
    match_mode = models.CharField(
        max_length=16, choices=MatchMode.choices, default=MatchMode.EMBEDDING,
        help_text="How a query is compared with trails' queries: embeddings, trigrams, both, or embeddings "
        "then a learned pair scorer (its own calibrated threshold).",
    )
    polarity_guard = models.BooleanField(
        default=True,
        help_text="Turn a match into a miss when the two questions differ in negation or direction "
        "(enable vs disable, can vs can't).",
    )
    merge_trails = models.BooleanField(
        default=True,
        help_text="When several trails match, serve the union of their valid sections, best first, within the budget.",
    )
    small_tenant_cut = models.BooleanField(
        default=True,
        help_text="With fewer sections than the match scorer was fitted on (378), raise the prefetch confidence a "
        "recall applies, the more the fewer sections: with few sections to compare against, a close but "
        "different question looks as sure as the same one. Applying a suggested operating point turns it off: "
        "the tenant's own labels place the cut from then on.",
    )
    target_false_prefetch = models.FloatField(
        default=0.05, validators=[MinValueValidator(0.001), MaxValueValidator(0.5)],
        help_text="The false-prefetch rate the suggested operating point keeps under (95 % confidence), "
        "from the agents' own citations.",
    )
    noise_allowance = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(0.3)],
        help_text="Label noise the operating point may allow on top of the target false-prefetch rate (the "
        "share of right sections your agents leave uncited for their own reasons). 0: none, the labels' "
        "uncited share counts as it is.",
    )
    prefetch_paused = models.BooleanField(
        default=False,
        help_text="Hints only, no prefetch: set when the operating point finds no prefetch confidence that "
        "meets the target with your agents' labels, cleared when one does (or by an admin).",
    )
    auto_calibrate = models.BooleanField(
        default=False,
        help_text="Apply the suggested prefetch confidence automatically (daily, audited each time).",
    )
    shadow_mode = models.BooleanField(
        default=False,
        help_text="Compute and log what recall would serve, but answer miss: see the estimated hit and "
        "false-prefetch rates before serving anything.",
    )
    shadow_scope_prefixes = ArrayField(
        models.CharField(max_length=200, validators=[validate_scope_prefix]), default=list, blank=True,
        help_text="Shadow only scopes starting with one of these (empty: every scope).",
    )
    resolver_url = models.URLField(
        blank=True, help_text="HTTPS endpoint answering current hashes of cited ids at recall (optional).",
    )
    resolver_secret = models.CharField(
        max_length=128, blank=True, help_text="HMAC-SHA256 key signing resolver requests.",
    )
    resolver_timeout_ms = models.PositiveIntegerField(
        default=200, validators=[MinValueValidator(10), MaxValueValidator(5000)],
        help_text="A resolver slower than this gives a hint, never a prefetch of unverified text.",
    )

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(similarity_threshold__gte=0) & Q(similarity_threshold__lte=1),
                name="tenant_similarity_threshold_range",
            ),
            models.CheckConstraint(
                condition=Q(coverage_floor__gte=0) & Q(coverage_floor__lte=1),
                name="tenant_coverage_floor_range",
            ),
            models.CheckConstraint(
                condition=Q(hint_confidence__gte=0) & Q(hint_confidence__lte=F("prefetch_confidence"))
                & Q(prefetch_confidence__lte=1),
                name="tenant_confidence_bands",
            ),
            models.CheckConstraint(
                condition=Q(default_budget_tokens__gte=1) & Q(default_budget_tokens__lte=100_000),
                name="tenant_default_budget_range",
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    def shadows(self, scope: str) -> bool:
        """Whether recalls in ``scope`` run in shadow mode."""
        return self.shadow_mode and scope_allowed(self.shadow_scope_prefixes, scope)

    def clean(self) -> None:
        super().clean()
        if self.hint_confidence is not None and self.prefetch_confidence is not None \
                and self.hint_confidence > self.prefetch_confidence:
            from django.core.exceptions import ValidationError

            raise ValidationError({"hint_confidence": "The hint band must start at or below the prefetch confidence."})
        if self.resolver_url:
            from django.core.exceptions import ValidationError

            from tenants.netpolicy import url_problem

            problem = url_problem(self.resolver_url)
            if problem:
                raise ValidationError({"resolver_url": problem})
            if not self.resolver_secret:
                raise ValidationError({"resolver_secret": "A resolver needs a secret to sign its requests."})


class KeyPermission(models.TextChoices):
    """What an API key may do, besides the scopes it is limited to (each API view names the one
    it needs; api.permissions)."""

    RECALL = "recall", "Recall"
    RECORD = "record", "Record, read and delete trails"
    FEEDBACK = "feedback", "Feedback on recalls"
    SECTIONS_READ = "sections:read", "Read sections"
    SECTIONS_WRITE = "sections:write", "Upsert and delete sections"
    EXPORT = "export", "Compliance exports"
    ERASE = "erase", "Erase a subject"


def all_key_permissions() -> list[str]:
    """Every permission (what keys had before permissions; migration 0010 gave them to existing keys)."""
    return list(KeyPermission.values)


# Least privilege: what a new key gets unless its permissions are chosen (an agent's own loop;
# no section writes, exports or erasure). Keys made before keep theirs.
DEFAULT_KEY_PERMISSIONS = (KeyPermission.RECALL, KeyPermission.RECORD, KeyPermission.FEEDBACK,
                           KeyPermission.SECTIONS_READ)


# What sections:write means on a scope-limited key (docs/scopes.md, "Id namespaces"): said by the
# console's key form and the CLI wherever such a key is made.
LIMITED_SECTIONS_WRITE_NOTE = (
    "sections:write on a key limited to scope prefixes writes sections of its own scopes only: an upsert of "
    "an id that exists outside them creates the key's own section of that id (in its namespace, answered as "
    "any new id), which its reads, citations and recalls then use; the tenant's section is left as it was."
)


def default_key_permissions() -> list[str]:
    """A new key's permissions unless chosen otherwise (``DEFAULT_KEY_PERMISSIONS``)."""
    return [str(p) for p in DEFAULT_KEY_PERMISSIONS]


class ApiKey(models.Model):
    """A tenant's API key: ``tc_<prefix>_<secret>``. Only the prefix and an HMAC digest of
    the whole key are stored; the key is shown once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    scope_prefixes = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    permissions = ArrayField(models.CharField(max_length=32, choices=KeyPermission.choices),
                             default=default_key_permissions, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(permissions__contained_by=KeyPermission.values),
                                   name="apikey_permissions_known"),
        ]

    def __str__(self) -> str:
        return f"{self.name} (tc_{self.prefix}_…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Role(models.TextChoices):
    SUPPORT = "support", "Support"
    ADMIN = "admin", "Admin"
    COMPLIANCE = "compliance", "Compliance"


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="membership_one_role_per_tenant")]

    def __str__(self) -> str:
        return f"{self.user} → {self.tenant} ({self.role})"


class AuditAction(models.TextChoices):
    TRAIL_PURGE = "trail.purge", "Trail purged"
    TRAIL_QUARANTINE = "trail.quarantine", "Trail quarantined"
    TRAIL_RELEASE = "trail.release", "Trail released"
    SETTINGS_CHANGE = "settings.change", "Settings changed"
    KEY_CREATE = "apikey.create", "API key created"
    KEY_REVOKE = "apikey.revoke", "API key revoked"
    KEY_PERMISSIONS = "apikey.permissions", "API key permissions changed"
    EXPORT = "export.create", "Export requested"
    SUBJECT_ERASE = "subject.erase", "Subject erased"
    CALIBRATION_APPLY = "calibration.apply", "Calibration applied"
    LOGIN = "login", "Operator logged in"
    LOGIN_LOCKED = "login.locked", "Login locked after failed attempts"
    TRAIL_DELETE = "trail.delete", "Trail deleted"
    SECTION_DELETE = "section.delete", "Section deleted"
    EXPORT_DOWNLOAD = "export.download", "Export downloaded"
    FEEDBACK_QUARANTINE = "feedback.quarantine", "Trail quarantined by feedback"


class AuditEntry(models.Model):
    """Who did what, when; written in the same transaction as the action."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="audit_entries")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # "operator:<email>" or "apikey:<prefix>": kept when the user or key is gone.
    actor_label = models.CharField(max_length=200)
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    target = models.CharField(max_length=300, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="audit_tenant_created")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.target}"
