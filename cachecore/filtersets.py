"""FilterSets shared by the console and the API, so filtering can't drift between them.
Always applied to a queryset already scoped to one tenant."""

from __future__ import annotations

from datetime import date, datetime, time

import django_filters
from django.db.models import F, QuerySet
from django.utils import timezone

from cachecore.models import Trail, TrailStatus
from cachecore.selectors.trail_filters import date_in_range, instant, trail_filter

# Sort keys → ORDER BY; the trailing id keeps pages stable when the key ties.
TRAIL_SORTS: dict[str, tuple] = {
    "-created": (F("created_at").desc(), F("id").desc()),
    "created": (F("created_at").asc(), F("id").asc()),
    "-last_hit": (F("last_hit_at").desc(nulls_last=True), F("id").desc()),
    "last_hit": (F("last_hit_at").asc(nulls_last=True), F("id").asc()),
    "-hits": (F("hits").desc(), F("id").desc()),
    "hits": (F("hits").asc(), F("id").asc()),
}
DEFAULT_TRAIL_SORT = "-created"


def day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


class TrailFilterSet(django_filters.FilterSet):
    """Text (``q``, a substring of the query: pg_trgm GIN index), scope, status, a cited
    ``section`` id (``namespace``: in that namespace), created and last-hit dates (inclusive days), and ``sort``."""

    q = django_filters.CharFilter(method="filter_query", label="Query contains")
    scope = django_filters.CharFilter(method="filter_exact", label="Scope")
    status = django_filters.ChoiceFilter(method="filter_exact", choices=TrailStatus.choices, empty_label="any status",
                                         label="Status")
    section = django_filters.CharFilter(method="filter_section", label="Cites section")
    created_from = django_filters.DateFilter(method="filter_from", field_name="created_at", label="Created from",
                                             validators=[date_in_range])
    created_to = django_filters.DateFilter(method="filter_to", field_name="created_at", label="Created to",
                                           validators=[date_in_range])
    last_hit_from = django_filters.DateFilter(method="filter_from", field_name="last_hit_at", label="Last hit from",
                                              validators=[date_in_range])
    last_hit_to = django_filters.DateFilter(method="filter_to", field_name="last_hit_at", label="Last hit to",
                                            validators=[date_in_range])
    sort = django_filters.ChoiceFilter(
        method="filter_sort", label="Sort", empty_label=None,
        choices=[
            ("-created", "newest first"), ("created", "oldest first"),
            ("-last_hit", "last hit"), ("-hits", "most hits"), ("hits", "fewest hits"),
            ("last_hit", "least recently hit"),
        ],
    )

    class Meta:
        model = Trail
        fields: list[str] = []

    # Every filter is cachecore.selectors.trail_filters.trail_filter, the one the export uses.
    _DAY_BOUNDS = {"created_at": ("created_since", "created_until"),
                   "last_hit_at": ("last_hit_since", "last_hit_until")}

    def filter_query(self, queryset: QuerySet[Trail], name: str, value: str) -> QuerySet[Trail]:
        return queryset.filter(trail_filter(text=value))

    def filter_exact(self, queryset: QuerySet[Trail], name: str, value: str) -> QuerySet[Trail]:
        return queryset.filter(trail_filter(**{name: value}))

    def filter_section(self, queryset: QuerySet[Trail], name: str, value: str) -> QuerySet[Trail]:
        # ``namespace`` (the section page's link gives it, "" for the shared one): that section
        # only; without it, the id in any namespace.
        return queryset.filter(trail_filter(section=value, section_namespace=self.data.get("namespace")))

    def filter_from(self, queryset: QuerySet[Trail], name: str, value: date) -> QuerySet[Trail]:
        since = self._DAY_BOUNDS[name][0]
        return queryset.filter(trail_filter(**{since: instant(value, end_of_day=False)}))

    def filter_to(self, queryset: QuerySet[Trail], name: str, value: date) -> QuerySet[Trail]:
        until = self._DAY_BOUNDS[name][1]
        return queryset.filter(trail_filter(**{until: instant(value, end_of_day=True)}))

    def filter_sort(self, queryset: QuerySet[Trail], name: str, value: str) -> QuerySet[Trail]:
        return queryset.order_by(*TRAIL_SORTS.get(value, TRAIL_SORTS[DEFAULT_TRAIL_SORT]))

    @property
    def qs(self) -> QuerySet[Trail]:
        queryset = super().qs
        if not (self.is_bound and self.form.is_valid() and self.form.cleaned_data.get("sort")):
            queryset = queryset.order_by(*TRAIL_SORTS[DEFAULT_TRAIL_SORT])
        return queryset

    @property
    def current_sort(self) -> str:
        if self.is_bound and self.form.is_valid():
            return self.form.cleaned_data.get("sort") or DEFAULT_TRAIL_SORT
        return DEFAULT_TRAIL_SORT
