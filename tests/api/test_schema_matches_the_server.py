"""What the schema allows, the server accepts, and what the server refuses, the schema refuses
too (the findings of scripts/schemathesis.sh, one test each): every pattern is one that every
JSON Schema reader compiles, the keys and the ignored fields of a body, path values of their
route's length or format, the stats scope, non-blank strings, rules across fields, date bounds,
integral numbers, the 414 of an over-long request line."""

from __future__ import annotations

import re
import runpy
from datetime import date, timedelta
from pathlib import Path

import jsonschema_rs
import pytest
from rest_framework.test import APIClient

from api.inputs import INSTANT_PATTERN, parse_bounded_instant
from api.schema import NOT_BLANK_PATTERN, STORABLE_STRING_PATTERN
from api.serializers import NAMESPACE_PATTERN

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def schema():
    response = APIClient().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def _valid(schema, component: str, value) -> bool:
    """``value`` against a component, as a 2020-12 validator reads the document (refs and all)."""
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema", "components": schema["components"],
                "$ref": f"#/components/schemas/{component}"}
    return jsonschema_rs.validator_for(document).is_valid(value)


def _patterns(node):
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_the_schema_is_openapi_3_1_and_every_pattern_compiles_in_a_rust_validator(schema):
    # jsonschema-rs (the validator schemathesis runs) drops a pattern it cannot compile, and then
    # checks nothing: "\ud800-\udfff" was such a pattern, so NUL went unchecked too.
    assert schema["openapi"].startswith("3.1")
    patterns = set(_patterns(schema))
    assert STORABLE_STRING_PATTERN in patterns and INSTANT_PATTERN in patterns
    for pattern in patterns:
        assert jsonschema_rs.validator_for({"type": "string", "pattern": pattern}), pattern
    assert "lone surrogates" in schema["info"]["description"]


def test_a_nul_in_a_key_is_refused_by_the_schema_and_by_the_server(schema, caller):
    body = {"scope": "default", "query": "How do I configure Acme?", "ignored\u0000": 1}
    assert not _valid(schema, "Recall", body)
    assert caller.post("/api/v1/recall", body).status_code == 400
    nested = {"scope": "default", "query": "q?", "extra": {"deep": ["ok", {"k\u0000": 1}]}}
    assert not _valid(schema, "Recall", nested)
    assert caller.post("/api/v1/recall", nested).status_code == 400


def test_a_field_the_request_does_not_name_is_ignored_when_it_is_storable(schema, caller):
    body = {"scope": "default", "query": "How do I configure Acme?", "extra": {"a": [1, 2.5, None, "x"]}}
    assert _valid(schema, "Recall", body)
    assert caller.post("/api/v1/recall", body).status_code == 200
    assert not _valid(schema, "Recall", {**body, "extra": "with a \u0000"})
    assert caller.post("/api/v1/recall", {**body, "extra": "with a \u0000"}).status_code == 400


def test_step_args_are_storable_json_but_not_null(schema, caller):
    caller.upsert({"doc#a": "Acme reads /etc/acme.toml."})
    base = {"scope": "default", "query": "How do I configure Acme?", "cited": ["doc#a"]}
    null_args = {**base, "steps": [{"tool": "search", "args": None}]}
    assert not _valid(schema, "TrailRecord", null_args)
    assert caller.post("/api/v1/trails", null_args).status_code == 400
    nested = {**base, "steps": [{"tool": "search", "args": {"q": ["configure", {"depth": 2}]}}]}
    assert _valid(schema, "TrailRecord", nested)
    assert caller.post("/api/v1/trails", nested).status_code == 201


def _path_parameters(schema):
    return {(path, p["name"]): p["schema"] for path, ops in schema["paths"].items() for op in ops.values()
            if isinstance(op, dict) for p in op.get("parameters", []) if p["in"] == "path"}


def test_path_values_have_their_routes_length_or_format(schema, caller):
    parameters = _path_parameters(schema)
    assert parameters[("/api/v1/subjects/{subject}", "subject")]["maxLength"] == 200
    assert parameters[("/api/v1/sections/{section_id}", "section_id")]["maxLength"] == 512
    for name in ("trail_id", "recall_id", "export_id"):
        assert {s.get("format") for (_, n), s in parameters.items() if n == name} == {"uuid"}, name
    # What the server does past them: a subject of 201 characters is refused, a non-uuid id is not found.
    assert caller.delete("/api/v1/subjects/" + "s" * 201).status_code == 400
    assert caller.delete("/api/v1/subjects/" + "s" * 200).status_code == 200
    assert caller.get("/api/v1/trails/not-a-uuid").status_code == 404


def test_the_stats_scope_is_a_scope_or_empty(schema, caller):
    (parameter,) = schema["paths"]["/api/v1/stats"]["get"]["parameters"]
    pattern = re.compile(parameter["schema"]["pattern"])
    assert pattern.match("") and pattern.match("docs/public:v1") and not pattern.match("a b")
    assert caller.get("/api/v1/stats?scope=").status_code == 200
    assert caller.get("/api/v1/stats?scope=docs/public").status_code == 200
    refused = caller.get("/api/v1/stats?scope=a%20b")
    assert refused.status_code == 400 and "scope" in refused.json()["fields"]
    assert caller.get("/api/v1/stats?scope=" + "s" * 201).status_code == 400


def test_strings_the_server_refuses_blank_have_a_minimum_length(schema, caller):
    caller.upsert({"doc#a": "Acme reads /etc/acme.toml."})
    record = {"scope": "default", "query": "How do I configure Acme?", "cited": ["doc#a"], "answer": ""}
    assert schema["components"]["schemas"]["TrailRecord"]["properties"]["answer"]["minLength"] == 1
    assert not _valid(schema, "TrailRecord", record)
    assert caller.post("/api/v1/trails", record).status_code == 400
    assert caller.post("/api/v1/trails", {**record, "answer": None}).status_code == 201


def test_a_query_of_white_space_only_is_refused_by_the_schema_as_by_the_server(caller):
    pattern = re.compile(NOT_BLANK_PATTERN)
    spaces = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
    assert not pattern.match(spaces) and pattern.match(spaces + "a" + spaces)
    for c in spaces:
        assert not pattern.match(c * 3), hex(ord(c))
    refused = caller.post("/api/v1/recall", {"scope": "default", "query": "\u3000\u2028 \t"})
    assert refused.status_code == 400 and "query" in refused.json()["fields"]


def test_list_and_item_rules_are_in_the_schema(schema, caller):
    components = schema["components"]["schemas"]
    caller.upsert({"doc#a": "Acme reads /etc/acme.toml."})
    base = {"scope": "default", "query": "How do I configure Acme?"}
    for cited in ([], ["doc#a", "doc#a"]):
        assert not _valid(schema, "TrailRecord", {**base, "cited": cited})
        assert caller.post("/api/v1/trails", {**base, "cited": cited}).status_code == 400
    assert not _valid(schema, "SectionsUpsert", {"sections": []})
    assert caller.put("/api/v1/sections", {"sections": []}).status_code == 400
    both = {"id": "doc#b", "text": "", "hash": "0" * 64}
    assert not _valid(schema, "SectionIn", both) and not _valid(schema, "SectionIn", {"id": "doc#b"})
    assert caller.put("/api/v1/sections", {"sections": [both]}).status_code == 400
    assert _valid(schema, "SectionIn", {"id": "doc#b", "text": ""})
    assert "same id" in schema["paths"]["/api/v1/sections"]["put"]["responses"]["400"]["description"]
    assert "since" in schema["paths"]["/api/v1/exports"]["post"]["responses"]["400"]["description"]
    assert components["TrailRecord"]["properties"]["cited"]["uniqueItems"] is True


def _days(years):
    for year in years:
        day = date(year, 1, 1)
        while day.year == year:
            yield day
            day += timedelta(days=1)


def _accepted(value: str) -> bool:
    try:
        parse_bounded_instant(value)
    except ValueError:
        return False
    return True


def test_the_date_pattern_is_what_the_export_accepts():
    """Every day of the years at the edges of the range and of the leap-year rules, bare and with
    each time form: the pattern matches exactly what the export's parser accepts."""
    pattern = re.compile(INSTANT_PATTERN)
    assert pattern.match("")  # an empty bound: no bound, accepted
    years = [1899, 1900, 1901, 1904, 1996, 2000, 2023, 2024, 2100, 2400, 9600, 9900, 9996, 9997, 9998]
    checked = 0
    for day in _days(years):
        for suffix in ("", "T00:00", " 23:59:59", "T12:30:00.5Z", "T12:30:00.123456+05:30", "T01:02-0800", "T01:02+23"):
            value = day.isoformat() + suffix
            assert bool(pattern.match(value)) == _accepted(value), value
            checked += 1
    for value in ("2024-02-30", "2023-02-29", "2100-02-29", "2000-02-29", "9999-01-01", "1899-12-31",
                  "2024-01-01T24:00", "2024-01-01T10:60", "2024-01-01T10:00+24:00", "2024-13-01", "2024-1-1x"):
        assert bool(pattern.match(value)) == _accepted(value), value
    assert checked > 35_000


def test_an_integral_json_number_is_an_integer(caller):
    body = {"scope": "default", "query": "How do I configure Acme?"}
    assert caller.post("/api/v1/recall", {**body, "budget_tokens": 500.0}).status_code == 200
    for refused in (500.5, "500", True):
        response = caller.post("/api/v1/recall", {**body, "budget_tokens": refused})
        assert response.status_code == 400 and "budget_tokens" in response.json()["fields"], refused


def test_every_operation_documents_414_and_the_longest_allowed_request_line_fits(schema):
    limit = runpy.run_path(str(ROOT / "gunicorn.conf.py"))["limit_request_line"]
    longest = 0
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            if not isinstance(op, dict):
                continue
            assert "414" in op["responses"], (method, path)
            # Each path or query value at its most, of 4-byte characters percent-encoded (12 bytes);
            # one the ASCII namespace pattern holds, of percent-encoded ASCII (3 bytes).
            chars = sum((3 if p["schema"].get("pattern") == NAMESPACE_PATTERN else 12)
                        * p["schema"].get("maxLength", 36) for p in op.get("parameters", []))
            names = sum(len(p["name"]) + 2 for p in op.get("parameters", []) if p["in"] == "query")
            longest = max(longest, len(f"{method.upper()}  HTTP/1.1") + len(path) + names + chars)
    assert 6000 < longest <= limit


def test_the_schemathesis_hooks_drop_only_what_the_400_descriptions_name():
    hooks = runpy.run_path(str(ROOT / "scripts" / "schemathesis_hooks.py"))
    breaks = hooks["breaks_a_rule_across_fields"]
    assert breaks("PUT /api/v1/sections", {"sections": [{"id": "a", "text": ""}, {"id": "a", "text": "b"}]})
    assert not breaks("PUT /api/v1/sections", {"sections": [{"id": "a", "text": ""}, {"id": "b", "text": ""}]})
    assert breaks("POST /api/v1/exports", {"format": "csv", "since": "2024-03-02", "until": "2024-03-01"})
    assert not breaks("POST /api/v1/exports", {"format": "csv", "since": "2024-03-01", "until": "2024-03-01"})
    assert not breaks("POST /api/v1/exports", {"format": "csv", "since": "2024-03-01", "until": ""})
    assert breaks("POST /api/v1/trails", {"recall_id": "8c492310-adc1-4db0-9ffc-3591594482fd"})
    assert not breaks("POST /api/v1/recall", {"scope": "a", "query": "q"})


def test_an_empty_date_bound_is_no_bound_in_the_schema_and_in_the_server(schema, caller):
    """The date-range filter's empty value: the schema allows it and the server takes it (no
    bound), white space is refused by both, a bound past the range by both."""
    export = schema["components"]["schemas"]["ExportRequest"]["properties"]
    for body, status in (({"since": "", "until": ""}, 202), ({"until": ""}, 202), ({"until": " "}, 400),
                         ({"since": "2024-01-01", "until": ""}, 202), ({"until": "9999-01-01"}, 400)):
        body = {"format": "csv", **body}
        assert _valid(schema, "ExportRequest", body) == (status == 202), body
        response = caller.post("/api/v1/exports", body)
        assert response.status_code == status, (body, response.content)
        if status == 400:
            assert set(response.json()["fields"]) <= {"since", "until"}
    assert export["since"]["pattern"] == export["until"]["pattern"] == INSTANT_PATTERN
