"""Migration 0022 reverses only when no section and no citation is in a limited key's namespace:
dropping the column would otherwise merge them into the shared ids, silently."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from cachecore.models import Citation, Section
from cachecore.services.sections import sections_upsert
from cachecore.services.trails import trail_record
from tenants.caller import Caller, tenant_caller

REFUSE = importlib.import_module("cachecore.migrations.0022_section_namespaces").refuse_namespaced


def test_the_reverse_refuses_while_namespaced_rows_exist(make_tenant):
    tenant = make_tenant()
    limited = Caller(tenant=tenant, scope_prefixes=("public:",), permissions=frozenset({"sections:write", "record"}))
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": "s1", "text": "Shared.", "scopes": ["internal:"]}])
    REFUSE(apps, None)  # only shared rows: nothing to merge
    sections_upsert(caller=limited, sections=[{"id": "s1", "text": "Public's own."}])
    trail_record(caller=limited, scope="public:x", query="What does s1 say?", steps=[], cited=["s1"],
                 signal={"source": "caller", "accepted": True})
    with pytest.raises(RuntimeError, match="1 sections and 1 citations"):
        REFUSE(apps, None)
    Section.objects.filter(namespace="public:").delete()
    with pytest.raises(RuntimeError, match="0 sections and 1 citations"):  # its citation would rebind to the shared s1
        REFUSE(apps, None)
    Citation.objects.filter(section_namespace="public:").delete()
    REFUSE(apps, None)
