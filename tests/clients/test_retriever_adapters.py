"""The LangChain and LlamaIndex retrievers against the live service, with a fake fallback
retriever (keyword overlap over the test corpus: no model, no network)."""

from __future__ import annotations

import hashlib
import re
import socket
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever as LangChainRetriever
from llama_index.core.base.base_retriever import BaseRetriever as LlamaRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from trailcache import Trailcache
from trailcache.langchain import TrailcacheRetriever as LangChainTrailcache
from trailcache.llamaindex import TrailcacheRetriever as LlamaTrailcache

from tests.clients.corpus import SECTIONS

INSTALL = "How do I install Acme Sync on Ubuntu?"
SETUP = "What do I do on Windows and with conflicts?"


def keyword_search(query: str, k: int = 3) -> list[tuple[str, float]]:
    words = set(re.findall(r"\w+", query.lower()))
    scored = [(sid, len(words & set(re.findall(r"\w+", text.lower())))) for sid, text in SECTIONS.items()]
    return [(sid, float(score)) for sid, score in sorted(scored, key=lambda x: -x[1])[:k] if score]


class FakeLangChainRetriever(LangChainRetriever):
    calls: list[dict[str, Any]] = []

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                hint_ids: list[str] | None = None) -> list[Document]:
        self.calls.append({"query": query, "hint_ids": hint_ids})
        return [Document(page_content=SECTIONS[sid], id=sid, metadata={"score": s}) for sid, s in keyword_search(query)]


class FakeLlamaRetriever(LlamaRetriever):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []

    def _retrieve(self, query_bundle: QueryBundle, hint_ids: list[str] | None = None) -> list[NodeWithScore]:
        self.calls.append({"query": query_bundle.query_str, "hint_ids": hint_ids})
        return [NodeWithScore(node=TextNode(id_=sid, text=SECTIONS[sid]), score=s) for sid, s in keyword_search(
            query_bundle.query_str)]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def client(service) -> Trailcache:
    tc = service.client(fail_open=False)
    tc.upsert_sections(SECTIONS)
    yield tc
    tc.close()


def make_hint(client: Trailcache) -> None:
    """A trail citing two sections, one of which then changes: the same question is a hint (changed)."""
    client.record(SETUP, ["guide/install.md#windows", "faq:conflicts"])
    client.upsert_sections({"faq:conflicts": "Conflicting copies are now merged line by line."})


def test_langchain_miss_then_record_then_prefetch_then_hint(client):
    fallback = FakeLangChainRetriever(calls=[])
    retriever = LangChainTrailcache(client=client, fallback=fallback, scope="default")

    first = retriever.invoke(INSTALL)
    assert fallback.calls == [{"query": INSTALL, "hint_ids": []}]
    assert first[0].id == "guide/install.md#linux" and first[0].metadata["trailcache_outcome"] == "miss"
    recorded = retriever.record(INSTALL, cited=["guide/install.md#linux"])
    assert recorded.status == "active"
    assert client.get_trail(recorded.trail_id).steps[0]["returned"][0] == "guide/install.md#linux"

    served = retriever.invoke(INSTALL)
    assert len(fallback.calls) == 1  # served from the cache: the fallback was not asked
    assert [d.id for d in served] == ["guide/install.md#linux"]
    assert served[0].page_content == SECTIONS["guide/install.md#linux"]
    meta = served[0].metadata
    assert meta["hash"] == sha(SECTIONS["guide/install.md#linux"]) == client.get_section(meta["id"]).hash
    assert meta["trail_id"] == recorded.trail_id and meta["confidence"] == 1.0 and meta["source"] == "trailcache"
    assert retriever.feedback(INSTALL, accepted=True).accepted is True

    make_hint(client)
    hinted = retriever.invoke(SETUP)
    assert fallback.calls[-1] == {"query": SETUP, "hint_ids": ["guide/install.md#windows", "faq:conflicts"]}
    assert [d.id for d in hinted[:2]] == ["guide/install.md#windows", "faq:conflicts"]
    assert all(d.metadata["trailcache_hinted"] and d.metadata["trailcache_outcome"] == "hint" for d in hinted[:2])
    assert retriever.feedback(SETUP, accepted=True) is None  # nothing was served


def test_llamaindex_miss_then_record_then_prefetch_then_hint(client):
    fallback = FakeLlamaRetriever()
    retriever = LlamaTrailcache(client, fallback, scope="default")

    first = retriever.retrieve(INSTALL)
    assert fallback.calls == [{"query": INSTALL, "hint_ids": []}]
    assert first[0].node.node_id == "guide/install.md#linux"
    assert retriever.record(INSTALL, cited=["guide/install.md#linux"]).status == "active"

    served = retriever.retrieve(INSTALL)
    assert len(fallback.calls) == 1
    node = served[0].node
    assert node.node_id == "guide/install.md#linux" and node.get_content() == SECTIONS["guide/install.md#linux"]
    assert node.metadata["hash"] == sha(SECTIONS["guide/install.md#linux"]) and served[0].score == 1.0
    assert node.metadata["trail_id"] and node.metadata["confidence"] == 1.0
    assert "hash" not in node.get_content(metadata_mode=MetadataMode.LLM)  # bookkeeping stays out of the prompt

    make_hint(client)
    hinted = retriever.retrieve(SETUP)
    assert fallback.calls[-1]["hint_ids"] == ["guide/install.md#windows", "faq:conflicts"]
    assert [n.node.node_id for n in hinted[:2]] == ["guide/install.md#windows", "faq:conflicts"]
    # Recording after the hint cites what the application used, linked to that recall.
    assert retriever.record(SETUP, cited=["guide/install.md#windows"]).status == "active"


def test_a_fallback_without_hint_ids_still_gets_the_hinted_sections_first(client):
    class Plain(LlamaRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_=sid, text=SECTIONS[sid]), score=1.0) for sid in SECTIONS]

    make_hint(client)
    nodes = LlamaTrailcache(client, Plain()).retrieve(SETUP)
    assert [n.node.node_id for n in nodes[:2]] == ["guide/install.md#windows", "faq:conflicts"]


def test_a_langchain_fallback_without_hint_ids_works_too(client):
    class Plain(LangChainRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            return [Document(page_content=text, id=sid) for sid, text in SECTIONS.items()]

    make_hint(client)
    docs = LangChainTrailcache(client=client, fallback=Plain()).invoke(SETUP)
    assert [d.id for d in docs[:2]] == ["guide/install.md#windows", "faq:conflicts"]


def test_both_fall_back_when_the_service_is_down(service):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    down = Trailcache(f"http://127.0.0.1:{closed}", service.api_key, sleep=lambda _: None)
    docs = LangChainTrailcache(client=down, fallback=FakeLangChainRetriever(calls=[])).invoke(INSTALL)
    assert docs[0].id == "guide/install.md#linux" and docs[0].metadata["recall_id"] is None
    nodes = LlamaTrailcache(down, FakeLlamaRetriever()).retrieve(INSTALL)
    assert nodes[0].node.node_id == "guide/install.md#linux"


def test_record_without_anything_returned_or_cited_says_so(client):
    retriever = LangChainTrailcache(client=client, fallback=FakeLangChainRetriever(calls=[]))
    with pytest.raises(ValueError, match="nothing to record"):
        retriever.record("never asked")
