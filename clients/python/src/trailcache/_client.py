"""``Trailcache`` and ``AsyncTrailcache``: the REST API v1 on httpx.

Retries (with exponential backoff and jitter, ``Retry-After`` honoured):
- a connection that could not be made (nothing was sent) and a 429 (the service refused before
  doing anything): every call;
- a timeout or a broken connection after the request went out, and 5xx: idempotent calls only —
  GET, PUT (an identical upsert changes nothing), DELETE, and ``recall`` (repeating it only logs
  one more lookup). ``record`` and ``feedback`` are never repeated after they may have arrived.

``recall`` fails open by default: on any error it returns a miss (``failed_open=True``) and logs
one warning per outage, so a cache never breaks the agent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from trailcache import errors
from trailcache import models as m

logger = logging.getLogger("trailcache")

__version__ = "0.1.0"
DEFAULT_TIMEOUT = 10.0
DEFAULT_RECALL_TIMEOUT = 5.0
# The service's limits: 1,000 sections and 1 MiB per upsert body; batches stay under both.
MAX_SECTIONS_PER_UPSERT = 1000
MAX_UPSERT_BODY_BYTES = 900_000
IDEMPOTENT_METHODS = frozenset({"GET", "PUT", "DELETE", "HEAD"})
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

T = TypeVar("T", bound=BaseModel)
SectionLike = m.SectionIn | Mapping[str, Any] | tuple[str, str]
StepLike = m.Step | Mapping[str, Any]


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` after the first attempt; delays double from ``backoff`` up to
    ``max_backoff`` (half fixed, half random); a 429's ``Retry-After`` is waited as given, up to
    ``max_retry_after``."""

    max_retries: int = 3
    backoff: float = 0.25
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        base = min(self.max_backoff, self.backoff * (2 ** attempt))
        return base / 2 + random.uniform(0, base / 2)


@dataclass
class _Call:
    method: str
    path: str
    model: type[BaseModel] | None = None
    json: Any = None
    params: dict[str, Any] | None = None
    idempotent: bool | None = None
    timeout: float | None = None
    raw: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def retry_after_sending(self) -> bool:
        return self.idempotent if self.idempotent is not None else self.method in IDEMPOTENT_METHODS


def _segment(value: str) -> str:
    """One path segment: ids may hold ``/ # : ?``; everything is percent-encoded."""
    return quote(str(value), safe="")


def _recall_id(value: str | m.RecallResult | None) -> str | None:
    if isinstance(value, m.RecallResult):
        return value.recall_id or None
    return value or None


def _sections(sections: Iterable[SectionLike] | Mapping[str, str]) -> list[m.SectionIn]:
    if isinstance(sections, Mapping):
        return [m.SectionIn(id=k, text=v) for k, v in sections.items()]
    out = []
    for item in sections:
        if isinstance(item, m.SectionIn):
            out.append(item)
        elif isinstance(item, tuple):
            out.append(m.SectionIn(id=item[0], text=item[1]))
        else:
            out.append(m.SectionIn.model_validate(dict(item)))
    return out


def _batches(sections: list[m.SectionIn], batch_size: int) -> list[list[m.SectionIn]]:
    batch_size = max(1, min(batch_size, MAX_SECTIONS_PER_UPSERT))
    batches: list[list[m.SectionIn]] = []
    current: list[m.SectionIn] = []
    size = 0
    for section in sections:
        cost = len(json.dumps(section.body(), ensure_ascii=False).encode()) + 1
        if current and (len(current) >= batch_size or size + cost > MAX_UPSERT_BODY_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append(section)
        size += cost
    if current:
        batches.append(current)
    return batches


def _sum_upserts(results: list[m.SectionsUpsertResult]) -> m.SectionsUpsertResult:
    return m.SectionsUpsertResult(
        created=sum(r.created for r in results), updated=sum(r.updated for r in results),
        unchanged=sum(r.unchanged for r in results), invalidated_trails=sum(r.invalidated_trails for r in results),
    )


class _Base:
    """What both clients share: configuration, the calls, retry decisions, parsing, fail-open."""

    def __init__(self, base_url: str | None, api_key: str | None, *, scope: str, timeout: float,
                 recall_timeout: float, retry: RetryPolicy | None, fail_open: bool) -> None:
        base_url = base_url or os.environ.get("TRAILCACHE_URL") or "http://127.0.0.1:8000"
        api_key = api_key or os.environ.get("TRAILCACHE_API_KEY")
        if not api_key:
            raise errors.TrailcacheError("an API key is required (api_key=… or TRAILCACHE_API_KEY)")
        self.base_url = base_url.rstrip("/")
        self.scope = scope
        self.timeout = timeout
        self.recall_timeout = recall_timeout
        self.retry = retry or RetryPolicy()
        self.fail_open = fail_open
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "User-Agent": f"trailcache-python/{__version__}",
        }
        self._failing = False

    # --- retry and parsing -------------------------------------------------------------------
    def _retry_delay(self, call: _Call, attempt: int, *, exc: Exception | None = None,
                     response: httpx.Response | None = None) -> float | None:
        if attempt >= self.retry.max_retries:
            return None
        if exc is not None:
            unsent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
            return self.retry.delay(attempt) if unsent or call.retry_after_sending else None
        assert response is not None
        if response.status_code == 429:
            return self.retry.delay(attempt, errors.parse_retry_after(response.headers.get("retry-after")))
        if response.status_code in RETRY_STATUSES and call.retry_after_sending:
            return self.retry.delay(attempt)
        return None

    @staticmethod
    def _parse(call: _Call, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            if not isinstance(body, dict):
                body = {"error": f"http_{response.status_code}", "detail": response.text[:300], "fields": {}}
            raise errors.error_for(response.status_code, body, dict(response.headers))
        if call.raw:
            return response.content
        if response.status_code == 204 or call.model is None:
            return None
        try:
            return call.model.model_validate(response.json())
        except (ValueError, ValidationError) as exc:
            raise errors.ResponseError(f"{call.method} {call.path}: unexpected response: {exc}") from exc

    def _transport_error(self, call: _Call, exc: Exception) -> errors.TransportError:
        return errors.TransportError(f"{call.method} {call.path}: {exc.__class__.__name__}: {exc}")

    def _failed_open(self, exc: Exception) -> m.RecallResult:
        if not self._failing:
            self._failing = True
            logger.warning("trailcache: recall failed (%s); answering misses until the service answers again", exc)
        else:
            logger.debug("trailcache: recall failed again: %s", exc)
        return m.RecallResult.fail_open_miss(f"{exc.__class__.__name__}: {exc}")

    def _recovered(self) -> None:
        if self._failing:
            self._failing = False
            logger.info("trailcache: recall answers again")

    # --- the calls ---------------------------------------------------------------------------
    def _recall_call(self, query: str, scope: str | None, budget_tokens: int | None, subject: str | None,
                     shadow: bool | None = None) -> _Call:
        body = m.Recall(scope=scope or self.scope, query=query, budget_tokens=budget_tokens, subject=subject,
                        shadow=shadow)
        return _Call("POST", "/api/v1/recall", m.RecallResult, body.body(), idempotent=True,
                     timeout=self.recall_timeout)

    def _record_call(self, query: str, cited: Iterable[str], *, scope: str | None, steps: Iterable[StepLike] | None,
                     accepted: bool | None, source: str, subject: str | None, answer: str | None,
                     recall_id: str | m.RecallResult | None) -> _Call:
        body = m.TrailRecord(
            scope=scope or self.scope, query=query, cited=list(cited),
            steps=[s if isinstance(s, m.Step) else m.Step.model_validate(dict(s)) for s in steps or []],
            signal=None if accepted is None else m.Signal(source=source, accepted=accepted),  # type: ignore[arg-type]
            subject=subject, answer=answer, recall_id=_recall_id(recall_id),
        )
        return _Call("POST", "/api/v1/trails", m.TrailRecordResult, body.body())

    @staticmethod
    def _feedback_call(recall_id: str | m.RecallResult, accepted: bool) -> _Call:
        rid = _recall_id(recall_id)
        if not rid:
            raise errors.TrailcacheError("feedback needs the recall_id of a recall the service answered")
        return _Call("POST", f"/api/v1/recalls/{_segment(rid)}/feedback", m.FeedbackResult,
                     m.Feedback(accepted=accepted).body())

    @staticmethod
    def _upsert_call(batch: list[m.SectionIn]) -> _Call:
        return _Call("PUT", "/api/v1/sections", m.SectionsUpsertResult, m.SectionsUpsert(sections=batch).body())

    @staticmethod
    def _export_call(format: str, **filters: Any) -> _Call:
        return _Call("POST", "/api/v1/exports", m.ExportAccepted, m.ExportRequest(format=format, **filters).body())  # type: ignore[arg-type]

    @staticmethod
    def _stats_call(scope: str | None) -> _Call:
        return _Call("GET", "/api/v1/stats", m.Stats, params={"scope": scope} if scope else None)


class Trailcache(_Base):
    """Synchronous client. ``Trailcache()`` reads ``TRAILCACHE_URL`` and ``TRAILCACHE_API_KEY``.

    The common loop::

        tc = Trailcache()
        hit = tc.recall("How do I install Acme Sync on Ubuntu?")
        if hit.served: ...                      # answer from hit.served_sections
        else: ...                               # search (hit.section_ids first on a hint)
        tc.record(query=q, cited=ids, steps=steps, recall_id=hit)   # after an accepted answer
        tc.feedback(hit, accepted=True)          # when something was served
    """

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, scope: str = "default",
                 timeout: float = DEFAULT_TIMEOUT, recall_timeout: float = DEFAULT_RECALL_TIMEOUT,
                 retry: RetryPolicy | None = None, fail_open: bool = True, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(base_url, api_key, scope=scope, timeout=timeout, recall_timeout=recall_timeout,
                         retry=retry, fail_open=fail_open)
        self._sleep = sleep
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, timeout=timeout, transport=transport)

    def __enter__(self) -> Trailcache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, json=call.json, params=call.params,
                                              timeout=call.timeout or self.timeout, headers=call.headers or None)
            except httpx.TransportError as exc:
                delay = self._retry_delay(call, attempt, exc=exc)
                if delay is None:
                    raise self._transport_error(call, exc) from exc
            else:
                delay = self._retry_delay(call, attempt, response=response)
                if delay is None:
                    return self._parse(call, response)
                response.close()
            self._sleep(delay)
            attempt += 1

    def recall(self, query: str, *, scope: str | None = None, budget_tokens: int | None = None,
               subject: str | None = None, shadow: bool | None = None,
               fail_open: bool | None = None) -> m.RecallResult:
        """Before the first search. Fails open (a miss, ``failed_open=True``) unless told not to.
        ``shadow=True`` asks a tenant in shadow mode what would have been answered (``result.shadow``)."""
        try:
            result = self._send(self._recall_call(query, scope, budget_tokens, subject, shadow))
        except Exception as exc:
            if not (self.fail_open if fail_open is None else fail_open):
                raise
            return self._failed_open(exc)
        self._recovered()
        return result

    def record(self, query: str, cited: Iterable[str], *, scope: str | None = None,
               steps: Iterable[StepLike] | None = None, accepted: bool | None = True, source: str = "caller",
               subject: str | None = None, answer: str | None = None,
               recall_id: str | m.RecallResult | None = None) -> m.TrailRecordResult:
        """After an accepted answer: the steps taken and the sections cited. ``recall_id`` (the
        id or the ``RecallResult``) links it to the recall it followed. ``accepted=None`` records
        it pending (no signal)."""
        return self._send(self._record_call(query, cited, scope=scope, steps=steps, accepted=accepted, source=source,
                                            subject=subject, answer=answer, recall_id=recall_id))

    def feedback(self, recall_id: str | m.RecallResult, accepted: bool) -> m.FeedbackResult:
        """Whether what a recall served helped; negative quarantines the trail."""
        return self._send(self._feedback_call(recall_id, accepted))

    def upsert_sections(self, sections: Iterable[SectionLike] | Mapping[str, str], *,
                        batch_size: int = 500) -> m.SectionsUpsertResult:
        """Mirror sections (``{id: text}``, ``(id, text)`` pairs, dicts or ``SectionIn``) in batches
        under the service's limits; returns the summed counts. Each batch is applied on its own;
        repeating an upsert is harmless (unchanged text changes nothing)."""
        results = [self._send(self._upsert_call(batch)) for batch in _batches(_sections(sections), batch_size)]
        return _sum_upserts(results)

    def get_section(self, section_id: str) -> m.SectionOut:
        return self._send(_Call("GET", f"/api/v1/sections/{_segment(section_id)}", m.SectionOut))

    def delete_section(self, section_id: str) -> None:
        self._send(_Call("DELETE", f"/api/v1/sections/{_segment(section_id)}"))

    def get_trail(self, trail_id: str) -> m.TrailOut:
        return self._send(_Call("GET", f"/api/v1/trails/{_segment(trail_id)}", m.TrailOut))

    def delete_trail(self, trail_id: str) -> None:
        self._send(_Call("DELETE", f"/api/v1/trails/{_segment(trail_id)}"))

    def stats(self, scope: str | None = None) -> m.Stats:
        return self._send(self._stats_call(scope))

    def erase_subject(self, subject: str) -> m.SubjectEraseResult:
        return self._send(_Call("DELETE", f"/api/v1/subjects/{_segment(subject)}", m.SubjectEraseResult))

    def create_export(self, format: str = "jsonl", **filters: Any) -> m.ExportAccepted:
        return self._send(self._export_call(format, **filters))

    def get_export(self, export_id: str) -> m.ExportStatus:
        return self._send(_Call("GET", f"/api/v1/exports/{_segment(export_id)}", m.ExportStatus))

    def download_export(self, export_id: str) -> bytes:
        return self._send(_Call("GET", f"/api/v1/exports/{_segment(export_id)}/download", raw=True))


class AsyncTrailcache(_Base):
    """The same API as ``Trailcache``, every call awaited."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, scope: str = "default",
                 timeout: float = DEFAULT_TIMEOUT, recall_timeout: float = DEFAULT_RECALL_TIMEOUT,
                 retry: RetryPolicy | None = None, fail_open: bool = True,
                 transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        super().__init__(base_url, api_key, scope=scope, timeout=timeout, recall_timeout=recall_timeout,
                         retry=retry, fail_open=fail_open)
        self._sleep = sleep
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, timeout=timeout,
                                       transport=transport)

    async def __aenter__(self) -> AsyncTrailcache:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(call.method, call.path, json=call.json, params=call.params,
                                                    timeout=call.timeout or self.timeout,
                                                    headers=call.headers or None)
            except httpx.TransportError as exc:
                delay = self._retry_delay(call, attempt, exc=exc)
                if delay is None:
                    raise self._transport_error(call, exc) from exc
            else:
                delay = self._retry_delay(call, attempt, response=response)
                if delay is None:
                    return self._parse(call, response)
                await response.aclose()
            await self._sleep(delay)
            attempt += 1

    async def recall(self, query: str, *, scope: str | None = None, budget_tokens: int | None = None,
                     subject: str | None = None, shadow: bool | None = None,
                     fail_open: bool | None = None) -> m.RecallResult:
        try:
            result = await self._send(self._recall_call(query, scope, budget_tokens, subject, shadow))
        except Exception as exc:
            if not (self.fail_open if fail_open is None else fail_open):
                raise
            return self._failed_open(exc)
        self._recovered()
        return result

    async def record(self, query: str, cited: Iterable[str], *, scope: str | None = None,
                     steps: Iterable[StepLike] | None = None, accepted: bool | None = True, source: str = "caller",
                     subject: str | None = None, answer: str | None = None,
                     recall_id: str | m.RecallResult | None = None) -> m.TrailRecordResult:
        return await self._send(self._record_call(query, cited, scope=scope, steps=steps, accepted=accepted,
                                                  source=source, subject=subject, answer=answer,
                                                  recall_id=recall_id))

    async def feedback(self, recall_id: str | m.RecallResult, accepted: bool) -> m.FeedbackResult:
        return await self._send(self._feedback_call(recall_id, accepted))

    async def upsert_sections(self, sections: Iterable[SectionLike] | Mapping[str, str], *,
                              batch_size: int = 500) -> m.SectionsUpsertResult:
        results = [await self._send(self._upsert_call(b)) for b in _batches(_sections(sections), batch_size)]
        return _sum_upserts(results)

    async def get_section(self, section_id: str) -> m.SectionOut:
        return await self._send(_Call("GET", f"/api/v1/sections/{_segment(section_id)}", m.SectionOut))

    async def delete_section(self, section_id: str) -> None:
        await self._send(_Call("DELETE", f"/api/v1/sections/{_segment(section_id)}"))

    async def get_trail(self, trail_id: str) -> m.TrailOut:
        return await self._send(_Call("GET", f"/api/v1/trails/{_segment(trail_id)}", m.TrailOut))

    async def delete_trail(self, trail_id: str) -> None:
        await self._send(_Call("DELETE", f"/api/v1/trails/{_segment(trail_id)}"))

    async def stats(self, scope: str | None = None) -> m.Stats:
        return await self._send(self._stats_call(scope))

    async def erase_subject(self, subject: str) -> m.SubjectEraseResult:
        return await self._send(_Call("DELETE", f"/api/v1/subjects/{_segment(subject)}", m.SubjectEraseResult))

    async def create_export(self, format: str = "jsonl", **filters: Any) -> m.ExportAccepted:
        return await self._send(self._export_call(format, **filters))

    async def get_export(self, export_id: str) -> m.ExportStatus:
        return await self._send(_Call("GET", f"/api/v1/exports/{_segment(export_id)}", m.ExportStatus))

    async def download_export(self, export_id: str) -> bytes:
        return await self._send(_Call("GET", f"/api/v1/exports/{_segment(export_id)}/download", raw=True))
