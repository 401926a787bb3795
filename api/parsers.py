"""The API's only body parser: JSON, refusing what cannot be stored (see ``api.inputs``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.parsers import JSONParser

from api.inputs import InputRefused, json_loads


class StrictJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            raise exceptions.ParseError(f"JSON parse error - the body is not valid {encoding}")
        try:
            return json_loads(text)
        except InputRefused as exc:
            raise exceptions.ValidationError(exc.fields)
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}")
