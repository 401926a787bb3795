"""Request and response models of Trailcache's REST API v1, named after the OpenAPI schema's
components (``/api/v1/schema/``). Responses ignore fields they do not know (a newer server may
add some); the client's test compares these models with the live schema."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["prefetch", "hint", "miss"]
# Known reasons; typed as str on the model so a newer server's reason still parses.
Reason = Literal[
    "match", "low_confidence", "ambiguous", "polarity", "changed", "unverified", "hash_only", "low_coverage",
    "not_cited_before", "nearer_wording", "prefetch_paused", "coverage_pending",
    "no_candidate", "no_match", "stale", "shadow",
]
SectionStatus = Literal["valid", "changed", "missing", "unverified"]
TrailStatus = Literal["active", "pending", "stale", "quarantined"]
SignalSource = Literal["verifier", "user", "caller"]
JobStatus = Literal["queued", "running", "done", "failed"]


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    # Fields the client adds that the server never sends (left out of the schema comparison).
    client_fields: ClassVar[frozenset[str]] = frozenset()


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


# --- requests ---------------------------------------------------------------------------------
class SectionIn(_Request):
    """A section with its ``text`` (the server hashes it), or only its ``hash`` (sha256 hex)."""

    id: str = Field(min_length=1, max_length=512)
    text: str | None = None
    hash: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    # The scope prefixes that may see it (["*"]: every scope); omitted: the server's default.
    scopes: list[str] | None = None


class SectionsUpsert(_Request):
    sections: list[SectionIn]


class Step(_Request):
    tool: str = Field(min_length=1, max_length=200)
    args: Any = None
    returned: list[str] = Field(default_factory=list)


class Signal(_Request):
    source: SignalSource = "caller"
    accepted: bool = True


class TrailRecord(_Request):
    scope: str
    query: str
    steps: list[Step] = Field(default_factory=list)
    cited: list[str]
    signal: Signal | None = None
    subject: str | None = None
    answer: str | None = None
    recall_id: str | None = None


class Recall(_Request):
    scope: str
    query: str
    budget_tokens: int | None = None
    subject: str | None = None
    # Shadow mode (tenant setting): the answer is a miss; with shadow=True it says what it would have been.
    shadow: bool | None = None


class Feedback(_Request):
    accepted: bool


class ExportRequest(_Request):
    format: Literal["csv", "jsonl"]
    scope: str | None = None
    since: str | None = None
    until: str | None = None
    subject: str | None = None
    status: TrailStatus | None = None


# --- responses --------------------------------------------------------------------------------
class Error(_Response):
    """The one error shape: ``{"error": code, "detail": message, "fields": {field: [reasons]}}``."""

    error: str
    detail: str
    fields: dict[str, Any] = Field(default_factory=dict)


class SectionsUpsertResult(_Response):
    created: int
    updated: int
    unchanged: int
    invalidated_trails: int


class SectionOut(_Response):
    id: str
    hash: str
    text: str | None
    updated_at: datetime
    # Shown to keys without scope limits only.
    scopes: list[str] | None = None
    # The id namespace ("" the shared one; a scope-limited key's own: its prefixes joined by ",").
    # Shown to keys without scope limits only.
    namespace: str | None = None


class TrailRecordResult(_Response):
    trail_id: str
    status: TrailStatus


class CitationOut(_Response):
    id: str
    # None for a key with scope limits when the section is not visible to it now.
    hash: str | None
    # The cited section's namespace when it is not the shared one (keys without scope limits only).
    namespace: str | None = None


class TrailOut(_Response):
    trail_id: str
    scope: str
    query: str
    steps: Any
    cited: list[CitationOut]
    status: TrailStatus
    signal: Any
    subject: str
    verdict: Any | None
    hits: int
    created_at: datetime
    expires_at: datetime
    last_hit_at: datetime | None


class RecallSection(_Response):
    id: str
    status: str
    text: str | None = None


class RecallShadow(_Response):
    """Shadow mode: what recall would have answered (ids and states, never text)."""

    outcome: Outcome
    reason: str
    confidence: float
    trail_id: str | None
    trails: list[str]
    sections: list[dict[str, Any]]


class RecallResult(_Response):
    """A recall's answer. ``prefetch``: ``sections`` carry verified current text; ``hint``: ids
    to look at first (no text of doubtful match); ``miss``: search as usual.

    ``failed_open`` is the client's: true when the service could not be asked and this miss was
    made up so the agent carries on (``error`` says why; ``recall_id`` is empty)."""

    client_fields: ClassVar[frozenset[str]] = frozenset({"failed_open", "error"})

    recall_id: str
    outcome: Outcome
    reason: str
    confidence: float
    trail_id: str | None
    similarity: float | None
    coverage: float | None
    escalated: bool
    sections: list[RecallSection]
    omitted: list[str]
    steps: Any
    hint: str | None
    trails: list[str]
    shadow: RecallShadow | None = None
    failed_open: bool = False
    error: str | None = None

    @property
    def served(self) -> bool:
        """True on a prefetch: ``served_sections`` hold verified text."""
        return self.outcome == "prefetch"

    @property
    def served_sections(self) -> list[RecallSection]:
        """The sections whose current text came with the answer (in citation order)."""
        return [s for s in self.sections if s.text is not None and s.status == "valid"]

    @property
    def section_ids(self) -> list[str]:
        """Every section id the answer names (a hint's ids to look at first)."""
        return [s.id for s in self.sections]

    @classmethod
    def fail_open_miss(cls, error: str) -> RecallResult:
        return cls(recall_id="", outcome="miss", reason="no_candidate", confidence=0.0, trail_id=None,
                   similarity=None, coverage=None, escalated=False, sections=[], omitted=[], steps=[], hint=None,
                   trails=[], failed_open=True, error=error)


class FeedbackResult(_Response):
    recall_id: str
    accepted: bool


class SubjectEraseResult(_Response):
    deleted: int


class Stats(_Response):
    recalls: int
    prefetch: int
    hint: int
    miss: int
    hit_rate: float
    prefetch_rate: float
    stale_rate: float
    escalation_rate: float
    served_cited_rate: float
    feedback: dict[str, int]
    trails: dict[str, int]
    # Tool calls and tokens saved; labels and the suggested operating point; shadow-mode estimates.
    savings: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    shadow: dict[str, Any] | None = None


class ExportAccepted(_Response):
    export_id: str
    status: JobStatus


class Progress(_Response):
    done: int
    total: int | None


class ExportStatus(_Response):
    export_id: str
    status: JobStatus
    progress: Progress
    download_url: str | None
    rows: int | None
    expires_at: datetime | None
    error: str


# The schema's component name → the model (the test walks this against /api/v1/schema/).
SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    m.__name__: m for m in (
        SectionIn, SectionsUpsert, Step, Signal, TrailRecord, Recall, Feedback, ExportRequest, Error,
        SectionsUpsertResult, SectionOut, TrailRecordResult, CitationOut, TrailOut, RecallSection, RecallShadow,
        RecallResult,
        FeedbackResult, SubjectEraseResult, Stats, ExportAccepted, Progress, ExportStatus,
    )
}
