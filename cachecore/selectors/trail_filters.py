"""Which trails a filter selects: one definition for the console's trail list
(``cachecore.filtersets.TrailFilterSet``) and the compliance export
(``cachecore.services.exports``), so a scope, a status, a subject or a date range can't mean
one thing on the list and another in the file.

- ``scope``, ``status``, ``subject``: exact; ``status`` one of ``TrailStatus``;
- ``text``: a substring of the stored query, case-insensitive (pg_trgm GIN index);
- ``section``: cites that section id (one citation per trail and section: no duplicates), in
  ``section_namespace`` when given (else in any namespace);
- ``created_since`` / ``created_until`` and ``last_hit_since`` / ``last_hit_until``: an
  instant, since inclusive, until exclusive. A bare date means that UTC day: since its start,
  until the end of it (``instant``).

Empty values select everything; the caller's restriction (``visible_to``) is applied to the
queryset before, never here.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from cachecore.models import TrailStatus

TRAIL_STATUSES = tuple(TrailStatus.values)
STATUS_ERROR = f"one of {', '.join(TRAIL_STATUSES)}"
INSTANT_ERROR = "expected an ISO 8601 date or datetime"
# A bare date as an exclusive end is the start of the next day: the calendar's last day has none.
LATEST_DATE = date.max - timedelta(days=1)
LATEST_DATE_ERROR = f"a date up to {LATEST_DATE.isoformat()}"


def date_in_range(value: date | None) -> None:
    """A validator for the date filters (the console's fields): refuses the calendar's last day."""
    from django.core.exceptions import ValidationError

    if value is not None and value > LATEST_DATE:
        raise ValidationError(f"Pick {LATEST_DATE_ERROR}.", code="max_value")


def instant(value: Any, *, end_of_day: bool) -> datetime | None:
    """An aware datetime from a datetime, a date or an ISO 8601 string (None for empty); a bare
    date is the start of that UTC day, or with ``end_of_day`` the start of the next one (an
    exclusive bound that takes in the whole day). ValueError when a string is neither."""
    if value in (None, ""):
        return None
    if isinstance(value, str):
        # A bare date first: parse_datetime would read it as midnight.
        try:
            parsed: date | datetime | None = parse_date(value) or parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None:
            raise ValueError(INSTANT_ERROR)
        value = parsed
    if not isinstance(value, datetime):
        if value > LATEST_DATE:
            raise ValueError(LATEST_DATE_ERROR)
        day = value + timedelta(days=1) if end_of_day else value
        value = datetime.combine(day, time.min)
    if timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value


def status_valid(status: str | None) -> bool:
    return not status or status in TRAIL_STATUSES


def trail_filter(
    *, scope: str | None = None, status: str | None = None, subject: str | None = None, text: str | None = None,
    section: str | None = None, section_namespace: str | None = None, created_since: Any = None,
    created_until: Any = None, last_hit_since: Any = None, last_hit_until: Any = None,
) -> Q:
    """The condition on ``Trail`` for validated filter values (see the module's docstring)."""
    q = Q()
    exact = (("scope", scope), ("status", status), ("subject", subject))
    for field, value in exact:
        if value:
            q &= Q(**{field: value})
    if section:
        # One Q: the id and the namespace of the same citation.
        q &= Q(citations__section_id=section, **({} if section_namespace is None
                                                 else {"citations__section_namespace": section_namespace}))
    if text and text.strip():
        q &= Q(query__icontains=text.strip())
    for lookup, value in (("created_at__gte", created_since), ("created_at__lt", created_until),
                          ("last_hit_at__gte", last_hit_since), ("last_hit_at__lt", last_hit_until)):
        if value:
            q &= Q(**{lookup: value})
    return q
