"""Strict JSON fields: a wrong JSON type is an error, not something coerced."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from rest_framework import serializers


class WholeValueValidator(RegexValidator):
    """A ``RegexValidator`` whose pattern must match the whole value, as the schema's ``pattern``
    (ECMA, where ``$`` is the end of the text) states it: Python's ``$`` also matches before a
    final newline, so ``search`` would take "docs" and a newline for a scope. The pattern, and so the
    schema, stays the same."""

    def __call__(self, value: Any) -> None:
        if self.regex.fullmatch(str(value)) is None:
            raise ValidationError(self.message, code=self.code, params={"value": value})


class StrictCharField(serializers.CharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        if not kwargs.get("allow_blank", False) and kwargs.get("min_length") is None:
            # Blank is refused ("may not be blank", checked before the validators): minLength 1 in
            # the schema says so.
            kwargs["min_length"] = 1
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be a JSON boolean (true or false)."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be a JSON integer."}

    def to_internal_value(self, data: Any) -> int:
        # 5.0 is the JSON number 5 (JSON Schema's "integer" takes it); 5.5, "5" and true are not.
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)
