"""The one gate every console page and action goes through: login, tenant from
``?tenant=<slug>``, the role's capability (tenants.selectors.CAPABILITIES), the HTTP
method, and ``Vary: HX-Request``. A view without this decorator is a bug (a test checks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.utils.cache import patch_vary_headers

from tenants.selectors import SUPERUSER, operator_access

ALL_TENANTS = "*"

View = Callable[..., HttpResponse]


def console_view(capability: str, *, methods: Sequence[str] = ("GET", "HEAD"), all_tenants: bool = False
                 ) -> Callable[[View], View]:
    """Require ``capability`` in the tenant named by ``?tenant=`` (default: the operator's
    first). ``all_tenants``: superusers may pass ``?tenant=*`` (``request.access.tenant`` is
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
                request.access = operator_access(user=request.user, tenant_slug=None, capability=capability)
                if request.access.role != SUPERUSER:
                    raise Http404("all tenants: superusers only")
                request.all_tenants = True
            else:
                request.access = operator_access(user=request.user, tenant_slug=slug, capability=capability)
            response = view(request, *args, **kwargs)
            patch_vary_headers(response, ["HX-Request"])
            return response

        wrapper.console_capability = capability  # type: ignore[attr-defined]
        return wrapper

    return decorate
