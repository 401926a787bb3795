"""``selectors.sections``: what a section id means for a caller (docs/scopes.md, "Id
namespaces") — the one resolution behind every read, cite, delete and write."""

from __future__ import annotations

import pytest

from cachecore.errors import NotFound, ScopeForbidden
from cachecore.models import Section
from cachecore.selectors.sections import section_get, sections_current_hashes, sections_resolved
from tenants.caller import Caller, tenant_caller


def _section(tenant, section_id, namespace, scopes, text):
    return Section.objects.create(tenant=tenant, external_id=section_id, namespace=namespace, scopes=scopes,
                                  text=text, sha256=f"{len(text):064x}")


def test_each_caller_means_its_own_or_the_visible_shared_section_or_none(make_tenant):
    tenant = make_tenant()
    public = Caller(tenant=tenant, scope_prefixes=("public:",))
    _section(tenant, "both", "", ["internal:"], "shared both")
    _section(tenant, "both", "public:", ["public:"], "public's both")
    _section(tenant, "seen", "", ["public:", "internal:"], "shared seen")
    _section(tenant, "hidden", "", ["internal:"], "shared hidden")
    _section(tenant, "theirs", "docs/,public:", ["public:"], "another namespace's")
    ids = ["both", "seen", "hidden", "theirs", "never"]
    texts = {i: s.text for i, s in sections_resolved(caller=public, section_ids=ids).items()}
    assert texts == {"both": "public's both", "seen": "shared seen"}
    wide = {i: s.text for i, s in sections_resolved(caller=tenant_caller(tenant), section_ids=ids).items()}
    assert wide == {"both": "shared both", "seen": "shared seen", "hidden": "shared hidden"}
    assert section_get(caller=tenant_caller(tenant), section_id="both", namespace="public:").text == "public's both"
    assert set(sections_current_hashes(caller=public, section_ids=ids)) == {"both", "seen"}
    # A limited caller never names a namespace; for it, a hidden id is one that does not exist.
    with pytest.raises(ScopeForbidden):
        section_get(caller=public, section_id="both", namespace="public:")
    for section_id in ("hidden", "never", "theirs"):
        with pytest.raises(NotFound):
            section_get(caller=public, section_id=section_id)
