"""Audit log (compliance, admins): who did what and when, filterable, newest first."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse

from adminui.access import console_view
from adminui.forms import AuditFilterForm
from adminui.rendering import console_render, paginate
from cachecore.filtersets import day_start
from tenants import selectors


@console_view("audit.view")
def audit_log(request: HttpRequest) -> HttpResponse:
    form = AuditFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    since, until = filters.get("since"), filters.get("until")
    entries = selectors.audit_entries_for_tenant(
        caller=request.caller, action=filters.get("action") or None, actor=filters.get("actor") or None,
        target=filters.get("target") or None,
        since=day_start(since) if since else None,
        until=day_start(until + timedelta(days=1)) if until else None,
    )
    context = {"form": form, "page": paginate(request, entries)}
    return console_render(request, "adminui/audit/list.html", context, partial="results")
