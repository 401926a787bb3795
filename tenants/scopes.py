"""The scope-prefix rule, in one place. A prefix admits a scope when it equals the scope or ends at
a delimiter of it (``:`` or ``/``): ``team-a:`` admits ``team-a:x``; ``team-a`` (a key made before
prefixes had to end in a delimiter) admits ``team-a`` itself and ``team-a:…``/``team-a/…``, never
``team-ab``. A list of prefixes admits a scope when it is empty (every scope) or one of them does.

``scope_allowed`` answers it for one scope in Python, ``scope_q`` as a filter for the database,
``prefix_within`` for one prefix inside another, ``SCOPE_PATTERN`` is what a scope is made of,
``scope_prefix_problem`` says why a new key's prefix is refused, ``namespace_of`` names a
limited caller's own id namespace. API keys' limits, a tenant's shadow prefixes, every
restricted queryset (``visible_to``) and the scopes of sections use these and nothing else. No
model import: models use it too."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db.models import Q

# What a scope is made of: the API refuses any other (``api.serializers``), so a key's prefix
# made of other characters would admit no scope a request can name.
SCOPE_CHARS = r"[A-Za-z0-9._:/-]{1,200}"
SCOPE_PATTERN = re.compile(rf"^{SCOPE_CHARS}$")

DELIMITERS = (":", "/")
# A section's scope entry meaning "every scope" (``cachecore.models.Section.scopes``).
EVERY_SCOPE = "*"
# The tenant's shared id namespace (``cachecore.models.Section.namespace``): every section of a
# tenant-wide caller, and a limited caller's unless the id is taken there by a section it may
# not write (``namespace_of``).
SHARED_NAMESPACE = ""
# Joins a limited caller's prefixes into its namespace. Never in a prefix: the console and the
# CLI split prefixes on it, and ``scope_prefix_problem`` refuses it.
NAMESPACE_SEPARATOR = ","


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


def namespace_of(prefixes: Iterable[str]) -> str:
    """The id namespace of a caller limited to ``prefixes``: their canonical form (distinct,
    sorted, joined by ``NAMESPACE_SEPARATOR``), so keys limited to the same prefixes share one;
    ``SHARED_NAMESPACE`` for a tenant-wide caller (no prefixes)."""
    return NAMESPACE_SEPARATOR.join(sorted(set(prefixes)))


def scope_prefix_problem(prefix: str) -> str | None:
    """Why a new API key may not be limited to ``prefix`` (None: it may)."""
    if NAMESPACE_SEPARATOR in prefix:
        return f"scope prefix {prefix!r} may not contain {NAMESPACE_SEPARATOR!r} (it separates prefixes)"
    if problem := scope_prefix_chars_problem(prefix):
        return problem
    if not prefix.endswith(DELIMITERS):
        return (f"scope prefix {prefix!r} must end in ':' or '/' (for example {prefix + ':'!r}), so that it "
                "cannot admit a neighbouring scope that merely starts with the same letters")
    return None


def scope_prefix_chars_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot start any scope a request may name (None: it can): it holds what
    ``SCOPE_PATTERN`` does not take. Every prefix a tenant sets (keys', shadow mode's) is checked."""
    if SCOPE_PATTERN.fullmatch(prefix):
        return None
    return (f"scope prefix {prefix!r} may hold only what a scope holds: letters A-Z and a-z, digits and "
            "'.', '_', ':', '/', '-', at most 200 of them")


def validate_scope_prefix(prefix: str) -> None:
    """``scope_prefix_chars_problem`` as a model field validator."""
    problem = scope_prefix_chars_problem(prefix)
    if problem:
        raise ValidationError(problem, code="invalid")


# ---- the scopes of a section: which scopes may see it -------------------------------------------
# A section carries scope entries (prefixes by the same rule). ``[EVERY_SCOPE]``: every scope;
# an empty list: no scope-limited caller, only tenant-wide ones (keys without scope limits, the
# console's operators, the tenant's own jobs), in every scope.

def entries_admit_scope(entries: Iterable[str], scope: str, *, tenant_wide: bool) -> bool:
    """Whether a section with ``entries`` is served in ``scope`` (to a tenant-wide caller when
    ``tenant_wide``): an entry admits the scope, or there are none and the caller is tenant-wide."""
    entries = tuple(entries)
    if not entries:
        return tenant_wide
    return any(e == EVERY_SCOPE or prefix_admits(e, scope) for e in entries)


def entries_visible(entries: Iterable[str], prefixes: Iterable[str]) -> bool:
    """Whether a caller limited to ``prefixes`` (none: tenant-wide) sees a section with
    ``entries``: tenant-wide callers see every section; a limited one those with an entry that
    overlaps one of its prefixes (some scope both admit), or that is every scope."""
    prefixes = tuple(prefixes)
    if not prefixes:
        return True
    return any(e == EVERY_SCOPE or prefixes_overlap(e, p) for e in entries for p in prefixes)


def entries_within(entries: Iterable[str], prefixes: Iterable[str]) -> bool:
    """Whether a section with ``entries`` lies entirely within ``prefixes`` (what a limited
    caller may overwrite or delete): every entry inside one of them; tenant-wide: always."""
    prefixes, entries = tuple(prefixes), tuple(entries)
    if not prefixes:
        return True
    return bool(entries) and all(e != EVERY_SCOPE and any(prefix_within(e, p) for p in prefixes) for e in entries)


def _admits_sql(prefix: str, scope: str) -> str:
    """``prefix_admits`` in SQL, over two text expressions."""
    return (f"({scope} = {prefix} OR (right({prefix}, 1) IN (':', '/') AND starts_with({scope}, {prefix})) "
            f"OR (right({prefix}, 1) NOT IN (':', '/') AND (starts_with({scope}, {prefix} || ':') "
            f"OR starts_with({scope}, {prefix} || '/'))))")


def entries_admit_scope_sql(entries: str, scope: str, tenant_wide: str) -> str:
    """``entries_admit_scope`` in SQL: ``entries`` a text[] expression (``s.scopes``), ``scope``
    a text one and ``tenant_wide`` a boolean one (placeholders or columns; each spelled once)."""
    return (f"((cardinality({entries}) = 0 AND {tenant_wide}) OR EXISTS (SELECT 1 FROM unnest({entries}) AS e(p), "
            f"(SELECT {scope} AS v) AS q WHERE e.p = '{EVERY_SCOPE}' OR {_admits_sql('e.p', 'q.v')}))")


def entries_visible_sql(entries: str, prefixes: str) -> str:
    """``entries_visible`` for a limited caller in SQL: ``prefixes`` a non-empty text[] expression."""
    return (f"EXISTS (SELECT 1 FROM unnest({entries}) AS e(p), unnest({prefixes}) AS k(p) "
            f"WHERE e.p = '{EVERY_SCOPE}' OR {_admits_sql('k.p', 'e.p')} OR {_admits_sql('e.p', 'k.p')})")
