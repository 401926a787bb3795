"""Compliance pages: exports of stored queries (request, progress that polls while the job
runs, download) and subject erasure as a job. The API and these pages call the same services."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from adminui.access import console_view
from adminui.rendering import console_render
from cachecore.errors import DomainError
from cachecore.models import Job, JobKind, TrailStatus
from cachecore.selectors.jobs import job_get, jobs_latest
from cachecore.selectors.trail_filters import date_in_range
from cachecore.services import exports as export_services
from cachecore.services.erasure import subject_erase_request

# htmx stops polling on this status.
STOP_POLLING = 286


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=[("csv", "CSV"), ("jsonl", "JSON Lines")], initial="csv")
    # Not stripped, as the erasure's subject below: the service matches both exactly, as the API sends them.
    scope = forms.CharField(required=False, max_length=200, strip=False,
                            help_text="Exactly this scope. Empty: every scope.")
    subject = forms.CharField(required=False, max_length=200, strip=False,
                              help_text="Only this subject's trails, exactly as the API recorded it.")
    status = forms.ChoiceField(required=False, choices=[("", "any")] + list(TrailStatus.choices),
                               label="Trail status")
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="From",
                            help_text="First day included (UTC).", validators=[date_in_range])
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="Through",
                            help_text="Last day included (UTC).", validators=[date_in_range])


class SubjectEraseForm(forms.Form):
    # Not stripped: the service matches the subject exactly as the API recorded it.
    subject = forms.CharField(max_length=200, strip=False, help_text="Exactly as the API recorded it.")
    confirm = forms.BooleanField(label="I understand this deletes every trail and logged query of this subject.")


def _job(request: HttpRequest, job_id: str, kind: JobKind) -> Job:
    """The job of the operator's tenant (NotFound → 404 by console_view: another tenant's job
    does not exist here)."""
    return job_get(caller=request.caller, job_id=job_id, kind=kind)


def _job_response(request: HttpRequest, template: str, job: Job) -> HttpResponse:
    """One job's row: a full page normally, the row alone for htmx polling (286 once finished)."""
    response = console_render(request, template, {"jobs": [job], "job": job}, partial="job")
    if getattr(request, "htmx", None) and job.finished:
        response.status_code = STOP_POLLING
    return response


def _exports_page(request: HttpRequest, form: ExportForm, *, status: int = 200) -> HttpResponse:
    jobs = jobs_latest(caller=request.caller, kind=JobKind.EXPORT)
    return console_render(request, "adminui/exports/list.html", {"form": form, "jobs": jobs}, status=status)


@console_view("exports.manage", methods=("GET", "HEAD", "POST"))
def export_list(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _exports_page(request, ExportForm())
    form = ExportForm(request.POST)
    if not form.is_valid():
        return _exports_page(request, form, status=400)
    data = form.cleaned_data
    try:
        export_services.export_request(
            caller=request.caller, format=data["format"], scope=data["scope"] or None,
            subject=data["subject"] or None, status=data["status"] or None, since=data["since"],
            until=data["until"],
        )
    except DomainError as exc:
        # The form shows the error's fields (the cap: its message) with the error's own status.
        for field, errors in (exc.fields or {None: [exc.message]}).items():
            for error in errors:
                form.add_error(field if field in form.fields else None, error)
        return _exports_page(request, form, status=exc.status_code)
    messages.success(request, "Export requested: it runs in the background; the bar below shows its progress.")
    return HttpResponseRedirect(f"{reverse('adminui:exports')}?tenant={request.access.tenant.slug}")


@console_view("exports.manage")
def export_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    job = _job(request, job_id, JobKind.EXPORT)
    return _job_response(request, "adminui/exports/list.html", job)


@console_view("exports.manage")
def export_download(request: HttpRequest, job_id: str) -> HttpResponse:
    # Not done yet → 409, file deleted → 410 (console_view answers the domain error's status).
    export = export_services.export_download(caller=request.caller, export_id=job_id)
    response = FileResponse(open(export.path, "rb"), as_attachment=True, filename=export.filename,
                            content_type=export.content_type)
    response["Cache-Control"] = "no-store"
    return response


def _subjects_page(request: HttpRequest, form: SubjectEraseForm, *, status: int = 200) -> HttpResponse:
    jobs = jobs_latest(caller=request.caller, kind=JobKind.SUBJECT_ERASE)
    return console_render(request, "adminui/subjects/erase.html", {"form": form, "jobs": jobs}, status=status)


@console_view("subjects.erase", methods=("GET", "HEAD", "POST"))
def subject_erase(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _subjects_page(request, SubjectEraseForm())
    form = SubjectEraseForm(request.POST)
    if not form.is_valid():
        return _subjects_page(request, form, status=400)
    subject_erase_request(caller=request.caller, subject=form.cleaned_data["subject"])
    messages.success(request, "Erasure accepted: it runs in the background. The audit log keeps the subject's hash.")
    return HttpResponseRedirect(f"{reverse('adminui:subject_erase')}?tenant={request.access.tenant.slug}")


@console_view("subjects.erase")
def subject_erase_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    job = _job(request, job_id, JobKind.SUBJECT_ERASE)
    return _job_response(request, "adminui/subjects/erase.html", job)
