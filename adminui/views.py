"""The operators' console (placeholder until the console issue lands)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    return HttpResponse("Trailcache console")
