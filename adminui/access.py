"""The one gate every console page and action goes through: login, tenant from
``?tenant=<slug>``, the role's capability (tenants.capabilities.CAPABILITIES), the HTTP
method, and ``Vary: HX-Request``. It builds the request's ``Caller`` (``request.caller``,
tenants.caller) that views read through, and answers a domain error (cachecore.errors) with the
status its class names, as the API does (api.exceptions): views never translate them by hand.
A view without this decorator is a bug (a test checks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.utils.cache import patch_vary_headers

from adminui.rendering import console_render
from cachecore.errors import DomainError
from cachecore.models import Trail
from tenants.caller import caller_for_operator
from tenants.models import Tenant
from tenants.selectors import SUPERUSER, operator_access, operator_tenants

ALL_TENANTS = "*"
# The tenant an operator last worked in, in a signed cookie naming the operator (it outlives
# the session, so it survives logging out and in): where a link without ``?tenant=`` (the
# login redirect, a bookmark) lands them. No model field, no migration.
LAST_TENANT_COOKIE = "tc_tenant"
LAST_TENANT_SALT = "adminui.last-tenant"
LAST_TENANT_MAX_AGE = 365 * 24 * 3600
DEMO_TENANT = "demo"

View = Callable[..., HttpResponse]


def console_view(capability: str, *, methods: Sequence[str] = ("GET", "HEAD"), all_tenants: bool = False
                 ) -> Callable[[View], View]:
    """Require ``capability`` in the tenant named by ``?tenant=`` (default: see
    landing_tenant_slug). ``all_tenants``: superusers may pass ``?tenant=*`` (``request.access.tenant`` is
    then their first tenant and ``request.all_tenants`` is True)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if request.method not in methods:
                return HttpResponseNotAllowed(methods)
            slug = request.GET.get("tenant") or None
            request.all_tenants = False
            if slug == ALL_TENANTS:
                if not all_tenants:
                    raise Http404("one tenant at a time here")
                access = operator_access(user=request.user, tenant_slug=None, capability=capability)
                if access.role != SUPERUSER:
                    raise Http404("all tenants: superusers only")
                request.all_tenants = True
            else:
                access = operator_access(user=request.user, tenant_slug=slug or landing_tenant_slug(request),
                                         capability=capability)
            # One object: the operator's Caller is the request's access too (tenant, role,
            # tenants, capabilities) — what views read through and what services restrict by.
            request.caller = request.access = caller_for_operator(
                user=request.user, tenant=access.tenant, role=access.role, tenants=access.tenants)
            try:
                response = view(request, *args, **kwargs)
            except DomainError as exc:
                response = domain_error_response(request, exc)
            if not request.all_tenants and _remembered_slug(request) != request.access.tenant.slug:
                _remember(response, request, request.access.tenant.slug)
            patch_vary_headers(response, ["HX-Request"])
            return response

        wrapper.console_capability = capability  # type: ignore[attr-defined]
        return wrapper

    return decorate


def domain_error_response(request: HttpRequest, exc: DomainError) -> HttpResponse:
    """A domain error as the console answers it: the status of its class (cachecore.errors, the
    table the API answers by too): 404 and 403 as Django's pages, the others (409 not ready,
    410 gone, 400, 422, 503, …) as a console page naming the problem."""
    if exc.status_code == 404:
        raise Http404(exc.message) from exc
    if exc.status_code == 403:
        raise PermissionDenied(exc.message) from exc
    return console_render(request, "adminui/error.html", {"error": exc}, status=exc.status_code)


def _remembered_slug(request: HttpRequest) -> str | None:
    value = request.get_signed_cookie(LAST_TENANT_COOKIE, default=None, salt=LAST_TENANT_SALT,
                                      max_age=LAST_TENANT_MAX_AGE)
    user_pk, _, slug = (value or "").partition(":")
    return slug if slug and user_pk == str(request.user.pk) else None


def _remember(response: HttpResponse, request: HttpRequest, slug: str) -> None:
    response.set_signed_cookie(LAST_TENANT_COOKIE, f"{request.user.pk}:{slug}", salt=LAST_TENANT_SALT,
                               max_age=LAST_TENANT_MAX_AGE, path="/console/", httponly=True, samesite="Lax",
                               secure=settings.SESSION_COOKIE_SECURE)


def landing_tenant_slug(request: HttpRequest) -> str | None:
    """Where an operator lands without ``?tenant=``: the tenant they last used (remembered in
    a signed cookie), else the demo tenant, else the first of theirs with trails, else their first."""
    pairs = operator_tenants(user=request.user)
    slugs = [t.slug for t, _ in pairs]
    remembered = _remembered_slug(request)
    if remembered in slugs:
        return remembered
    if DEMO_TENANT in slugs:
        return DEMO_TENANT
    with_data = Tenant.objects.filter(pk__in=[t.pk for t, _ in pairs]).filter(
        Exists(Trail.objects.filter(tenant=OuterRef("pk")))).order_by("slug").values_list("slug", flat=True)
    return next(iter(with_data[:1]), slugs[0] if slugs else None)
