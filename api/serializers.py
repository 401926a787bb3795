"""Request validation and response shapes of REST API v1 (the contract in docs/design.md)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from rest_framework import serializers

from api.fields import StrictBooleanField, StrictCharField, StrictIntegerField, WholeValueValidator
from api.inputs import string_problem
from cachecore.engine import limits
from cachecore.engine.decide import Reason
from cachecore.models import SignalSource, TrailStatus
from tenants.scopes import EVERY_SCOPE, SCOPE_CHARS, SCOPE_PATTERN

# Scope entries one section may carry.
MAX_SECTION_SCOPES = 50


def _scope_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(
        max_length=200,
        validators=[WholeValueValidator(SCOPE_PATTERN, "Scope must match [A-Za-z0-9._:/-]{1,200}.")],
        **kwargs,
    )


def _section_id_field() -> StrictCharField:
    return StrictCharField(max_length=limits.MAX_SECTION_ID_CHARS, min_length=1)


class SectionInSerializer(serializers.Serializer):
    """A section with its ``text``, or with only its ``hash`` (sha256 hex) when the caller
    does not mirror its corpus here."""

    id = _section_id_field()
    text = StrictCharField(required=False, allow_blank=True, max_length=limits.MAX_SECTION_TEXT_CHARS)
    hash = StrictCharField(
        required=False, validators=[WholeValueValidator(r"^[0-9a-fA-F]{64}$", "Must be a sha256 hex digest.")]
    )
    scopes = serializers.ListField(
        child=StrictCharField(max_length=200, validators=[WholeValueValidator(
            rf"^(?:\{EVERY_SCOPE}|{SCOPE_CHARS})$",
            "A section scope is a scope prefix ([A-Za-z0-9._:/-]{1,200}) or * (every scope).")]),
        required=False, max_length=MAX_SECTION_SCOPES,
        help_text="The scope prefixes that may see this section (the prefix rule of API keys); [\"*\"]: every "
        "scope. Omitted: a new section of a key without scope limits is for such keys only ([]), one of a "
        "scope-limited key belongs to that key's prefixes, an existing section keeps its scopes. A scope-limited "
        "key may give only prefixes within its own.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("text" in attrs) == ("hash" in attrs):
            raise serializers.ValidationError({"text": ["Give exactly one of text or hash."]})
        return attrs


class SectionsUpsertSerializer(serializers.Serializer):
    sections = serializers.ListField(
        child=SectionInSerializer(), allow_empty=False, max_length=limits.MAX_SECTIONS_PER_UPSERT
    )


class SectionsUpsertResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    invalidated_trails = serializers.IntegerField()


class SectionOutSerializer(serializers.Serializer):
    id = serializers.CharField(source="external_id")
    hash = serializers.CharField(source="sha256")
    text = serializers.CharField(allow_null=True)
    updated_at = serializers.DateTimeField()
    scopes = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="The scope prefixes that may see it ([\"*\"]: every scope; []: keys without scope limits "
        "only). Shown to keys without scope limits only.",
    )
    namespace = serializers.CharField(
        required=False,
        help_text="The section's id namespace: \"\" the tenant's shared one, else the scope prefixes (sorted, "
        "joined by \",\") of the scope-limited keys whose own section it is (docs/scopes.md). Shown to keys "
        "without scope limits only.",
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        if not self.context.get("show_scopes"):
            data.pop("scopes", None)
            data.pop("namespace", None)
        return data


# A section namespace as ``?namespace=`` names it: "" or scope prefixes joined by ",". ASCII only,
# at most MAX_NAMESPACE_CHARS: with a section id at its longest, the request line still fits the
# web server's limit (tests/api/test_schema_matches_the_server.py).
NAMESPACE_PATTERN = r"^[A-Za-z0-9._:/,-]*$"
MAX_NAMESPACE_CHARS = 600


class SectionQuerySerializer(serializers.Serializer):
    """``?namespace=`` on ``GET``/``DELETE /api/v1/sections/{id}``: the id namespace a key without
    scope limits addresses (absent: the shared one, ""); a scope-limited key may not name one."""

    namespace = StrictCharField(
        required=False, allow_blank=True, max_length=MAX_NAMESPACE_CHARS,
        validators=[WholeValueValidator(NAMESPACE_PATTERN, "A namespace is scope prefixes joined by ','.")],
    )


class StepSerializer(serializers.Serializer):
    tool = StrictCharField(max_length=200, min_length=1)
    args = serializers.JSONField(required=False, default=dict)
    returned = serializers.ListField(
        child=_section_id_field(), required=False, default=list, max_length=limits.MAX_RETURNED_PER_STEP
    )


class SignalSerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=SignalSource.choices)
    accepted = StrictBooleanField()


class TrailRecordSerializer(serializers.Serializer):
    scope = _scope_field()
    query = StrictCharField(max_length=limits.MAX_QUERY_CHARS, min_length=1)
    steps = serializers.ListField(child=StepSerializer(), required=False, default=list, max_length=limits.MAX_STEPS)
    cited = serializers.ListField(child=_section_id_field(), allow_empty=False, max_length=limits.MAX_CITED)
    signal = SignalSerializer(required=False, allow_null=True)
    subject = StrictCharField(required=False, allow_blank=True, max_length=limits.MAX_SUBJECT_CHARS, default="")
    answer = StrictCharField(required=False, allow_null=True, max_length=limits.MAX_ANSWER_CHARS)
    recall_id = serializers.UUIDField(required=False, allow_null=True)

    def validate_query(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Query must not be blank.")
        return value


class TrailRecordResultSerializer(serializers.Serializer):
    trail_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=TrailStatus.choices)


class CitationOutSerializer(serializers.Serializer):
    id = serializers.CharField()
    hash = serializers.CharField(
        allow_null=True, help_text="The hash recorded; null for a key with scope limits when the section is not "
        "visible to it now (as for an id that does not exist).",
    )
    namespace = serializers.CharField(
        required=False, help_text="The namespace of the section cited, when it is not the shared one; shown to "
        "keys without scope limits only (`GET /sections/{id}?namespace=` opens it).",
    )


class TrailOutSerializer(serializers.Serializer):
    trail_id = serializers.UUIDField()
    scope = serializers.CharField()
    query = serializers.CharField()
    steps = serializers.JSONField()
    cited = CitationOutSerializer(many=True)
    status = serializers.ChoiceField(choices=TrailStatus.choices)
    signal = serializers.JSONField()
    subject = serializers.CharField()
    verdict = serializers.JSONField(allow_null=True)
    hits = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    last_hit_at = serializers.DateTimeField(allow_null=True)


class RecallSerializer(serializers.Serializer):
    scope = _scope_field()
    query = StrictCharField(max_length=limits.MAX_QUERY_CHARS, min_length=1)
    budget_tokens = StrictIntegerField(
        required=False, allow_null=True, min_value=limits.MIN_BUDGET_TOKENS, max_value=limits.MAX_BUDGET_TOKENS
    )
    subject = StrictCharField(required=False, allow_blank=True, max_length=limits.MAX_SUBJECT_CHARS, default="")
    shadow = StrictBooleanField(
        required=False, default=False,
        help_text="In shadow mode, also answer what recall would have served (`shadow` in the answer).",
    )

    def validate_query(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Query must not be blank.")
        return value


_RECALL_KEYS = frozenset(RecallSerializer._declared_fields)


def _plain_string(value: Any, *, max_chars: int, min_chars: int = 1) -> bool:
    """A JSON string of ``min_chars``..``max_chars`` characters that the strict fields take as it is
    (what PostgreSQL can store: ``api.inputs.string_problem``)."""
    return type(value) is str and min_chars <= len(value) <= max_chars and string_problem(value) is None


def _plain_scope_and_query(data: dict[str, Any]) -> bool:
    """The body's ``scope`` and ``query`` as ``_scope_field`` and a non-blank query field take them."""
    scope, query = data.get("scope"), data.get("query")
    return (_plain_string(scope, max_chars=200) and bool(SCOPE_PATTERN.fullmatch(scope))
            and _plain_string(query, max_chars=limits.MAX_QUERY_CHARS) and bool(query.strip()))


def recall_input(data: Any) -> dict[str, Any] | None:
    """``RecallSerializer``'s validated data for a body that is plainly valid, without DRF's
    per-field work (a deep copy of the fields per request); None for anything else, which the
    serializer then validates and refuses with its own errors. It accepts a subset of what the
    serializer accepts and returns what the serializer would
    (``tests/api/test_recall_input.py`` pins the two equal on generated bodies)."""
    if type(data) is not dict or not data.keys() <= _RECALL_KEYS:
        return None
    if not _plain_scope_and_query(data):
        return None
    out: dict[str, Any] = {"scope": data["scope"], "query": data["query"]}
    if "budget_tokens" in data:
        budget = data["budget_tokens"]
        if budget is not None and (type(budget) is not int
                                   or not limits.MIN_BUDGET_TOKENS <= budget <= limits.MAX_BUDGET_TOKENS):
            return None
        out["budget_tokens"] = budget
    subject = data.get("subject", "")
    if not _plain_string(subject, max_chars=limits.MAX_SUBJECT_CHARS, min_chars=0):
        return None
    shadow = data.get("shadow", False)
    if type(shadow) is not bool:
        return None
    out["subject"], out["shadow"] = subject, shadow
    return out


_RECORD_KEYS = frozenset(TrailRecordSerializer._declared_fields)
_STEP_KEYS = frozenset(StepSerializer._declared_fields)
_SIGNAL_KEYS = frozenset(SignalSerializer._declared_fields)
_SIGNAL_SOURCES = frozenset(SignalSource.values)
# A UUID as clients send one (the hyphenated 36 characters); the serializer also reads other
# spellings, which step aside.
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def _section_ids(value: Any, *, max_items: int, allow_empty: bool = True) -> bool:
    return (type(value) is list and len(value) <= max_items and (allow_empty or bool(value))
            and all(_plain_string(i, max_chars=limits.MAX_SECTION_ID_CHARS) for i in value))


def _plain_step(step: Any) -> dict[str, Any] | None:
    if type(step) is not dict or not step.keys() <= _STEP_KEYS or not _plain_string(step.get("tool"), max_chars=200):
        return None
    args = step.get("args", {})
    returned = step.get("returned", [])
    if args is None or not _section_ids(returned, max_items=limits.MAX_RETURNED_PER_STEP):
        return None
    return {"tool": step["tool"], "args": args, "returned": returned}


def record_input(data: Any) -> dict[str, Any] | None:
    """``TrailRecordSerializer``'s validated data for a body that is plainly valid, without DRF's
    per-field work (a deep copy of the fields and of each step's per request); None for anything
    else, which the serializer then validates and refuses with its own errors. As ``recall_input``:
    it accepts a subset of what the serializer accepts and returns what the serializer would
    (``tests/api/test_record_input.py`` pins the two equal on generated bodies). Steps' ``args``
    are any JSON but null, as the serializer's JSONField reads them (the parser has already refused
    what PostgreSQL cannot store: ``api.inputs``)."""
    if type(data) is not dict or not data.keys() <= _RECORD_KEYS:
        return None
    if not _plain_scope_and_query(data):
        return None
    steps = data.get("steps", [])
    if type(steps) is not list or len(steps) > limits.MAX_STEPS:
        return None
    plain_steps = [_plain_step(step) for step in steps]
    if any(step is None for step in plain_steps):
        return None
    cited = data.get("cited")
    if not _section_ids(cited, max_items=limits.MAX_CITED, allow_empty=False):
        return None
    subject = data.get("subject", "")
    if not _plain_string(subject, max_chars=limits.MAX_SUBJECT_CHARS, min_chars=0):
        return None
    out: dict[str, Any] = {"scope": data["scope"], "query": data["query"], "steps": plain_steps, "cited": cited,
                           "subject": subject}
    if "signal" in data:
        signal = data["signal"]
        if signal is not None and (type(signal) is not dict or signal.keys() != _SIGNAL_KEYS
                                   or type(signal["source"]) is not str or signal["source"] not in _SIGNAL_SOURCES
                                   or type(signal["accepted"]) is not bool):
            return None
        out["signal"] = None if signal is None else {"source": signal["source"], "accepted": signal["accepted"]}
    if "answer" in data:
        answer = data["answer"]
        if answer is not None and not _plain_string(answer, max_chars=limits.MAX_ANSWER_CHARS):
            return None
        out["answer"] = answer
    if "recall_id" in data:
        recall_id = data["recall_id"]
        if recall_id is not None and (type(recall_id) is not str or not _UUID.search(recall_id)):
            return None
        out["recall_id"] = None if recall_id is None else uuid.UUID(recall_id)
    return out


class RecallSectionSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=["valid", "changed", "missing", "unverified"])
    text = serializers.CharField(required=False)


class RecallShadowSectionSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=["valid", "changed", "missing", "unverified"])


class RecallShadowSerializer(serializers.Serializer):
    """What recall would have answered in shadow mode: ids and states, never text."""

    outcome = serializers.ChoiceField(choices=["prefetch", "hint", "miss"])
    reason = serializers.CharField()
    confidence = serializers.FloatField()
    trail_id = serializers.UUIDField(allow_null=True)
    trails = serializers.ListField(child=serializers.UUIDField())
    sections = RecallShadowSectionSerializer(many=True, help_text="Ids and states, never text.")


class RecallResultSerializer(serializers.Serializer):
    """A recall as answered: ``RecallResult`` (services.recall) rendered from its ``answer``
    (the engine's decision), its id, and the shadow decision when there is one."""

    recall_id = serializers.UUIDField()
    outcome = serializers.ChoiceField(choices=["prefetch", "hint", "miss"], source="answer.outcome")
    reason = serializers.ChoiceField(
        choices=[r.value for r in Reason], source="answer.reason",
        help_text="Why: match (prefetch); low_confidence, ambiguous, polarity, changed, unverified, hash_only, "
        "low_coverage, not_cited_before, nearer_wording, prefetch_paused, coverage_pending (hint); no_candidate, "
        "no_match, stale, shadow (miss).",
    )
    confidence = serializers.FloatField(
        min_value=0, max_value=1, source="answer.confidence",
        help_text="Calibrated probability that the answer's trail asks the same thing as the query (0 when "
        "nothing was close).",
    )
    trail_id = serializers.UUIDField(allow_null=True, source="answer.trail_id")
    similarity = serializers.FloatField(allow_null=True, source="answer.similarity")
    coverage = serializers.FloatField(allow_null=True, source="answer.coverage")
    escalated = serializers.BooleanField(source="answer.escalated")
    sections = RecallSectionSerializer(many=True, source="answer.sections")
    omitted = serializers.ListField(child=serializers.CharField(), source="answer.omitted")
    steps = serializers.JSONField(source="answer.steps")
    hint = serializers.CharField(allow_null=True, source="answer.hint")
    trails = serializers.ListField(child=serializers.UUIDField(), source="answer.trails",
                                   help_text="Trails that contributed (merged).")
    shadow = RecallShadowSerializer(
        required=False, allow_null=True,
        help_text="Shadow mode only, when the request asked for it: what recall would have answered.",
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        """The recall hot path: the same body the declared fields give (``declared_representation``;
        a test pins the two equal), built directly from the dataclasses without DRF's per-field
        machinery. ``shadow`` is there only when there is a shadow decision."""
        answer = instance.answer
        data: dict[str, Any] = {
            "recall_id": str(instance.recall_id),
            "outcome": str(answer.outcome),
            "reason": str(answer.reason),
            "confidence": float(answer.confidence),
            "trail_id": _str_or_none(answer.trail_id),
            "similarity": _float_or_none(answer.similarity),
            "coverage": _float_or_none(answer.coverage),
            "escalated": bool(answer.escalated),
            "sections": [_section(x) for x in answer.sections],
            "omitted": [str(x) for x in answer.omitted],
            "steps": answer.steps,
            "hint": _str_or_none(answer.hint),
            "trails": [str(t) for t in answer.trails],
        }
        if instance.shadow is not None:
            data["shadow"] = RecallShadowSerializer(instance.shadow).data
        return data

    def declared_representation(self, instance: Any) -> dict[str, Any]:
        """The body as DRF renders the declared fields (what the schema says)."""
        data = super().to_representation(instance)
        if data.get("shadow") is None:
            data.pop("shadow", None)
        return data


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _section(section: dict[str, Any]) -> dict[str, Any]:
    out = {"id": str(section["id"]), "status": str(section["status"])}
    if "text" in section:
        out["text"] = _str_or_none(section["text"])
    return out


class FeedbackSerializer(serializers.Serializer):
    accepted = StrictBooleanField()


class FeedbackResultSerializer(serializers.Serializer):
    recall_id = serializers.UUIDField()
    accepted = serializers.BooleanField()


class SubjectEraseResultSerializer(serializers.Serializer):
    deleted = serializers.IntegerField()


# A scope, or empty (every scope): the stats filter as the schema states it.
SCOPE_OR_EMPTY_PATTERN = f"^(?:{SCOPE_CHARS})?$"


class StatsQuerySerializer(serializers.Serializer):
    """``GET /api/v1/stats?scope=``: a scope as a record or recall names it; empty or absent
    means every scope the key may see."""

    scope = _scope_field(required=False, allow_blank=True)


class StatsSerializer(serializers.Serializer):
    recalls = serializers.IntegerField()
    prefetch = serializers.IntegerField()
    hint = serializers.IntegerField()
    miss = serializers.IntegerField()
    hit_rate = serializers.FloatField()
    prefetch_rate = serializers.FloatField()
    stale_rate = serializers.FloatField()
    escalation_rate = serializers.FloatField()
    served_cited_rate = serializers.FloatField()
    feedback = serializers.DictField(child=serializers.IntegerField())
    trails = serializers.DictField(child=serializers.IntegerField())
    savings = serializers.DictField(help_text="Tool calls and tokens saved: cited_prefetches × the miss-path "
                                    "baseline (mean steps and cited tokens of records that followed a miss).")
    calibration = serializers.DictField(
        required=False, help_text="Labels from the agents' citations and the suggested prefetch confidence.")
    shadow = serializers.DictField(help_text="Shadow mode: recalls, would_prefetch, would_hint, estimated_hit_rate, "
                                   "estimated_prefetch_rate, prefetch_labelled, estimated_false_prefetch_rate.")
