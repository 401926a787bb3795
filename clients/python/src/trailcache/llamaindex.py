"""``TrailcacheRetriever`` for LlamaIndex: recall first; on a prefetch, the served sections as
``TextNode``s (id, hash, trail_id, confidence, recall_id in metadata, kept out of the LLM's and the
embedder's view), scored by the recall's confidence; on a hint or a miss, the fallback retriever
(its ``_retrieve`` gets ``hint_ids`` when it takes them; the hinted nodes come first).
``record(query)`` when the application marks the answer accepted."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from trailcache._adapters import SOURCE, Given, Memory, hinted_first, record_accepted, served_metadata
from trailcache._client import Trailcache
from trailcache.models import FeedbackResult, TrailRecordResult

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("the LlamaIndex retriever needs the llamaindex extra: "
                      "pip install 'trailcache[llamaindex]'") from exc

HIDDEN_KEYS = ["hash", "trail_id", "confidence", "recall_id", "source", "trailcache_outcome", "trailcache_hinted"]


def _hide(node: Any, metadata: dict[str, Any]) -> Any:
    return node.model_copy(update={
        "metadata": metadata,
        "excluded_llm_metadata_keys": sorted(set(node.excluded_llm_metadata_keys) | set(HIDDEN_KEYS)),
        "excluded_embed_metadata_keys": sorted(set(node.excluded_embed_metadata_keys) | set(HIDDEN_KEYS)),
    })


class TrailcacheRetriever(BaseRetriever):
    """Trailcache in front of a fallback retriever; node ids must be the service's section ids
    for ``record`` to cite them."""

    def __init__(self, client: Trailcache, fallback: BaseRetriever, *, scope: str | None = None,
                 budget_tokens: int | None = None, callback_manager: CallbackManager | None = None) -> None:
        super().__init__(callback_manager=callback_manager)
        self.client = client
        self.fallback = fallback
        self.scope = scope
        self.budget_tokens = budget_tokens
        self._memory = Memory()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        result = self.client.recall(query, scope=self.scope, budget_tokens=self.budget_tokens)
        served = result.served_sections if result.outcome == "prefetch" else []
        if served:
            nodes = [NodeWithScore(node=_hide(TextNode(id_=s.id, text=s.text or ""),
                                              served_metadata(result, s.id, s.text or "")), score=result.confidence)
                     for s in served]
            ids = [s.id for s in served]
            self._memory.put(query, Given(result, ids, [{"tool": "trailcache.recall", "args": {"q": query},
                                                         "returned": ids}]))
            return nodes
        hint_ids = result.section_ids if result.outcome == "hint" else []
        if "hint_ids" in inspect.signature(self.fallback._retrieve).parameters:
            found = self.fallback._retrieve(query_bundle, hint_ids=hint_ids)  # type: ignore[call-arg]
        else:
            found = self.fallback.retrieve(query_bundle)
        nodes = [
            NodeWithScore(node=_hide(n.node, {
                **n.node.metadata, "trailcache_outcome": result.outcome,
                "trailcache_hinted": n.node.node_id in hint_ids,
                "recall_id": result.recall_id or None, "source": n.node.metadata.get("source", SOURCE + ".fallback"),
            }), score=n.score)
            for n in hinted_first(found, hint_ids, lambda n: n.node.node_id)
        ]
        ids = [n.node.node_id for n in nodes]
        self._memory.put(query, Given(result, ids, [{"tool": "search", "args": {"q": query}, "returned": ids}]))
        return nodes

    def record(self, query: str, *, cited: Sequence[str] | None = None, accepted: bool | None = True,
               answer: str | None = None, subject: str | None = None) -> TrailRecordResult:
        """The application accepted the answer to ``query``: record its trail."""
        return record_accepted(self.client, self._memory, query, cited=cited, scope=self.scope, accepted=accepted,
                               answer=answer, subject=subject)

    def feedback(self, query: str, accepted: bool) -> FeedbackResult | None:
        given = self._memory.get(query)
        if given is None or not given.recall.served:
            return None
        return self.client.feedback(given.recall, accepted)
