"""API key authentication: ``Authorization: Bearer tc_<prefix>_<secret>``."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from tenants.models import ApiKey, Tenant
from tenants.services import api_key_authenticate


@dataclass(frozen=True)
class ApiPrincipal:
    """The caller behind a key: DRF's ``request.user``."""

    key: ApiKey
    is_authenticated: bool = True

    @property
    def tenant(self) -> Tenant:
        return self.key.tenant


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, raw = header.partition(" ")
        if keyword.lower() != self.keyword.lower() or not raw.strip():
            raise exceptions.AuthenticationFailed("Authorization must be 'Bearer <api key>'.")
        key = api_key_authenticate(raw.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return ApiPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to a missing or bad key.
        return self.keyword
