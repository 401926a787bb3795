"""Tenant settings (admins): retention and matching, validated by the service, audited
old → new."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from adminui import charts
from adminui.access import console_view
from adminui.forms import CONSOLE_SETTINGS_FIELDS, TenantSettingsForm
from adminui.rendering import console_render
from cachecore.selectors.stats import stats_for_tenant
from cachecore.services import calibration
from tenants import services
from tenants.caller import Caller
from tenants.settings_diff import settings_changed, settings_snapshot

RETENTION = ("trail_ttl_days", "pending_ttl_hours", "query_retention_days", "recall_log_retention_days")
GROUPS = (
    ("Retention", RETENTION),
    ("Matching and admission", tuple(f for f in CONSOLE_SETTINGS_FIELDS if f not in RETENTION
                                     and not f.startswith("resolver_"))),
    ("Resolver", tuple(f for f in CONSOLE_SETTINGS_FIELDS if f.startswith("resolver_"))),
)


@console_view("settings.manage", methods=("GET", "HEAD", "POST"))
def tenant_settings(request: HttpRequest) -> HttpResponse:
    tenant = request.access.tenant
    if request.method == "POST":
        form = TenantSettingsForm(request.POST)
        if form.is_valid():
            try:
                before = settings_snapshot(tenant, CONSOLE_SETTINGS_FIELDS)
                services.tenant_settings_update(caller=request.caller, changes=form.cleaned_data)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                changed = settings_changed(before, settings_snapshot(tenant, CONSOLE_SETTINGS_FIELDS))
                if changed:
                    labels = ", ".join(str(form.fields[f].label).lower() for f in changed)
                    messages.success(request, f"Saved: {labels}.")
                else:
                    messages.info(request, "Nothing changed.")
                return HttpResponseRedirect(f"{request.path}?tenant={tenant.slug}")
        status = 400
    else:
        form = TenantSettingsForm(initial=settings_snapshot(tenant, CONSOLE_SETTINGS_FIELDS))
        status = 200
    groups = [(title, [form[name] for name in names]) for title, names in GROUPS if names]
    context = {"form": form, "groups": groups, "ranges": TenantSettingsForm.ranges(),
               **_calibration_context(request.caller)}
    return console_render(request, "adminui/settings/edit.html", context, status=status)


def _calibration_context(caller: Caller) -> dict:
    """The operating point suggested by the agents' citations, with its evidence and plot, and
    what shadow recalls estimate."""
    tenant = caller.tenant
    suggestion = calibration.operating_point(caller=caller)
    applied, sections = calibration.cut_in_force(tenant)
    return {
        # A tenant smaller than the scorer's fit applies a higher cut than its setting.
        "small_tenant": {"sections": sections, "cut": applied} if applied != tenant.prefetch_confidence else None,
        "calibration": calibration.suggestion_as_dict(suggestion, tenant=tenant),
        "calibration_chart": charts.calibration_curve(
            suggestion.curve, current=applied,
            suggested=suggestion.suggested.cut if suggestion.suggested else None) if suggestion else None,
        "shadow": stats_for_tenant(caller=caller)["shadow"] if tenant.shadow_mode else None,
    }


@console_view("settings.manage", methods=("POST",))
def calibration_apply(request: HttpRequest) -> HttpResponse:
    """Apply the suggested prefetch confidence (audited with its evidence)."""
    tenant = request.caller.tenant
    applied = calibration.operating_point_apply(caller=request.caller)
    if applied is None:
        messages.info(request, "Nothing to apply: the suggestion is the current setting, or there is none yet.")
    elif tenant.prefetch_paused:
        messages.success(request, f"Prefetch paused, hints only: no prefetch confidence meets the target "
                                  f"(from {applied.labels} labels); a question a trail was cited for "
                                  f"is still served that trail's text when asked again.")
    else:
        messages.success(request, f"Prefetch confidence set to {tenant.prefetch_confidence:.2f} "
                                  f"(from {applied.labels} labels).")
    return HttpResponseRedirect(f"/console/settings/?tenant={tenant.slug}")
