"""Console forms: input parsing only; the services validate and write."""

from __future__ import annotations

import uuid

from django import forms
from django.db import models
from django.forms.models import fields_for_model

from cachecore.selectors.trail_filters import date_in_range
from tenants.models import (
    DEFAULT_KEY_PERMISSIONS,
    LIMITED_SECTIONS_WRITE_NOTE,
    AuditAction,
    KeyPermission,
    Tenant,
    default_key_permissions,
)
from tenants.scopes import scope_prefix_problem
from tenants.services import SETTINGS_FIELDS
from tenants.settings_diff import SECRET_SETTINGS


class TrailIdsField(forms.Field):
    """Checked trail ids (``ids`` repeated); any UUID passes here, the services touch only
    the tenant's own trails."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {"required": "Select at least one trail.", "invalid": "Not a trail id."}

    def to_python(self, value: object) -> list[str]:
        values = value if isinstance(value, list | tuple) else ([value] if value else [])
        ids = []
        for raw in values:
            try:
                ids.append(str(uuid.UUID(str(raw))))
            except ValueError as exc:
                raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from exc
        return list(dict.fromkeys(ids))


class TrailActionForm(forms.Form):
    ACTIONS = {"quarantine": "Quarantine", "release": "Release", "purge": "Purge"}

    action = forms.ChoiceField(choices=list(ACTIONS.items()))
    ids = TrailIdsField()
    confirm = forms.BooleanField(required=False)
    next = forms.CharField(required=False)


# Secrets are never rendered into a page; they are set by other means.
CONSOLE_SETTINGS_FIELDS = tuple(f for f in SETTINGS_FIELDS if f not in SECRET_SETTINGS)


def _formfield(model_field: models.Field, **kwargs: object) -> forms.Field | None:
    if isinstance(model_field, models.URLField):
        kwargs["assume_scheme"] = "https"
    return model_field.formfield(**kwargs)


class TenantSettingsForm(forms.Form):
    """The settings fields with the model's validators, ranges and help text. A plain form
    (not a ModelForm) so the tenant object is untouched until the service saves it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update(fields_for_model(Tenant, fields=CONSOLE_SETTINGS_FIELDS, formfield_callback=_formfield))
        for name in ("similarity_threshold", "prefetch_confidence", "hint_confidence", "coverage_floor"):
            self.fields[name].widget.attrs.update({"step": "0.01", "min": "0", "max": "1"})
        for field in self.fields.values():
            if not isinstance(field.widget, forms.CheckboxInput):
                field.widget.attrs.setdefault("class", "input")

    @staticmethod
    def ranges() -> dict[str, str]:
        out = {}
        for name in CONSOLE_SETTINGS_FIELDS:
            field = Tenant._meta.get_field(name)
            lo = next((v.limit_value for v in field.validators if v.__class__.__name__ == "MinValueValidator"), None)
            hi = next((v.limit_value for v in field.validators if v.__class__.__name__ == "MaxValueValidator"), None)
            if lo is not None and hi is not None:
                out[name] = f"{lo:g} – {hi:g}" if isinstance(lo, float) else f"{lo:,} – {hi:,}"
        return out


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(
        max_length=100, widget=forms.TextInput(attrs={"class": "input", "placeholder": "e.g. support bot"}),
    )
    scope_prefixes = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"class": "input", "placeholder": "group:, paper:"}),
        help_text="Comma-separated, each of letters, digits and . _ : / - (as a scope is) and ending in “:” or “/” "
        "(group:, paper/). Empty: the key may use every scope.",
    )

    permissions = forms.MultipleChoiceField(
        required=False, choices=KeyPermission.choices, initial=default_key_permissions,
        widget=forms.SelectMultiple(attrs={"class": "input", "size": len(KeyPermission.values)}),
        help_text="What the key may do. Least privilege by default: "
        f"{', '.join(DEFAULT_KEY_PERMISSIONS)} (no section writes, exports or erasure). Ctrl/⌘-click to "
        "change the selection; a form posted without this list (a script, say) gets that default. "
        + LIMITED_SECTIONS_WRITE_NOTE,
    )
    # Rendered by the page: tells "nothing ticked" apart from "no list sent" (→ the default).
    permissions_shown = forms.BooleanField(required=False, widget=forms.HiddenInput, initial=True)

    def clean(self) -> dict[str, object]:
        data = super().clean()
        if not data.get("permissions_shown"):
            data["permissions"] = default_key_permissions()
        elif not data.get("permissions"):
            self.add_error("permissions", "Choose at least one permission (or revoke the key instead).")
        return data

    def clean_scope_prefixes(self) -> list[str]:
        raw = self.cleaned_data["scope_prefixes"]
        prefixes = [p.strip() for p in raw.replace("\n", ",").split(",") if p.strip()]
        if any(len(p) > 200 for p in prefixes):
            raise forms.ValidationError("A scope prefix has at most 200 characters.")
        problems = [problem for problem in map(scope_prefix_problem, prefixes) if problem]
        if problems:
            raise forms.ValidationError(problems)
        return prefixes


class ApiKeyPermissionsForm(forms.Form):
    permissions = forms.MultipleChoiceField(
        required=True, choices=KeyPermission.choices, widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one permission (or revoke the key instead)."},
    )


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(required=False, choices=[("", "any action"), *AuditAction.choices])
    actor = forms.CharField(required=False, widget=forms.TextInput(attrs={"placeholder": "operator or key"}))
    target = forms.CharField(required=False, widget=forms.TextInput(attrs={"placeholder": "target contains"}))
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), validators=[date_in_range])
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), validators=[date_in_range])
