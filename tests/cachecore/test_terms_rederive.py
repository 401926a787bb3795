"""Migration 0015: the terms stored with sections (and the tenants' document frequencies) are
derived again with the Snowball stemmer, so recall's term features read what it computes now."""

from __future__ import annotations

import importlib
from collections import Counter

import pytest
from django.apps import apps
from django.db import connection

from cachecore.engine.evidence import SECTION_COUNT_TERM, section_terms
from cachecore.engine.polarity import stem
from cachecore.models import Section, TermFrequency
from cachecore.services.sections import sections_upsert
from tenants.caller import tenant_caller

migration = importlib.import_module("cachecore.migrations.0017_section_terms_snowball_stems")


def test_the_stemmer_is_snowball_english() -> None:
    assert [stem(w) for w in ("enable", "enabled", "enabling", "disables", "processes", "running")] == [
        "enabl", "enabl", "enabl", "disabl", "process", "run"]


@pytest.mark.django_db
def test_stored_terms_and_frequencies_are_derived_again(make_tenant) -> None:
    tenant, other = make_tenant(), make_tenant()
    texts = {"a": "Enabling the processes and running them.", "b": "Disabled processes never run."}
    sections_upsert(caller=tenant_caller(tenant), sections=[{"id": k, "text": v} for k, v in texts.items()])
    sections_upsert(caller=tenant_caller(other), sections=[{"id": "c", "text": "Files are written."}])
    # What the suffix stripper stored before: other stems, other document frequencies.
    Section.objects.filter(tenant=tenant, external_id="a").update(terms=["enabl", "process", "runn"])
    TermFrequency.objects.filter(tenant=tenant).delete()
    TermFrequency.objects.create(tenant=tenant, term="runn", sections=1)

    migration.rederive_terms(apps, connection.schema_editor())

    expected: Counter[str] = Counter()
    for key, text in texts.items():
        terms = sorted(section_terms(text))
        assert Section.objects.get(tenant=tenant, external_id=key).terms == terms
        expected.update(terms)
    expected[SECTION_COUNT_TERM] = 2
    assert dict(TermFrequency.objects.filter(tenant=tenant).values_list("term", "sections")) == dict(expected)
    assert dict(TermFrequency.objects.filter(tenant=other).values_list("term", "sections")) == {
        **dict.fromkeys(section_terms("Files are written."), 1), SECTION_COUNT_TERM: 1}
