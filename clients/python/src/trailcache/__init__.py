"""Trailcache's Python client: ``Trailcache`` / ``AsyncTrailcache`` over REST API v1.

Extras: ``trailcache.mcp_server`` (``pip install 'trailcache[mcp]'``), ``trailcache.langchain``
(``[langchain]``) and ``trailcache.llamaindex`` (``[llamaindex]``)."""

from trailcache._client import AsyncTrailcache, RetryPolicy, Trailcache, __version__
from trailcache.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GoneError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ResponseError,
    ServerError,
    ServiceUnavailableError,
    TrailcacheError,
    TransportError,
    UnknownSectionsError,
)
from trailcache.models import RecallResult, RecallSection, SectionIn, Step

__all__ = [
    "APIError", "AsyncTrailcache", "AuthenticationError", "BadRequestError", "ConflictError", "GoneError",
    "MethodNotAllowedError", "NotFoundError", "PayloadTooLargeError", "PermissionDeniedError", "RateLimitError",
    "RecallResult", "RecallSection", "ResponseError", "RetryPolicy", "SectionIn", "ServerError",
    "ServiceUnavailableError", "Step", "Trailcache", "TrailcacheError", "TransportError", "UnknownSectionsError",
    "__version__",
]
