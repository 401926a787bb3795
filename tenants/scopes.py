"""The scope-prefix rule, in one place. A prefix admits a scope when it equals the scope or ends at
a delimiter of it (``:`` or ``/``): ``team-a:`` admits ``team-a:x``; ``team-a`` (a key made before
prefixes had to end in a delimiter) admits ``team-a`` itself and ``team-a:…``/``team-a/…``, never
``team-ab``. A list of prefixes admits a scope when it is empty (every scope) or one of them does.

``scope_allowed`` answers it for one scope in Python, ``scope_q`` as a filter for the database,
``prefix_within`` for one prefix inside another, ``scope_prefix_problem`` says why a new key's
prefix is refused. API keys' limits, a tenant's shadow prefixes, every restricted queryset
(``visible_to``) and the scopes of sections use these and nothing else. No model import: models
use it too."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

DELIMITERS = (":", "/")
# A section's scope entry meaning "every scope" (``cachecore.models.Section.scopes``).
EVERY_SCOPE = "*"


def prefix_admits(prefix: str, scope: str) -> bool:
    """Whether one ``prefix`` admits ``scope``: equal, or the prefix ends at a delimiter of it."""
    if scope == prefix:
        return True
    if prefix.endswith(DELIMITERS):
        return scope.startswith(prefix)
    return scope.startswith(tuple(prefix + d for d in DELIMITERS))


def scope_allowed(prefixes: Iterable[str], scope: str) -> bool:
    """Whether ``prefixes`` allow ``scope`` (no prefixes: every scope)."""
    prefixes = tuple(prefixes)
    return not prefixes or any(prefix_admits(p, scope) for p in prefixes)


def prefix_within(inner: str, outer: str) -> bool:
    """Whether every scope ``inner`` admits is admitted by ``outer`` (a prefix inside another)."""
    return prefix_admits(outer, inner)


def prefixes_overlap(a: str, b: str) -> bool:
    """Whether some scope is admitted by both prefixes (one lies within the other)."""
    return prefix_admits(a, b) or prefix_admits(b, a)


def scope_q(prefixes: Iterable[str], *, field: str = "scope") -> Q:
    """The same rule as a filter on ``field`` (a scope column or a path to one,
    ``trail__scope``); an empty ``Q()`` (everything) when there are no prefixes."""
    q = Q()
    for prefix in prefixes:
        q |= Q(**{field: prefix})
        for start in ([prefix] if prefix.endswith(DELIMITERS) else [prefix + d for d in DELIMITERS]):
            q |= Q(**{f"{field}__startswith": start})
    return q


def scope_prefix_problem(prefix: str) -> str | None:
    """Why a new API key may not be limited to ``prefix`` (None: it may)."""
    if not prefix.endswith(DELIMITERS):
        return (f"scope prefix {prefix!r} must end in ':' or '/' (for example {prefix + ':'!r}), so that it "
                "cannot admit a neighbouring scope that merely starts with the same letters")
    return None
