"""Console pages for exports and subject erasure: compliance (and admins for exports) only,
another tenant's operator gets 404, progress polls with htmx until the job is finished."""

from __future__ import annotations

import pytest
from django.test import Client

from cachecore.models import Job, JobKind, JobStatus, Trail
from tenants.caller import tenant_caller
from tenants.models import AuditAction, AuditEntry, Role
from tenants.services import operator_create
from tests.factories import make_trail

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def people(make_tenant):
    tenant, other = make_tenant("acme"), make_tenant("globex")

    def client(email: str, t, role) -> Client:
        c = Client()
        c.force_login(operator_create(email=email, password="pw-123456789", tenant=t, role=role))
        return c

    return {
        "tenant": tenant,
        "compliance": client("c@acme.test", tenant, Role.COMPLIANCE),
        "admin": client("a@acme.test", tenant, Role.ADMIN),
        "support": client("s@acme.test", tenant, Role.SUPPORT),
        "outsider": client("c@globex.test", other, Role.COMPLIANCE),
    }


def test_compliance_requests_an_export_and_watches_its_progress_until_done(people, run_jobs):
    tenant, client = people["tenant"], people["compliance"]
    make_trail(tenant, query="hello")
    response = client.post("/console/exports/?tenant=acme", {"format": "csv", "status": "active"})
    assert response.status_code == 302
    job = Job.objects.get(tenant=tenant, kind=JobKind.EXPORT)
    assert job.actor_label == "operator:c@acme.test" and job.params["status"] == "active"
    assert AuditEntry.objects.filter(tenant=tenant, action=AuditAction.EXPORT).count() == 1

    page = client.get("/console/exports/?tenant=acme").content.decode()
    assert f'hx-get="/console/exports/{job.pk}/?tenant=acme"' in page and 'hx-trigger="every 1s"' in page

    row = client.get(f"/console/exports/{job.pk}/?tenant=acme", HTTP_HX_REQUEST="true")
    assert row.status_code == 200 and "<progress" in row.content.decode()
    assert "<html" not in row.content.decode()

    run_jobs()
    row = client.get(f"/console/exports/{job.pk}/?tenant=acme", HTTP_HX_REQUEST="true")
    assert row.status_code == 286  # htmx stops polling
    body = row.content.decode()
    assert "hx-trigger" not in body and f"/console/exports/{job.pk}/download/" in body

    download = client.get(f"/console/exports/{job.pk}/download/?tenant=acme")
    assert download.status_code == 200
    assert b"hello" in b"".join(download.streaming_content)


def test_exports_page_is_for_compliance_and_admins_only(people):
    assert people["compliance"].get("/console/exports/?tenant=acme").status_code == 200
    assert people["admin"].get("/console/exports/?tenant=acme").status_code == 200
    assert people["support"].get("/console/exports/?tenant=acme").status_code == 403


def test_another_tenants_operator_gets_404_for_the_page_the_job_and_the_file(people, run_jobs):
    tenant = people["tenant"]
    make_trail(tenant)
    people["compliance"].post("/console/exports/?tenant=acme", {"format": "jsonl"})
    run_jobs()
    job = Job.objects.get(tenant=tenant)
    outsider = people["outsider"]
    assert outsider.get("/console/exports/?tenant=acme").status_code == 404
    assert outsider.get(f"/console/exports/{job.pk}/?tenant=globex").status_code == 404
    assert outsider.get(f"/console/exports/{job.pk}/download/?tenant=globex").status_code == 404
    assert outsider.get(f"/console/exports/{job.pk}/download/?tenant=acme").status_code == 404


def test_compliance_erases_a_subject_as_a_job(people, run_jobs):
    tenant, client = people["tenant"], people["compliance"]
    make_trail(tenant, subject="alice@example.com")
    assert client.post("/console/subjects/erase/?tenant=acme", {"subject": "alice@example.com"}).status_code == 400
    response = client.post("/console/subjects/erase/?tenant=acme", {"subject": "alice@example.com", "confirm": "on"})
    assert response.status_code == 302
    job = Job.objects.get(tenant=tenant, kind=JobKind.SUBJECT_ERASE)
    run_jobs()
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and not Trail.objects.filter(tenant=tenant).exists()
    row = client.get(f"/console/subjects/erase/{job.pk}/?tenant=acme", HTTP_HX_REQUEST="true")
    assert row.status_code == 286 and "alice" not in row.content.decode()
    assert "alice" not in client.get("/console/subjects/erase/?tenant=acme").content.decode()


def test_subject_erasure_is_compliance_only(people):
    assert people["admin"].get("/console/subjects/erase/?tenant=acme").status_code == 403
    assert people["support"].post("/console/subjects/erase/?tenant=acme",
                                  {"subject": "x", "confirm": "on"}).status_code == 403
    assert people["outsider"].get("/console/subjects/erase/?tenant=acme").status_code == 404
    assert not Job.objects.exists()


def test_downloads_are_audited_from_the_console_and_the_api(people, run_jobs):
    from tenants.services import api_key_create
    from tests.conftest import ApiCaller

    tenant, client = people["tenant"], people["compliance"]
    make_trail(tenant, query="hello")
    client.post("/console/exports/?tenant=acme", {"format": "csv"})
    run_jobs()
    job = Job.objects.get(tenant=tenant, kind=JobKind.EXPORT)
    assert client.get(f"/console/exports/{job.pk}/download/?tenant=acme").status_code == 200
    _, raw = api_key_create(caller=tenant_caller(tenant), name="exporter", permissions=["export"])
    assert ApiCaller(tenant, raw).get(f"/api/v1/exports/{job.pk}/download").status_code == 200
    entries = AuditEntry.objects.filter(tenant=tenant, action=AuditAction.EXPORT_DOWNLOAD).order_by("created_at", "id")
    assert [e.actor_label for e in entries] == ["operator:c@acme.test", f"apikey:{raw[:11]}"]
    assert all(e.details["export_id"] == str(job.pk) for e in entries)


def test_the_console_export_filters_by_subject_and_scope_exactly_as_the_api_records_them(people):
    """The service matches a subject exactly (" alice" is not "alice"), as the API's export does
    and as the console's erasure does: the console's export form does not strip them either."""
    tenant, client = people["tenant"], people["compliance"]
    response = client.post("/console/exports/?tenant=acme", {"format": "csv", "subject": " alice ", "scope": " docs"})
    assert response.status_code == 302
    job = Job.objects.get(tenant=tenant, kind=JobKind.EXPORT)
    assert job.params["subject"] == " alice " and job.params["scope"] == " docs"


def test_the_console_export_form_is_held_to_the_cap_on_exports_in_progress(people, settings):
    """Issue 25: the console's export form skipped the per-tenant cap the API kept. The cap is the
    service's: the form answers it with its status (429) and message, and writes no job."""
    settings.TRAILCACHE_MAX_ACTIVE_EXPORTS = 1
    tenant, client = people["tenant"], people["compliance"]
    assert client.post("/console/exports/?tenant=acme", {"format": "csv"}).status_code == 302
    refused = client.post("/console/exports/?tenant=acme", {"format": "jsonl"})
    assert refused.status_code == 429 and "at most 1" in refused.content.decode()
    assert Job.objects.filter(tenant=tenant, kind=JobKind.EXPORT).count() == 1
    # Another tenant's exports are its own.
    assert people["outsider"].post("/console/exports/?tenant=globex", {"format": "csv"}).status_code == 302


@pytest.mark.parametrize("day", ["1850-06-01", "9999-06-01"])
def test_the_console_export_takes_the_date_range_the_api_export_takes(people, caller, day):
    """One range for an export's bounds, in the service: the API's export refused these days
    (400 naming the field) while the console's export form took them."""
    api = caller.post("/api/v1/exports", {"format": "csv", "since": day})
    assert api.status_code == 400 and "since" in api.json()["fields"]
    refused = people["compliance"].post("/console/exports/?tenant=acme", {"format": "csv", "since": day})
    assert refused.status_code == 400 and "1900-01-01" in refused.content.decode()
    assert not Job.objects.filter(tenant=people["tenant"], kind=JobKind.EXPORT).exists()
