"""Request validation and response shapes of REST API v1 (the contract in DESIGN.md)."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

from api.fields import StrictBooleanField, StrictCharField, StrictIntegerField
from cachecore.engine import limits
from cachecore.engine.decide import Reason
from cachecore.models import SignalSource, TrailStatus


def _scope_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(
        max_length=200,
        validators=[RegexValidator(limits.SCOPE_PATTERN, "Scope must match [A-Za-z0-9._:/-]{1,200}.")],
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
        required=False, validators=[RegexValidator(r"^[0-9a-fA-F]{64}$", "Must be a sha256 hex digest.")]
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
    hash = serializers.CharField()


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


class RecallShadowSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=["prefetch", "hint", "miss"])
    reason = serializers.CharField()
    confidence = serializers.FloatField()
    trail_id = serializers.UUIDField(allow_null=True)
    trails = serializers.ListField(child=serializers.UUIDField())
    sections = serializers.ListField(child=serializers.DictField(), help_text="Ids and states, never text.")


class RecallSectionSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=["valid", "changed", "missing", "unverified"])
    text = serializers.CharField(required=False)


class RecallResultSerializer(serializers.Serializer):
    recall_id = serializers.UUIDField()
    outcome = serializers.ChoiceField(choices=["prefetch", "hint", "miss"])
    reason = serializers.ChoiceField(
        choices=[r.value for r in Reason] + ["shadow"],
        help_text="Why: match (prefetch); low_confidence, ambiguous, polarity, changed, unverified, hash_only, "
        "low_coverage, not_cited_before, prefetch_paused, coverage_pending (hint); no_candidate, no_match, stale, "
        "shadow (miss).",
    )
    confidence = serializers.FloatField(
        min_value=0, max_value=1,
        help_text="Calibrated probability that the answer's trail asks the same thing as the query (0 when "
        "nothing was close).",
    )
    trail_id = serializers.UUIDField(allow_null=True)
    similarity = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True)
    escalated = serializers.BooleanField()
    sections = RecallSectionSerializer(many=True)
    omitted = serializers.ListField(child=serializers.CharField())
    steps = serializers.JSONField()
    hint = serializers.CharField(allow_null=True)
    trails = serializers.ListField(child=serializers.UUIDField(), help_text="Trails that contributed (merged).")
    shadow = RecallShadowSerializer(
        required=False, allow_null=True,
        help_text="Shadow mode only, when the request asked for it: what recall would have answered.",
    )


class FeedbackSerializer(serializers.Serializer):
    accepted = StrictBooleanField()


class FeedbackResultSerializer(serializers.Serializer):
    recall_id = serializers.UUIDField()
    accepted = serializers.BooleanField()


class SubjectEraseResultSerializer(serializers.Serializer):
    deleted = serializers.IntegerField()


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
