"""What the LangChain and LlamaIndex retrievers share: recall first, remember what each query
was given, record it when the application says the answer was accepted."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trailcache._client import Trailcache
from trailcache.models import RecallResult, TrailRecordResult

SOURCE = "trailcache"


def sha256(text: str) -> str:
    """A served section's hash: served text is exactly what the trail recorded (checked by the service)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def served_metadata(result: RecallResult, section_id: str, text: str) -> dict[str, Any]:
    return {
        "id": section_id, "hash": sha256(text), "trail_id": result.trail_id, "confidence": result.confidence,
        "recall_id": result.recall_id, "source": SOURCE, "trailcache_outcome": result.outcome,
    }


def hinted_first(items: Sequence[Any], ids: Iterable[str], id_of: Any) -> list[Any]:
    """The fallback's results with the hinted sections first (in the hint's order), the rest as they came."""
    rank = {section_id: i for i, section_id in enumerate(ids)}
    return sorted(items, key=lambda item: rank.get(id_of(item), len(rank)))


@dataclass
class Given:
    """What one query was answered with: the recall and the section ids returned to the application."""

    recall: RecallResult
    section_ids: list[str]
    steps: list[dict[str, Any]] = field(default_factory=list)


class Memory:
    """The last ``size`` queries' answers (thread-safe), so ``record(query)`` knows what was used."""

    def __init__(self, size: int = 256) -> None:
        self._items: OrderedDict[str, Given] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def put(self, query: str, given: Given) -> None:
        with self._lock:
            self._items[query] = given
            self._items.move_to_end(query)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def get(self, query: str) -> Given | None:
        with self._lock:
            return self._items.get(query)


def record_accepted(client: Trailcache, memory: Memory, query: str, *, cited: Sequence[str] | None, scope: str | None,
                    accepted: bool | None, answer: str | None, subject: str | None) -> TrailRecordResult:
    """Record the trail of an accepted answer: the sections cited (default: every section the
    retriever returned for the query), the retrieval step, linked to the recall that came first."""
    given = memory.get(query)
    ids = list(cited) if cited is not None else (given.section_ids if given else [])
    if not ids:
        raise ValueError(f"nothing to record for {query!r}: no sections were returned for it, and none were cited")
    return client.record(query, ids, scope=scope, steps=given.steps if given else None, accepted=accepted,
                         answer=answer, subject=subject, recall_id=given.recall if given else None)
