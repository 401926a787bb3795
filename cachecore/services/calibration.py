"""The tenant's operating point, learned from its agents' citations: suggested from the labels in
the recall log (engine/operating_point.py), applied by an admin or, when the tenant opts in,
automatically — audited either way."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q

from cachecore.access import require_unrestricted
from cachecore.engine.decide import Reason, small_tenant_prefetch_cut
from cachecore.engine.operating_point import Suggestion, suggest
from cachecore.models import RecallEvent
from cachecore.selectors.sections import term_frequencies
from tenants.caller import Caller, require_capability, tenant_caller
from tenants.models import AuditAction, Tenant
from tenants.services import audit_record
from tenants.settings_diff import settings_audit_details, settings_snapshot

SYSTEM_ACTOR = "system:calibration"
# What applying a suggestion may change (audited old → new, like any settings change).
CALIBRATED_SETTINGS = ("prefetch_confidence", "hint_confidence", "prefetch_paused", "small_tenant_cut")


# The most recent labels are enough to place the operating point; more only costs the read.
MAX_LABELS = 20_000


# The answers the prefetch cut decides: served, a grey-band hint, or a prefetch held back by a
# pause. A hint for polarity, ambiguity, a nearer wording of the same sections, a changed
# section, a bar or pending chunks is a guard's, not the cut's, so its label says nothing about
# where the cut should be.
CUT_REASONS = (Reason.MATCH, Reason.LOW_CONFIDENCE, Reason.PREFETCH_PAUSED)


def calibration_labels(*, tenant: Tenant) -> list[tuple[float, bool]]:
    # The engine's own read of the whole tenant's recall log (for ``operating_point``).
    """(confidence, cited) of the most recent labelled recalls still in the log (served or
    shadow) whose answer the cut decided, at most ``MAX_LABELS``: not a question asked again (its
    trail's own question, or one an agent cited it for: served over the cut, so its label says
    nothing about it)."""
    rows = (RecallEvent.objects.filter(tenant=tenant, offered_cited__isnull=False, confidence__isnull=False,
                                       reason__in=[r.value for r in CUT_REASONS], asked_again=False)
            .filter(Q(outcome__in=["prefetch", "hint"]) | ~Q(shadow_outcome=""))
            .order_by("-created_at").values_list("confidence", "offered_cited")[:MAX_LABELS])
    return [(float(c), bool(cited)) for c, cited in rows]


def operating_point(*, caller: Caller) -> Suggestion | None:
    """The suggested prefetch confidence for the caller's tenant's target false-prefetch rate,
    with its evidence (or hints only when no cut meets it); None while there are too few labels.
    It is learned from every scope's recalls: a scope-limited caller is refused (ScopeForbidden)."""
    require_unrestricted(caller, "the operating point")
    return _operating_point(caller.tenant)


def cut_in_force(tenant: Tenant) -> tuple[float, int]:
    """The prefetch confidence recall applies for ``tenant`` now, and the tenant's section count:
    its setting, raised while ``small_tenant_cut`` is on in a tenant smaller than the scorer's fit
    (``decide.small_tenant_prefetch_cut``, as recall applies it)."""
    sections, _ = term_frequencies(tenant=tenant, terms=[])
    if not tenant.small_tenant_cut:
        return tenant.prefetch_confidence, sections
    return small_tenant_prefetch_cut(tenant.prefetch_confidence, sections), sections


def _operating_point(tenant: Tenant) -> Suggestion | None:
    # The labels are judged at the cut recall applies, not at the setting under it: a small
    # tenant's labels between the two were hints, and the suggestion is a cut to apply.
    return suggest(calibration_labels(tenant=tenant), current_cut=cut_in_force(tenant)[0],
                   target_false=tenant.target_false_prefetch, noise_allowance=tenant.noise_allowance,
                   paused=tenant.prefetch_paused)


def operating_point_summary(*, caller: Caller) -> dict[str, Any] | None:
    """The operating point and its evidence as the API's stats show it; None for a scope-limited
    caller (it is learned from every scope's recalls)."""
    if caller.scope_limited:
        return None
    return suggestion_as_dict(_operating_point(caller.tenant), tenant=caller.tenant)


def suggestion_as_dict(suggestion: Suggestion | None, *, tenant: Tenant) -> dict[str, Any]:
    """The suggestion and its evidence for the API and the console (``tenant``: the one it was
    made for, by ``operating_point``)."""
    if suggestion is None:
        return {"labels": len(calibration_labels(tenant=tenant)), "enough_labels": False,
                "current_prefetch_confidence": tenant.prefetch_confidence,
                "applied_prefetch_confidence": cut_in_force(tenant)[0], "suggested": None,
                "prefetch_paused": tenant.prefetch_paused, "noise_allowance": tenant.noise_allowance}

    def figures(f: Any) -> dict[str, Any] | None:
        return None if f is None else {"prefetch_confidence": f.cut, "served": f.served, "false": f.false,
                                       "false_rate": f.false_rate, "false_rate_upper": f.false_rate_upper,
                                       "hit_rate": f.hit_rate}

    return {"labels": suggestion.labels, "cited": suggestion.cited, "enough_labels": True,
            "target_false_prefetch": suggestion.target_false,
            "current_prefetch_confidence": tenant.prefetch_confidence,
            # The suggestion judged the labels at the cut in force (``_operating_point``).
            "applied_prefetch_confidence": suggestion.current.cut,
            "current": figures(suggestion.current), "suggested": figures(suggestion.suggested),
            "meets_target": suggestion.meets_target, "noise_floor": suggestion.noise_floor,
            "changes": suggestion.changes,
            "noise_allowance": suggestion.noise_allowance, "move": suggestion.move.value,
            "prefetch_paused": tenant.prefetch_paused, "hint_only": suggestion.hint_only}


def operating_point_apply(*, caller: Caller, automatic: bool = False) -> Suggestion | None:
    """Apply the suggestion to the caller's tenant (a settings change: ``settings.manage``,
    ``require_capability``; the daily beat acts as the tenant): the suggested prefetch confidence
    (and the hint band's start under it if needed), or hints only when no cut meets the target;
    one audit entry with the evidence. None when nothing changes.

    A suggested cut is the cut recall applies from then on: where the small-tenant cut was raising
    the setting, applying one turns ``small_tenant_cut`` off (the tenant's own labels have placed
    the cut; a prior fitted on other corpora no longer does). A pause leaves it as it is."""
    require_capability(caller, "settings.manage")
    tenant = caller.tenant
    suggestion = _operating_point(tenant)
    if suggestion is None or not suggestion.changes:
        return None
    new = suggestion.suggested
    with transaction.atomic():
        locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
        before = settings_snapshot(locked, CALIBRATED_SETTINGS)
        locked.prefetch_paused = suggestion.hint_only
        if new is not None:
            # The suggestion judged the labels at the cut in force: above the setting, the size rule raised it.
            raised_by_size = suggestion.current.cut != locked.prefetch_confidence
            locked.prefetch_confidence = new.cut
            locked.hint_confidence = min(locked.hint_confidence, new.cut)
            locked.small_tenant_cut = locked.small_tenant_cut and not raised_by_size
        locked.full_clean()
        locked.save(update_fields=list(CALIBRATED_SETTINGS))
        audit_record(
            tenant=locked, actor=caller.user, actor_label=caller.actor_label, action=AuditAction.CALIBRATION_APPLY,
            target="prefetch_confidence",
            details={**settings_audit_details(before, settings_snapshot(locked, CALIBRATED_SETTINGS)),
                     "automatic": automatic, "move": suggestion.move.value,
                     "labels": suggestion.labels, "target_false": suggestion.target_false,
                     "noise_allowance": suggestion.noise_allowance,
                     "meets_target": suggestion.meets_target,
                     "false_rate_upper": new.false_rate_upper if new else None,
                     "hit_rate": new.hit_rate if new else 0.0},
        )
    for field in CALIBRATED_SETTINGS:
        setattr(tenant, field, getattr(locked, field))
    return suggestion


def operating_points_auto_apply() -> int:
    """Daily: apply the suggestion for every tenant that opted in, as the tenant itself
    (``tenant_caller``). Returns tenants changed."""
    changed = 0
    for tenant in Tenant.objects.filter(auto_calibrate=True):
        if operating_point_apply(caller=tenant_caller(tenant, actor_label=SYSTEM_ACTOR), automatic=True):
            changed += 1
    return changed
