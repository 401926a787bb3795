"""API keys (admins): list with last use and permissions, create (the key is shown once, in the
response to the create, never stored; permissions chosen, every one by default), edit a key's
permissions (audited old → new), revoke."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from adminui.access import console_view
from adminui.forms import ApiKeyCreateForm, ApiKeyPermissionsForm
from adminui.rendering import console_render
from tenants import selectors, services
from tenants.models import LIMITED_SECTIONS_WRITE_NOTE, ApiKey, KeyPermission


def _page(request: HttpRequest, form: ApiKeyCreateForm, *, new_key: str = "", status: int = 200) -> HttpResponse:
    keys = selectors.api_keys_for_tenant(caller=request.caller)
    return console_render(request, "adminui/apikeys/list.html",
                          {"form": form, "keys": keys, "new_key": new_key, "permission_choices": KeyPermission.choices},
                          status=status)


def _warn_limited_writer(request: HttpRequest, key: ApiKey) -> None:
    if key.scope_prefixes and KeyPermission.SECTIONS_WRITE in key.permissions:
        messages.warning(request, f"“{key.name}”: {LIMITED_SECTIONS_WRITE_NOTE}")


@console_view("apikeys.manage", methods=("GET", "HEAD", "POST"))
def api_keys(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _page(request, ApiKeyCreateForm())
    form = ApiKeyCreateForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    key, raw = services.api_key_create(
        caller=request.caller, name=form.cleaned_data["name"],
        scope_prefixes=form.cleaned_data["scope_prefixes"], permissions=form.cleaned_data["permissions"],
    )
    messages.success(request, f"Created key “{key.name}”. Copy it now: it is not shown again.")
    _warn_limited_writer(request, key)
    response = _page(request, ApiKeyCreateForm(), new_key=raw, status=201)
    response["Cache-Control"] = "no-store"
    return response


@console_view("apikeys.manage", methods=("POST",))
def api_key_permissions(request: HttpRequest, key_id: str) -> HttpResponse:
    form = ApiKeyPermissionsForm(request.POST)
    if not form.is_valid():
        key = selectors.api_key_get(caller=request.caller, key_id=key_id)
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"“{key.name}”: {error}")
        return HttpResponseRedirect(f"{reverse('adminui:apikeys')}?tenant={request.access.tenant.slug}")
    change = services.api_key_permissions_update(caller=request.caller, key_id=key_id,
                                                 permissions=form.cleaned_data["permissions"])
    if change.changed:
        messages.success(request, f"Permissions of “{change.key.name}” saved: "
                                  f"{', '.join(form.cleaned_data['permissions'])}.")
        _warn_limited_writer(request, change.key)
    else:
        messages.info(request, f"“{change.key.name}”: nothing changed.")
    return HttpResponseRedirect(f"{reverse('adminui:apikeys')}?tenant={request.access.tenant.slug}")


@console_view("apikeys.manage", methods=("POST",))
def api_key_revoke(request: HttpRequest, key_id: str) -> HttpResponse:
    change = services.api_key_revoke(caller=request.caller, key_id=key_id)
    key = change.key
    if change.changed:
        messages.success(request, f"Revoked “{key.name}” (tc_{key.prefix}_…). Calls with it now get 401.")
    else:
        messages.info(request, f"“{key.name}” was already revoked.")
    return HttpResponseRedirect(f"{reverse('adminui:apikeys')}?tenant={request.access.tenant.slug}")
