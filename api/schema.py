"""The OpenAPI schema tells the whole contract: the bearer key, and every error answer in the one
error shape (``{"error", "detail", "fields"}``), so a client (and schemathesis) can check them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from api.inputs import INSTANT_PATTERN, MAX_JSON_DEPTH, MAX_PATH_VALUE_CHARS, MAX_QUERY_VALUE_CHARS
from cachecore.engine import limits

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "detail", "fields"],
    "properties": {
        "error": {"type": "string", "description": "A stable short code (invalid, not_found, …)."},
        "detail": {"type": "string", "description": "A message for people."},
        "fields": {
            "type": "object",
            "description": "Per field (a JSON path for nested values), the reasons it was refused.",
            "additionalProperties": True,
        },
    },
    "additionalProperties": True,
}

_ALWAYS = {
    "400": "Invalid input: a path or query value, or the body, field by field.",
    "401": "Missing, malformed, invalid or revoked API key.",
    "403": "A scope or permission outside the key's limits.",
    "404": "Nothing of this tenant (and within the key's scopes) at this address.",
    "405": "Method not allowed on this route.",
    "429": "Too many requests: wait Retry-After seconds.",
    "503": "The database is unavailable (restarting, say): retry after Retry-After seconds.",
}
_WITH_BODY = {
    "413": "Body over 1 MiB.",
    "415": "The body must be application/json.",
}
_SPECIAL = {
    ("/api/v1/sections", "put"): {"400": "Invalid input, field by field; also two sections with the same id in one "
                                         "request (a rule across items the schema cannot state)."},
    ("/api/v1/exports", "post"): {"400": "Invalid input, field by field; also `since` not before `until` (a rule "
                                         "across fields the schema cannot state).",
                                  "409": "The tenant's export files take their quota (`export_quota_exceeded`).",
                                  "429": "Too many requests, or too many of the tenant's exports in progress: wait "
                                         "Retry-After seconds."},
    ("/api/v1/trails", "post"): {"400": "Invalid input, field by field; also a `recall_id` this key cannot see.",
                                 "422": "Cited ids unknown to the tenant (`unknown_ids` names them).",
                                 "503": "The tenant's resolver is down: nothing was written."},
    ("/api/v1/exports/{export_id}/download", "get"): {"409": "The export is not done yet.",
                                                      "410": "The export file was deleted."},
}


# What an answer's id opens next (OpenAPI links): clients and schemathesis's stateful runs follow them.
_LINKS = {
    ("/api/v1/trails", "post", "201"): [
        ("GetTrail", "/api/v1/trails/{trail_id}", "get", "trail_id"),
        ("DeleteTrail", "/api/v1/trails/{trail_id}", "delete", "trail_id"),
    ],
    ("/api/v1/recall", "post", "200"): [
        ("GiveFeedback", "/api/v1/recalls/{recall_id}/feedback", "post", "recall_id"),
    ],
    ("/api/v1/exports", "post", "202"): [
        ("GetExport", "/api/v1/exports/{export_id}", "get", "export_id"),
        ("DownloadExport", "/api/v1/exports/{export_id}/download", "get", "export_id"),
    ],
}


def _add_links(result: dict[str, Any]) -> None:
    paths = result.get("paths", {})
    for (path, method, status), links in _LINKS.items():
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        for name, target_path, target_method, field in links:
            target = paths.get(target_path, {}).get(target_method)
            if target is None or "operationId" not in target:
                continue
            response.setdefault("links", {})[name] = {
                "operationId": target["operationId"],
                "parameters": {field: f"$response.body#/{field}"},
            }


class BearerApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer tc_<prefix>_<secret>`"}


def _error_response(description: str, *, retry_after: bool = False) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if retry_after:
        response["headers"] = {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}}
    return response


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the error shape as a component, on every operation."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            errors = dict(_ALWAYS)
            if "requestBody" in operation:
                errors.update(_WITH_BODY)
            errors.update(_SPECIAL.get((path, method), {}))
            for code, description in errors.items():
                responses.setdefault(code, _error_response(description, retry_after=code in {"429", "503"}))
            # gunicorn's own page (gunicorn.conf.py: limit_request_line), before Django runs.
            responses.setdefault("414", {"description": "Request line over 8,190 bytes (the web server's limit).",
                                         "content": {"text/html": {"schema": {"type": "string"}}}})
    _add_links(result)
    return result


# What api.inputs refuses in every string and key: NUL, as a JSON Schema pattern every reader
# takes (ECMA 262, Python, the Rust regex of jsonschema-rs). Lone surrogates (\ud800-\udfff) are
# refused too, but no portable pattern can name them (a Unicode-aware engine has no such
# characters; a UTF-16 one would refuse every emoji): the schema's description says so.
STORABLE_STRING_PATTERN = r"^[^\u0000]*$"
# A string with something besides white space (str.isspace: what ``query.strip()`` removes).
_PY_SPACE = "\\t\\n\\u000b\\f\\r\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
NOT_BLANK_PATTERN = rf"^[^\u0000]*[^\u0000{_PY_SPACE}][^\u0000]*$"
_CONSTRAINED_FORMATS = {"uuid", "date", "date-time", "uri", "email", "binary", "byte"}
STORABLE_JSON_REF = {"$ref": "#/components/schemas/StorableJson"}
STORABLE_JSON = {
    "description": f"Any JSON value whose strings and keys hold no NUL and no lone surrogate, nested at most "
                   f"{MAX_JSON_DEPTH} levels.",
    "anyOf": [
        {"type": "string", "pattern": STORABLE_STRING_PATTERN}, {"type": "number"}, {"type": "boolean"},
        {"type": "null"}, {"type": "array", "items": STORABLE_JSON_REF},
        {"type": "object", "propertyNames": {"pattern": STORABLE_STRING_PATTERN},
         "additionalProperties": STORABLE_JSON_REF},
    ],
}
_DESCRIPTION = (
    "\n\nEvery string and every key of a body, path or query refuses NUL (`\\u0000`) and lone "
    "surrogates (`\\ud800`-`\\udfff`): 400 naming the field. Fields a request does not name are "
    "ignored, but must be JSON of that kind too (`StorableJson`). A request line over 8,190 bytes is "
    "refused with 414 before the service reads it."
)
# Path parameters, by name: what each route's view accepts.
_PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "trail_id": {"type": "string", "format": "uuid"},
    "recall_id": {"type": "string", "format": "uuid"},
    "export_id": {"type": "string", "format": "uuid"},
    "section_id": {"type": "string", "minLength": 1, "maxLength": limits.MAX_SECTION_ID_CHARS,
                   "pattern": STORABLE_STRING_PATTERN},
    "subject": {"type": "string", "minLength": 1, "maxLength": limits.MAX_SUBJECT_CHARS,
                "pattern": STORABLE_STRING_PATTERN},
}
# Body properties whose rule the serializer states in code rather than in a field argument.
_PROPERTY_RULES: dict[tuple[str, str], dict[str, Any]] = {
    ("Recall", "query"): {"pattern": NOT_BLANK_PATTERN},
    ("TrailRecord", "query"): {"pattern": NOT_BLANK_PATTERN},
    ("TrailRecord", "cited"): {"minItems": 1, "uniqueItems": True},
    ("SectionsUpsert", "sections"): {"minItems": 1},
    ("ExportRequest", "since"): {"pattern": INSTANT_PATTERN},
    ("ExportRequest", "until"): {"pattern": INSTANT_PATTERN},
    ("Step", "args"): {**STORABLE_JSON_REF, "not": {"type": "null"}},
}
# Whole components: rules across their fields.
_COMPONENT_RULES: dict[str, dict[str, Any]] = {
    # SectionInSerializer.validate: exactly one of text or hash.
    "SectionIn": {"oneOf": [{"required": ["text"]}, {"required": ["hash"]}]},
}


def _is_string(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def _constrain_strings(schema: Any) -> None:
    """Every free string of ``schema`` (recursively) gets the storable-string pattern."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if _is_string(node) and "enum" not in node and node.get("format") not in _CONSTRAINED_FORMATS:
            node.setdefault("pattern", STORABLE_STRING_PATTERN)
        for key in ("properties", "patternProperties"):
            if isinstance(node.get(key), dict):
                stack.extend(node[key].values())
        for key in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not"):
            if isinstance(node.get(key), (dict, list)):
                stack.append(node[key])


def _request_components(result: dict[str, Any]) -> set[str]:
    """Names of the components a request body uses, directly or through other components."""
    components = result.get("components", {}).get("schemas", {})
    names: set[str] = set()
    stack: list[Any] = [op.get("requestBody", {}) for ops in result.get("paths", {}).values()
                        for op in ops.values() if isinstance(op, dict)]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[-1]
                if name not in names and name in components:
                    names.add(name)
                    stack.append(components[name])
            stack.extend(value for value in node.values() if isinstance(value, (dict, list)))
    return names


def _ignored_fields_storable(node: dict[str, Any]) -> None:
    """An input object's keys, and the fields it does not declare (ignored), are storable JSON."""
    if node.get("type") == "object":
        node.setdefault("propertyNames", {"pattern": STORABLE_STRING_PATTERN})
        node.setdefault("additionalProperties", STORABLE_JSON_REF)


def document_input_limits(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: what the server refuses said in the schema, so that
    data the schema allows is accepted and data it refuses is refused: no NUL in any string or
    key (``pattern``, ``propertyNames``), path and query values of their route's length or
    format, the rules serializers state in code (non-blank queries, one of text or hash, unique
    cited ids, date bounds), and what an undeclared field may hold."""
    result.setdefault("info", {})["description"] = result.get("info", {}).get("description", "") + _DESCRIPTION
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["StorableJson"] = STORABLE_JSON
    inputs = _request_components(result)
    for name, component in components.items():
        if name in ("Error", "StorableJson"):
            continue
        for (owner, field), rule in _PROPERTY_RULES.items():
            if owner == name and field in component.get("properties", {}):
                prop = component["properties"][field]
                if "$ref" in rule:
                    component["properties"][field] = {**rule, **{k: v for k, v in prop.items() if k == "description"}}
                else:
                    prop.update(rule)
        component.update(_COMPONENT_RULES.get(name, {}))
        _constrain_strings(component)
        if name in inputs:
            _ignored_fields_storable(component)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") == "path" and parameter.get("name") in _PATH_PARAMETERS:
                    parameter["schema"] = dict(_PATH_PARAMETERS[parameter["name"]])
                    continue
                if not _is_string(schema):
                    continue
                limit = MAX_PATH_VALUE_CHARS if parameter.get("in") == "path" else MAX_QUERY_VALUE_CHARS
                if schema.get("format") not in _CONSTRAINED_FORMATS and "enum" not in schema:
                    schema["maxLength"] = min(schema.get("maxLength", limit), limit)
                    schema.setdefault("pattern", STORABLE_STRING_PATTERN)
            body = operation.get("requestBody", {}).get("content", {})
            for media in body.values():
                _constrain_strings(media.get("schema"))
                if isinstance(media.get("schema"), dict):
                    _ignored_fields_storable(media["schema"])
    return result
