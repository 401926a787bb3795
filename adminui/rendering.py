"""Rendering shared by the console's views: the layout context (tenant, role, what the role
may do) and "one template, full page or its htmx partial"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from cachecore.selectors.stats import capped_count
from tenants.capabilities import CAPABILITIES, role_can

PER_PAGE = 50
COUNT_CAP = 10_000


def console_render(
    request: HttpRequest, template: str, context: dict[str, Any], *, partial: str | None = None, status: int = 200,
) -> HttpResponse:
    """Render ``template`` as a full page, or only ``template#partial`` for an htmx request
    (history restores ask for the full page)."""
    access = request.access  # type: ignore[attr-defined]
    ctx = {
        "access": access,
        "tenant": access.tenant,
        "all_tenants": getattr(request, "all_tenants", False),
        "can": {cap.replace(".", "_"): role_can(access.role, cap) for cap in CAPABILITIES},
        "switch_url": request.path,
        **context,
    }
    htmx = getattr(request, "htmx", None)
    if partial and htmx and not htmx.history_restore_request:
        template = f"{template}#{partial}"
    return render(request, template, ctx, status=status)


@dataclass
class Page:
    items: list[Any]
    number: int
    per_page: int
    total: int
    capped: bool
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def start_index(self) -> int:
        return (self.number - 1) * self.per_page + 1 if self.items else 0

    @property
    def end_index(self) -> int:
        return (self.number - 1) * self.per_page + len(self.items)

    @property
    def total_label(self) -> str:
        return f"{self.total:,}+" if self.capped else f"{self.total:,}"


def paginate(request: HttpRequest, queryset: QuerySet, *, per_page: int = PER_PAGE) -> Page:
    """One page (LIMIT/OFFSET, one extra row tells whether there is a next page) and a count
    capped at COUNT_CAP: two queries, fast on any table size. Pages past the cap aren't
    offered; narrow the filters instead."""
    try:
        number = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        number = 1
    number = min(number, COUNT_CAP // per_page)
    offset = (number - 1) * per_page
    rows = list(queryset[offset: offset + per_page + 1])
    if number == 1 and len(rows) <= per_page:
        total, capped = len(rows), False  # the whole list fits on this page: no count query
    else:
        total, capped = capped_count(queryset=queryset, cap=COUNT_CAP)
    has_next = len(rows) > per_page and offset + per_page < COUNT_CAP
    return Page(items=rows[:per_page], number=number, per_page=per_page, total=total, capped=capped,
                has_next=has_next)
