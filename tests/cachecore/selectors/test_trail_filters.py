"""Trail filters: one definition (cachecore.selectors.trail_filters) behind the console's trail
list (TrailFilterSet) and the compliance export, so both select the same trails."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.db.models import Q

from cachecore.errors import InvalidInput
from cachecore.filtersets import TrailFilterSet
from cachecore.models import Trail
from cachecore.selectors.trail_filters import INSTANT_ERROR, instant, status_valid, trail_filter
from cachecore.services.exports import _instant, export_trails
from tests.factories import make_trail


def test_a_bare_date_is_that_utc_day():
    assert instant("2024-03-01", end_of_day=False) == datetime(2024, 3, 1, tzinfo=UTC)
    assert instant(date(2024, 3, 1), end_of_day=True) == datetime(2024, 3, 2, tzinfo=UTC)
    assert instant("2024-03-01T10:30:00", end_of_day=True) == datetime(2024, 3, 1, 10, 30, tzinfo=UTC)
    assert instant("", end_of_day=False) is None and instant(None, end_of_day=True) is None
    with pytest.raises(ValueError, match=INSTANT_ERROR):
        instant("yesterday", end_of_day=False)


def test_the_condition_from_validated_values():
    assert trail_filter() == Q()
    assert trail_filter(scope="a", status="", text="  ") == Q(scope="a")
    since = datetime(2024, 3, 1, tzinfo=UTC)
    assert trail_filter(status="stale", created_since=since, section="doc#1") == (
        Q(status="stale") & Q(citations__section_id="doc#1") & Q(created_at__gte=since))
    assert trail_filter(text=" Reset ") == Q(query__icontains="Reset")
    assert status_valid("active") and status_valid(None) and not status_valid("gone")


def test_the_export_keeps_its_error_shape_for_a_bad_date():
    with pytest.raises(InvalidInput) as caught:
        _instant("soon", field="until", end_of_day=True)
    assert caught.value.fields == {"until": ["expected an ISO 8601 date or datetime"]}


@pytest.mark.django_db
def test_the_list_and_the_export_select_the_same_trails(make_tenant):
    tenant = make_tenant()
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    old = make_trail(tenant, scope="a")
    Trail.objects.filter(pk=old.pk).update(created_at=today - timedelta(days=3))
    make_trail(tenant, scope="a", status="stale")
    make_trail(tenant, scope="b")
    for listed, exported in [
        ({"scope": "a"}, {"scope": "a"}),
        ({"status": "stale"}, {"status": "stale"}),
        ({"created_from": str(today.date())}, {"since": str(today.date())}),
        ({"created_to": str((today - timedelta(days=2)).date())}, {"until": str((today - timedelta(days=2)).date())}),
    ]:
        params = {k: (_instant(v, field=k, end_of_day=k == "until") if k in ("since", "until") else v)
                  for k, v in exported.items()}
        on_the_list = set(TrailFilterSet(listed, queryset=Trail.objects.filter(tenant=tenant)).qs.values_list("pk"))
        in_the_export = set(export_trails(tenant=tenant, params=params).values_list("pk"))
        assert on_the_list == in_the_export and on_the_list, (listed, exported)
