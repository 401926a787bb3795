"""Trails: the filtered, sorted, paginated list with bulk quarantine / release / purge, and
one trail's detail (steps, cited sections as they are now, recall history)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from adminui.access import console_view
from adminui.forms import TrailActionForm
from adminui.rendering import console_render, paginate
from cachecore.engine.outcome import state_counts
from cachecore.filtersets import TrailFilterSet
from cachecore.models import TrailStatus
from cachecore.selectors.citations import cited_sections_now
from cachecore.selectors.recalls import recalls_for_trail
from cachecore.selectors.trails import trail_get, trail_status_counts, trails_visible
from cachecore.services.trails import trail_set_status, trails_purge

LIST_TEMPLATE = "adminui/trails/list.html"
# The list never loads embeddings, normalised queries or steps.
LIST_FIELDS = ("id", "tenant_id", "scope", "query", "query_redacted_at", "status", "subject", "hits",
               "created_at", "expires_at", "last_hit_at")
ACTION_STATUS = {"quarantine": TrailStatus.QUARANTINED, "release": TrailStatus.ACTIVE}


def _list_query(request: HttpRequest, **drop: Any) -> str:
    """The list's query string (filters, sort, tenant), without the keys in ``drop``."""
    params = request.GET.copy()
    for key in (*drop, "page"):
        params.pop(key, None)
    params["tenant"] = request.access.tenant.slug
    return params.urlencode()


def _list_context(request: HttpRequest) -> dict[str, Any]:
    base = trails_visible(caller=request.caller).only(*LIST_FIELDS)
    filterset = TrailFilterSet(request.GET, queryset=base)
    page = paginate(request, filterset.qs)
    without_status = request.GET.copy()
    without_status.pop("status", None)
    without_status.pop("sort", None)
    counts = trail_status_counts(trails=TrailFilterSet(without_status, queryset=base).qs)
    list_url = reverse("adminui:trails")
    status_tabs = [
        {"value": "", "label": "All", "count": sum(counts.values()),
         "url": f"{list_url}?{_list_query(request, status=True)}"},
        *[{"value": s, "label": TrailStatus(s).label, "count": n,
           "url": f"{list_url}?{_list_query(request, status=True)}&status={s}"} for s, n in counts.items()],
    ]
    return {
        "filter": filterset,
        "page": page,
        "status_tabs": status_tabs,
        "current_status": request.GET.get("status", ""),
        "current_sort": filterset.current_sort,
        "section_filter": request.GET.get("section", ""),
        "without_section": f"{list_url}?{_list_query(request, section=True)}",
        "list_query": _list_query(request),
        "can_manage": request.access.can("trails.manage"),
    }


@console_view("trails.view")
def trail_list(request: HttpRequest) -> HttpResponse:
    return console_render(request, LIST_TEMPLATE, _list_context(request), partial="results")


@console_view("trails.manage", methods=("POST",))
def trail_action(request: HttpRequest) -> HttpResponse:
    """Quarantine, release or purge the checked trails. Without ``confirm`` it answers with a
    confirmation naming how many trails; with it, it acts (one audited service call)."""
    form = TrailActionForm(request.POST)
    next_url = request.POST.get("next") or f"{reverse('adminui:trails')}?{_list_query(request)}"
    cancel_url = request.POST.get("cancel") or next_url
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = reverse("adminui:trails")
    if not url_has_allowed_host_and_scheme(cancel_url, allowed_hosts={request.get_host()}):
        cancel_url = next_url
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
        return _after_action(request, next_url)
    action, ids = form.cleaned_data["action"], form.cleaned_data["ids"]
    if not form.cleaned_data["confirm"]:
        count = trails_visible(caller=request.caller).filter(pk__in=ids).count()
        confirm = {"action": action, "label": TrailActionForm.ACTIONS[action], "ids": ids, "count": count,
                   "next": next_url, "cancel_url": cancel_url}
        if request.htmx and not request.POST.get("next"):
            return console_render(request, LIST_TEMPLATE, {**_list_context(request), "confirm": confirm,
                                                           "selected": set(ids)}, partial="results")
        return console_render(request, "adminui/trails/confirm.html", {"confirm": confirm})
    if action == "purge":
        done = trails_purge(caller=request.caller, trail_ids=ids)
        messages.success(request, f"Purged {done} trail{'s' if done != 1 else ''}.")
    else:
        done = trail_set_status(caller=request.caller, trail_ids=ids, status=ACTION_STATUS[action])
        verb = "Quarantined" if action == "quarantine" else "Released"
        skipped = len(ids) - done
        note = f" ({skipped} already {ACTION_STATUS[action].label.lower()} or gone)" if skipped else ""
        messages.success(request, f"{verb} {done} trail{'s' if done != 1 else ''}{note}.")
    return _after_action(request, next_url)


def _after_action(request: HttpRequest, next_url: str) -> HttpResponse:
    if request.htmx and not request.POST.get("next"):
        # From the list: swap the results (rows, counts, message) in place.
        return console_render(request, LIST_TEMPLATE, _list_context(request), partial="results")
    return HttpResponseRedirect(next_url)


@console_view("trails.view")
def trail_detail(request: HttpRequest, trail_id: str) -> HttpResponse:
    tenant = request.access.tenant
    trail = trail_get(caller=request.caller, trail_id=trail_id)  # NotFound → 404 (console_view)
    # In citation order, as the citations themselves (each row's section namespace from there).
    namespaces = [c.section_namespace for c in trail.citations.all()]
    cited = [{"c": c, "state": c.state.value, "namespace": namespace}
             for c, namespace in zip(cited_sections_now(caller=request.caller, trail_id=str(trail.pk)), namespaces)]
    recalls = recalls_for_trail(caller=request.caller, trail=trail)
    detail_url = f"{reverse('adminui:trail', args=[trail.pk])}?{urlencode({'tenant': tenant.slug})}"
    context = {
        "trail": trail,
        "cited": cited,
        "states": state_counts(c["c"].state for c in cited),
        "recalls": recalls,
        "detail_url": detail_url,
        "list_url": f"{reverse('adminui:trails')}?{urlencode({'tenant': tenant.slug})}",
        "can_manage": request.access.can("trails.manage"),
        "can_sections": request.access.can("sections.view"),
        "switch_url": reverse("adminui:trails"),
    }
    return console_render(request, "adminui/trails/detail.html", context)
