"""The scope-prefix rule, in one place: a list of prefixes allows a scope when it is empty (every
scope) or the scope starts with one of them. ``scope_allowed`` answers it for one scope in Python,
``scope_q`` as a filter for the database; API keys' limits, a tenant's shadow prefixes and every
restricted queryset (``visible_to``) use these two and nothing else. No model import: models use
it too."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q


def scope_allowed(prefixes: Iterable[str], scope: str) -> bool:
    """Whether ``prefixes`` allow ``scope`` (no prefixes: every scope)."""
    prefixes = tuple(prefixes)
    return not prefixes or any(scope.startswith(p) for p in prefixes)


def scope_q(prefixes: Iterable[str], *, field: str = "scope") -> Q:
    """The same rule as a filter on ``field`` (a scope column or a path to one,
    ``trail__scope``); an empty ``Q()`` (everything) when there are no prefixes."""
    q = Q()
    for prefix in prefixes:
        q |= Q(**{f"{field}__startswith": prefix})
    return q
