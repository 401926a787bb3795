"""API key authentication: ``Authorization: Bearer tc_<prefix>_<secret>``."""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from tenants.caller import Caller, caller_for_key
from tenants.models import ApiKey
from tenants.services import api_key_authenticate


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Caller, ApiKey] | None:
        """``request.user`` is the key's ``Caller`` (tenant, scope prefixes, permissions);
        ``request.auth`` the key itself."""
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, raw = header.partition(" ")
        if keyword.lower() != self.keyword.lower() or not raw.strip():
            raise exceptions.AuthenticationFailed("Authorization must be 'Bearer <api key>'.")
        key = api_key_authenticate(raw.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return caller_for_key(key), key

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to a missing or bad key.
        return self.keyword
