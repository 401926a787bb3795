"""Sections: search by id or text; one section's text, hash and the trails citing it.
Section ids hold ``/ # :``, so the detail takes ``?id=`` (url-encoded), not a path segment."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse

from adminui.access import console_view
from adminui.rendering import console_render, paginate
from cachecore import selectors
from cachecore.errors import NotFound

LIST_FIELDS = ("id", "external_id", "sha256", "token_count", "updated_at", "text")


@console_view("sections.view")
def section_list(request: HttpRequest) -> HttpResponse:
    q = request.GET.get("q", "").strip()
    sections = selectors.sections_search(tenant=request.access.tenant, q=q).only(*LIST_FIELDS)
    context = {"q": q, "page": paginate(request, sections)}
    return console_render(request, "adminui/sections/list.html", context, partial="results")


@console_view("sections.view")
def section_detail(request: HttpRequest) -> HttpResponse:
    tenant = request.access.tenant
    section_id = request.GET.get("id", "")
    if not section_id:
        raise Http404("no section id")
    try:
        section = selectors.section_get(tenant=tenant, section_id=section_id)
    except NotFound:
        section = None
    citing = selectors.trails_citing_with_state(tenant=tenant, section=section, section_id=section_id)
    if section is None and not citing:
        raise Http404("section not found")
    context = {
        "section": section,
        "section_id": section_id,
        "citing": citing,
        "list_url": f"{reverse('adminui:sections')}?{urlencode({'tenant': tenant.slug})}",
        "switch_url": reverse("adminui:sections"),
    }
    return console_render(request, "adminui/sections/detail.html", context)
