"""The OpenAPI schema tells the whole contract: the bearer key, and every error answer in the one
error shape (``{"error", "detail", "fields"}``), so a client (and schemathesis) can check them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

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
    ("/api/v1/trails", "post"): {"422": "Cited ids unknown to the tenant (`unknown_ids` names them).",
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
    _add_links(result)
    return result


# What api.inputs refuses in every string (NUL, lone surrogates), as a JSON Schema pattern (ASCII
# escapes, which ECMA and Python regexes both read).
STORABLE_STRING_PATTERN = r"^[^\u0000\ud800-\udfff]*$"
_CONSTRAINED_FORMATS = {"uuid", "date", "date-time", "uri", "email", "binary", "byte"}


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
        if node.get("type") == "string" and "enum" not in node and node.get("format") not in _CONSTRAINED_FORMATS:
            node.setdefault("pattern", STORABLE_STRING_PATTERN)
        for key in ("properties", "patternProperties"):
            if isinstance(node.get(key), dict):
                stack.extend(node[key].values())
        for key in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not"):
            if isinstance(node.get(key), (dict, list)):
                stack.append(node[key])


def document_input_limits(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: what the server refuses before any view runs
    (api.middleware, api.inputs) said in the schema: no NUL or lone surrogate in any string
    (``pattern``), and path and query values of at most their length (``maxLength``)."""
    from api.inputs import MAX_PATH_VALUE_CHARS, MAX_QUERY_VALUE_CHARS

    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name != "Error":
            _constrain_strings(component)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if schema.get("type") != "string":
                    continue
                limit = MAX_PATH_VALUE_CHARS if parameter.get("in") == "path" else MAX_QUERY_VALUE_CHARS
                if schema.get("format") not in _CONSTRAINED_FORMATS and "enum" not in schema:
                    schema["maxLength"] = min(schema.get("maxLength", limit), limit)
                    schema.setdefault("pattern", STORABLE_STRING_PATTERN)
            body = operation.get("requestBody", {}).get("content", {})
            for media in body.values():
                _constrain_strings(media.get("schema"))
    return result
