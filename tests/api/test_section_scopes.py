"""Sections' ``scopes`` in the REST contract: the upsert item and the section out in the OpenAPI
schema, the defaults, the explicit "every scope", and bad input answered 400 naming the field."""

from __future__ import annotations

import json

from rest_framework.test import APIClient

from cachecore.models import Section


def test_the_schema_shows_scopes_on_the_upsert_item_and_the_section_out():
    schema = json.loads(APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    components = schema["components"]["schemas"]
    assert components["SectionIn"]["properties"]["scopes"]["type"] == "array"
    assert components["SectionOut"]["properties"]["scopes"]["type"] == "array"
    assert "null" in components["CitationOut"]["properties"]["hash"]["type"]  # OpenAPI 3.1: a type list


def test_defaults_and_every_scope(make_caller):
    wide = make_caller()
    limited = make_caller(tenant=wide.tenant, scopes=["public:", "docs/"])
    wide.upsert({"plain#1": "A plain section."})
    wide.upsert({"every#1": "Every scope."}, scopes=["*", "public:"])
    limited.upsert({"mine#1": "The limited key's."})
    scopes = dict(Section.objects.filter(tenant=wide.tenant).values_list("external_id", "scopes"))
    assert scopes == {"plain#1": [], "every#1": ["*"], "mine#1": ["docs/", "public:"]}
    # An upsert without scopes keeps an existing section's; an identical one changes nothing.
    assert wide.upsert({"every#1": "Every scope."}) == {"created": 0, "updated": 0, "unchanged": 1,
                                                        "invalidated_trails": 0}
    assert Section.objects.get(tenant=wide.tenant, external_id="every#1").scopes == ["*"]
    assert limited.get("/api/v1/sections/every%231").status_code == 200
    assert limited.get("/api/v1/sections/plain%231").status_code == 404
    # A tenant-wide key is served a section without scopes in any scope, and one with scopes in
    # the scopes they admit.
    assert wide.record(query="What does the plain section say?", cited=["plain#1"], scope="anything").status_code == 201
    served = wide.recall("What does the plain section say?", scope="anything")
    assert served["outcome"] == "prefetch" and [s["id"] for s in served["sections"]] == ["plain#1"]
    assert wide.record(query="What does the limited key's section say?", cited=["mine#1"],
                       scope="public:faq").status_code == 201
    assert [s["id"] for s in wide.recall("What does the limited key's section say?", scope="public:faq")["sections"]
            ] == ["mine#1"]


def test_bad_scopes_are_a_400_naming_the_field(caller):
    before = Section.objects.count()
    for scopes in ("public:", ["bad scope"], [""], [1], ["x" * 201]):
        response = caller.put("/api/v1/sections", {"sections": [{"id": "a#1", "text": "A.", "scopes": scopes}]})
        assert response.status_code == 400, (scopes, response.content)
        assert "scopes" in json.dumps(response.json()["fields"])
    assert Section.objects.count() == before
