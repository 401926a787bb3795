"""Strict, typed reading of the environment: a bad value fails loudly at start."""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse


class ConfigError(SystemExit):
    pass


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be a boolean (true/false/1/0), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str) -> list[str]:
    """A comma-separated list of IP networks (``10.0.0.0/8,fd00::/8``), each checked."""
    import ipaddress

    networks = env_list(name, [])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError as exc:
            raise ConfigError(f"{name} must list IP networks (like 10.0.0.0/8), got {network!r}") from exc
    return networks


def parse_database_url(url: str) -> dict[str, object]:
    """postgres://user:password@host:port/name?sslmode=… → a Django DATABASES entry."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ConfigError(f"DATABASE_URL must be a postgresql:// URL, got scheme {parsed.scheme!r}")
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ConfigError("DATABASE_URL must name a database")
    options: dict[str, str] = {}
    for pair in filter(None, parsed.query.split("&")):
        key, _, value = pair.partition("=")
        options[key] = unquote(value)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }
