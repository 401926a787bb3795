"""``TrailcacheRetriever`` for LangChain: recall first; on a prefetch, the served sections as
``Document``s (metadata: id, hash, trail_id, confidence, recall_id); on a hint or a miss, the
fallback retriever (the hint's ids passed along as ``hint_ids``, and its results with the
hinted sections first). ``record(query)`` when the application marks the answer accepted.

    retriever = TrailcacheRetriever(client=Trailcache(), fallback=my_retriever, scope="default")
    docs = retriever.invoke("How do I install Acme Sync on Ubuntu?")
    ...                                   # answer; the user accepts it
    retriever.record("How do I install Acme Sync on Ubuntu?")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, PrivateAttr

from trailcache._adapters import SOURCE, Given, Memory, hinted_first, record_accepted, served_metadata
from trailcache._client import Trailcache
from trailcache.models import FeedbackResult, TrailRecordResult

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("the LangChain retriever needs the langchain extra: pip install 'trailcache[langchain]'") from exc


def _doc_id(doc: Document) -> str | None:
    return doc.id or doc.metadata.get("id")


class TrailcacheRetriever(BaseRetriever):
    """Trailcache in front of a fallback retriever. Documents from the fallback need ids (``Document.id``
    or ``metadata["id"]``) that the service knows (upserted sections) for ``record`` to cite them."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Trailcache
    fallback: BaseRetriever
    scope: str | None = None
    budget_tokens: int | None = None
    _memory: Memory = PrivateAttr(default_factory=Memory)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        result = self.client.recall(query, scope=self.scope, budget_tokens=self.budget_tokens)
        served = result.served_sections if result.outcome == "prefetch" else []
        if served:
            docs = [Document(page_content=s.text or "", id=s.id, metadata=served_metadata(result, s.id, s.text or ""))
                    for s in served]
            ids = [s.id for s in served]
            self._memory.put(query, Given(result, ids, [{"tool": "trailcache.recall", "args": {"q": query},
                                                         "returned": ids}]))
            return docs
        hint_ids = result.section_ids if result.outcome == "hint" else []
        config = {"callbacks": run_manager.get_child(),
                  "metadata": {"trailcache_outcome": result.outcome, "trailcache_hint_ids": hint_ids}}
        found = self.fallback.invoke(query, config=config, hint_ids=hint_ids)  # type: ignore[arg-type]
        docs = [
            Document(page_content=d.page_content, id=d.id, metadata={
                **d.metadata, "trailcache_outcome": result.outcome, "trailcache_hinted": _doc_id(d) in hint_ids,
                "recall_id": result.recall_id or None, "source": d.metadata.get("source", SOURCE + ".fallback"),
            })
            for d in hinted_first(found, hint_ids, _doc_id)
        ]
        ids = [i for i in (_doc_id(d) for d in docs) if i]
        self._memory.put(query, Given(result, ids, [{"tool": "search", "args": {"q": query}, "returned": ids}]))
        return docs

    def record(self, query: str, *, cited: Sequence[str] | None = None, accepted: bool | None = True,
               answer: str | None = None, subject: str | None = None) -> TrailRecordResult:
        """The application accepted the answer to ``query``: record its trail (cited: the given
        section ids, default every document this retriever returned for it)."""
        return record_accepted(self.client, self._memory, query, cited=cited, scope=self.scope, accepted=accepted,
                               answer=answer, subject=subject)

    def feedback(self, query: str, accepted: bool) -> FeedbackResult | None:
        """Whether what was served for ``query`` helped (only when something was served)."""
        given = self._memory.get(query)
        if given is None or not given.recall.served:
            return None
        return self.client.feedback(given.recall, accepted)

    def last_recall(self, query: str) -> Any:
        given = self._memory.get(query)
        return given.recall if given else None
