"""The schema says what the server enforces before any view runs: no NUL in a string
(``pattern``; lone surrogates, which no portable pattern can name, in the description), path and
query values of bounded length (``maxLength``), and both content types an export download
answers."""

from __future__ import annotations

import re

from api.inputs import MAX_PATH_VALUE_CHARS
from api.schema import STORABLE_STRING_PATTERN


def _schema(client):
    response = client.get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def _free_strings(node, path=""):
    if isinstance(node, dict):
        kind = node.get("type")
        if (kind == "string" or (isinstance(kind, list) and "string" in kind)) and "enum" not in node \
                and "format" not in node:
            yield path, node
        for key, value in node.items():
            yield from _free_strings(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _free_strings(value, f"{path}[{i}]")


def test_every_free_string_refuses_nul(client):
    schema = _schema(client)
    found = [(p, n) for name, c in schema["components"]["schemas"].items() if name != "Error"
             for p, n in _free_strings(c, name)]
    assert found
    missing = [p for p, n in found if "pattern" not in n]
    assert missing == []
    storable = re.compile(STORABLE_STRING_PATTERN)
    assert storable.match("plain text, é and emoji 🙂") and not storable.match("a\x00b")
    assert "lone surrogates" in schema["info"]["description"]


def test_path_and_query_values_have_their_length(client):
    schema = _schema(client)
    parameters = [p for ops in schema["paths"].values() for op in ops.values() if isinstance(op, dict)
                  for p in op.get("parameters", []) if p.get("schema", {}).get("type") == "string"
                  and "enum" not in p["schema"] and "format" not in p["schema"]]
    assert parameters
    assert all(p["schema"].get("maxLength", 10**9) <= MAX_PATH_VALUE_CHARS for p in parameters), parameters


def test_the_export_download_documents_both_content_types(client):
    schema = _schema(client)
    content = schema["paths"]["/api/v1/exports/{export_id}/download"]["get"]["responses"]["200"]["content"]
    assert {"text/csv", "application/x-ndjson"} <= set(content)
