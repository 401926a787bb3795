"""Sections: search by id or text, filter by scope (those a key limited to it is served; ``-``:
tenant-wide only); one section's text, hash, scopes and the trails citing it.
Section ids hold ``/ # :``, so the detail takes ``?id=`` (url-encoded), not a path segment, and
``&namespace=`` for a limited key's own section (absent: the shared one)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse

from adminui.access import console_view
from adminui.rendering import console_render, paginate
from cachecore.errors import NotFound
from cachecore.selectors.citations import trails_citing_with_state
from cachecore.selectors.sections import section_get, sections_search

LIST_FIELDS = ("id", "external_id", "namespace", "sha256", "token_count", "updated_at", "text", "scopes")


@console_view("sections.view")
def section_list(request: HttpRequest) -> HttpResponse:
    q = request.GET.get("q", "").strip()
    scope = request.GET.get("scope", "").strip()
    sections = sections_search(caller=request.caller, q=q, scope=scope, cited_by=True).only(*LIST_FIELDS)
    context = {"q": q, "scope": scope, "page": paginate(request, sections)}
    return console_render(request, "adminui/sections/list.html", context, partial="results")


@console_view("sections.view")
def section_detail(request: HttpRequest) -> HttpResponse:
    tenant = request.access.tenant
    section_id = request.GET.get("id", "")
    # The id namespace ("" the shared one: docs/scopes.md, "Id namespaces").
    namespace = request.GET.get("namespace", "")
    if not section_id:
        raise Http404("no section id")
    try:
        section = section_get(caller=request.caller, section_id=section_id, namespace=namespace)
    except NotFound:
        section = None  # deleted: still shown while trails cite it
    citing = trails_citing_with_state(caller=request.caller, section=section, section_id=section_id,
                                      namespace=namespace)
    if section is None and not citing:
        raise Http404("section not found")
    context = {
        "section": section,
        "section_id": section_id,
        "namespace": namespace,
        "citing": citing,
        "list_url": f"{reverse('adminui:sections')}?{urlencode({'tenant': tenant.slug})}",
        # Exactly this section's trails (its namespace too), for review or purge in the list.
        "trails_url": f"{reverse('adminui:trails')}?"
                      f"{urlencode({'tenant': tenant.slug, 'section': section_id, 'namespace': namespace})}",
        "switch_url": reverse("adminui:sections"),
    }
    return console_render(request, "adminui/sections/detail.html", context)
