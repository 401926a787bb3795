"""Reads of trails: one trail, a tenant's trails, counts by status, the most used."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet

from cachecore.errors import NotFound
from cachecore.models import Trail, TrailStatus
from tenants.models import Tenant


def trail_get(*, tenant: Tenant, trail_id: object) -> Trail:
    try:
        return Trail.objects.get(tenant=tenant, pk=trail_id)
    except (Trail.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
        raise NotFound("trail not found") from exc


def trails_for_tenant(*, tenant: Tenant) -> QuerySet[Trail]:
    return Trail.objects.filter(tenant=tenant)


def trail_status_counts(*, trails: QuerySet[Trail]) -> dict[str, int]:
    """Trails of an already filtered queryset by status (one GROUP BY)."""
    rows = dict(trails.order_by().values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    return {status: rows.get(status, 0) for status in TrailStatus.values}


def top_trails_by_hits(*, tenant: Tenant | None, limit: int = 10) -> list[Trail]:
    trails = Trail.objects.filter(hits__gt=0)
    if tenant is not None:
        trails = trails.filter(tenant=tenant)
    return list(
        trails.select_related("tenant").only("id", "tenant__slug", "scope", "query", "status", "hits", "last_hit_at")
        .order_by("-hits", "-last_hit_at")[:limit]
    )
