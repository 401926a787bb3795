"""Rows made straight through the ORM (synthetic unit vectors): fast, no model calls."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
from django.utils import timezone

from cachecore.embedding import DIMENSIONS
from cachecore.models import Citation, RecallEvent, Trail, TrailStatus
from tenants.models import Tenant

_rng = np.random.default_rng(7)


def unit_vector() -> np.ndarray:
    v = _rng.standard_normal(DIMENSIONS).astype(np.float32)
    return v / np.linalg.norm(v)


def make_trail(tenant: Tenant, *, query: str = "how do I reset my password?", cited: list[str] | None = None,
               **fields: Any) -> Trail:
    fields.setdefault("status", TrailStatus.ACTIVE)
    fields.setdefault("expires_at", timezone.now() + timedelta(days=tenant.trail_ttl_days))
    fields.setdefault("scope", "default")
    trail = Trail.objects.create(tenant=tenant, query=query, query_normalised=query.lower(),
                                 embedding=unit_vector(), steps=[], **fields)
    for position, section_id in enumerate(cited or ["doc#1"]):
        Citation.objects.create(trail=trail, tenant=tenant, section_id=section_id, position=position,
                                recorded_hash="0" * 64)
    return trail


def make_recall_event(tenant: Tenant, **fields: Any) -> RecallEvent:
    fields.setdefault("scope", "default")
    fields.setdefault("outcome", "miss")
    fields.setdefault("latency_ms", 3.0)
    return RecallEvent.objects.create(tenant=tenant, **fields)
