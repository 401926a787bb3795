"""Reads of trails: one trail, the trails a caller sees, counts by status, the most used (of a
caller's tenant, or of every tenant for a superuser)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet

from cachecore.errors import NotFound
from cachecore.models import Trail, TrailStatus
from tenants.caller import Caller, require_superuser


def trail_get(*, caller: Caller, trail_id: object) -> Trail:
    """A trail the caller sees (its tenant, its scopes), else NotFound."""
    try:
        return Trail.objects.visible_to(caller).get(pk=trail_id)
    except (Trail.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
        raise NotFound("trail not found") from exc


def trail_lock(*, caller: Caller, trail_id: object) -> Trail:
    """``trail_get`` locked for an update or a delete (inside the writer's transaction)."""
    try:
        return Trail.objects.visible_to(caller).select_for_update().get(pk=trail_id)
    except (Trail.DoesNotExist, ValueError, TypeError, ValidationError) as exc:
        raise NotFound("trail not found") from exc


def trails_visible(*, caller: Caller) -> QuerySet[Trail]:
    return Trail.objects.visible_to(caller)


def trail_status_counts(*, trails: QuerySet[Trail]) -> dict[str, int]:
    """Trails of an already filtered queryset by status (one GROUP BY)."""
    rows = dict(trails.order_by().values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    return {status: rows.get(status, 0) for status in TrailStatus.values}


def top_trails_by_hits(*, caller: Caller, limit: int = 10) -> list[Trail]:
    """The caller's most recalled trails."""
    return _top_by_hits(Trail.objects.visible_to(caller), limit)


def top_trails_by_hits_all_tenants(*, caller: Caller, limit: int = 10) -> list[Trail]:
    """The most recalled trails of every tenant: superusers only (SuperuserRequired otherwise)."""
    require_superuser(caller)
    return _top_by_hits(Trail.objects.all(), limit)


def _top_by_hits(trails: QuerySet[Trail], limit: int) -> list[Trail]:
    trails = trails.filter(hits__gt=0)
    return list(
        trails.select_related("tenant").only("id", "tenant__slug", "scope", "query", "status", "hits", "last_hit_at")
        .order_by("-hits", "-last_hit_at")[:limit]
    )
