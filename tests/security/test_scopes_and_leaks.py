"""Smaller leaks: a scope-limited key linking a record to a recall outside its scopes, a failed
export's exception text, and two upserts racing to create the same section id."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection

from api.views import core as core_views
from cachecore.models import Job, JobKind, JobStatus, Section, Trail
from cachecore.services.sections import sections_upsert

QUERY = "How do I configure Acme?"


def test_a_record_cannot_link_a_recall_outside_its_keys_scopes(make_caller, make_tenant):
    tenant = make_tenant()
    wide = make_caller(tenant=tenant)
    narrow = make_caller(tenant=tenant, scopes=["team-a/"])
    wide.upsert({"doc#a": "Acme reads /etc/acme.toml."}, scopes=["*"])
    secret_recall = wide.recall(QUERY, scope="team-b/x")["recall_id"]
    own_recall = narrow.recall(QUERY, scope="team-a/x")["recall_id"]

    refused = narrow.record(query=QUERY, cited=["doc#a"], scope="team-a/x", recall_id=secret_recall)
    unknown = narrow.record(query=QUERY, cited=["doc#a"], scope="team-a/x",
                            recall_id="00000000-0000-4000-8000-000000000000")
    assert refused.status_code == unknown.status_code == 400
    assert refused.json() == unknown.json()  # indistinguishable from a recall that never was
    assert Trail.objects.filter(tenant=tenant).count() == 0

    linked = narrow.record(query=QUERY, cited=["doc#a"], scope="team-a/x", recall_id=own_recall)
    assert linked.status_code == 201, linked.content
    assert wide.record(query=QUERY, cited=["doc#a"], scope="team-b/x", recall_id=secret_recall).status_code == 201


def test_a_failed_exports_status_gives_a_code_not_the_exception_text(caller):
    accepted = caller.post("/api/v1/exports", {"format": "csv"}).json()
    job = Job.objects.get(pk=accepted["export_id"], kind=JobKind.EXPORT)
    job.status, job.error = JobStatus.FAILED, "OperationalError: could not open /srv/trailcache/.data/media/x.csv"
    job.save()
    body = caller.get(f"/api/v1/exports/{job.pk}").json()
    assert body["status"] == "failed" and body["error"] == "internal_error"
    job.error = "too_many_attempts"
    job.save()
    assert caller.get(f"/api/v1/exports/{job.pk}").json()["error"] == "too_many_attempts"


def test_an_upsert_that_loses_a_creation_race_is_retried_not_a_500(caller, monkeypatch):
    real = sections_upsert
    calls = []

    def lose_once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            real(**kwargs)  # the "other" request created the rows meanwhile…
            raise IntegrityError('duplicate key value violates unique constraint "section_tenant_external_id"')
        return real(**kwargs)

    monkeypatch.setattr(core_views, "sections_upsert", lose_once)
    response = caller.put("/api/v1/sections", {"sections": [{"id": "new#1", "text": "fresh text"}]})
    assert response.status_code == 200, response.content
    assert response.json()["unchanged"] == 1 and len(calls) == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_upserts_creating_the_same_ids_never_give_a_500(make_caller):
    caller = make_caller()
    statuses: list[int] = []
    start = threading.Barrier(4)

    def upsert(n: int) -> None:
        try:
            start.wait()
            for round_ in range(3):
                sections = [{"id": f"race#{round_}-{i}", "text": f"text {i} from {n}"} for i in range(20)]
                statuses.append(caller.put("/api/v1/sections", {"sections": sections}).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=upsert, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses and set(statuses) == {200}, statuses
    assert Section.objects.filter(tenant=caller.tenant).count() == 60
