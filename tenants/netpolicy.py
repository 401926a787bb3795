"""Where the service may send a tenant's resolver calls: https to public addresses only.

Refused: private, loopback, link-local, multicast, reserved, unspecified and shared (CGNAT)
ranges, IPv4 and IPv6 (an IPv4-mapped or 6to4/NAT64 address is judged by the IPv4 inside).
Development mode (``TRAILCACHE_DEV``) also allows loopback, over http too, for local resolvers;
``TRAILCACHE_RESOLVER_ALLOWED_NETWORKS`` lists networks allowed anyway (for an internal
resolver an operator trusts), empty by default."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def _embedded_ipv4(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            return address.ipv4_mapped
        if address.sixtofour:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    networks = getattr(settings, "TRAILCACHE_RESOLVER_ALLOWED_NETWORKS", [])
    return [ipaddress.ip_network(n, strict=False) for n in networks]


def address_problem(address: Address) -> str | None:
    """Why the service must not connect to ``address``, or None."""
    if any(address in network for network in _allowed_networks()):
        return None
    inner = _embedded_ipv4(address)
    if inner.is_loopback or address.is_loopback:
        return None if settings.TRAILCACHE_DEV else "a loopback address"
    if inner.is_unspecified or address.is_unspecified:
        return "an unspecified address"
    if inner.is_link_local or address.is_link_local:
        return "a link-local address"
    if inner.is_multicast or address.is_multicast:
        return "a multicast address"
    if isinstance(inner, ipaddress.IPv4Address) and inner in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if inner.is_private or address.is_private or getattr(address, "is_site_local", False):
        return "a private address"
    if inner.is_reserved or address.is_reserved:
        return "a reserved address"
    if not inner.is_global:
        return "an address that is not public"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a resolver, judged without DNS (when saved), or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "The resolver URL is not a valid URL."
    host = parts.hostname or ""
    if not host:
        return "The resolver URL needs a host."
    if parts.username or parts.password:
        return "The resolver URL must not carry a user name or password (use the resolver secret)."
    try:
        literal: Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    is_loopback = (literal is not None and _embedded_ipv4(literal).is_loopback) or host == "localhost"
    if parts.scheme == "http":
        if not (settings.TRAILCACHE_DEV and is_loopback):
            return "The resolver must be an https:// URL (http only to loopback in development mode)."
    elif parts.scheme != "https":
        return "The resolver must be an https:// URL."
    if port == 0:
        return "The resolver URL's port must be between 1 and 65535."
    if literal is not None:
        problem = address_problem(literal)
        if problem:
            return f"The resolver URL's host {host} is {problem}: the service only calls public addresses."
    elif host == "localhost" and not settings.TRAILCACHE_DEV:
        return "The resolver URL's host localhost is a loopback address: the service only calls public addresses."
    return None
