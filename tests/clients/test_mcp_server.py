"""The MCP server, driven by the SDK's own client: over stdio (a real subprocess, as an MCP host
launches it) and over streamable HTTP, against the live service."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.clients.corpus import SECTIONS

QUESTION = "How do I install Acme Sync on Ubuntu?"


def server_env(service: Any, **extra: str) -> dict[str, str]:
    return {"TRAILCACHE_URL": service.url, "TRAILCACHE_API_KEY": service.api_key, **extra}


def stdio(service: Any, **extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "trailcache.mcp_server"],
                                 env=server_env(service, **extra), cwd=os.getcwd())


async def the_loop(client: Client) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    tools = (await client.list_tools()).tools
    seen["tools"] = {t.name: t for t in tools}
    upserted = await client.call_tool("upsert_sections", {
        "sections": [{"id": k, "text": v} for k, v in SECTIONS.items()]})
    seen["upsert"] = upserted.structured_content
    first = await client.call_tool("recall", {"query": QUESTION})
    seen["first"] = first.structured_content
    recorded = await client.call_tool("record_trail", {
        "query": QUESTION, "cited": ["guide/install.md#linux"], "recall_id": first.structured_content["recall_id"],
        "steps": [{"tool": "search", "args": {"q": "install ubuntu"}, "returned": ["guide/install.md#linux"]}],
    })
    seen["record"] = recorded.structured_content
    again = await client.call_tool("recall", {"query": QUESTION})
    seen["again"] = again.structured_content
    seen["feedback"] = (await client.call_tool("feedback", {"recall_id": again.structured_content["recall_id"],
                                                            "accepted": True})).structured_content
    seen["unknown"] = await client.call_tool("record_trail", {"query": "q", "cited": ["never/sent"]})
    return seen


def check_the_loop(seen: dict[str, Any]) -> None:
    assert set(seen["tools"]) == {"recall", "record_trail", "feedback", "upsert_sections"}
    for tool in seen["tools"].values():
        assert len(tool.description or "") > 150, tool.name  # written for a model to use them well
        assert tool.input_schema["type"] == "object"
    assert "BEFORE your first search" in seen["tools"]["recall"].description
    assert seen["tools"]["record_trail"].input_schema["required"] == ["query", "cited"]
    assert seen["upsert"] == {"created": 4, "updated": 0, "unchanged": 0, "invalidated_trails": 0}
    assert seen["first"]["outcome"] == "miss" and "search as usual" in seen["first"]["next_step"]
    assert seen["record"]["status"] == "active"
    assert seen["again"]["outcome"] == "prefetch"
    assert seen["again"]["sections"] == [{"id": "guide/install.md#linux", "status": "valid",
                                          "text": SECTIONS["guide/install.md#linux"]}]
    assert seen["feedback"]["accepted"] is True
    assert seen["unknown"].is_error and "422" in seen["unknown"].content[0].text
    assert "never/sent" in seen["unknown"].content[0].text


def test_the_tools_over_stdio(service):
    async def go() -> dict[str, Any]:
        async with Client(stdio(service), read_timeout_seconds=60) as client:
            assert "BEFORE your first search" in (client.instructions or "")
            return await the_loop(client)

    check_the_loop(asyncio.run(go()))


def test_recall_over_mcp_fails_open_when_the_service_is_down(service):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]

    async def go() -> Any:
        params = stdio(service, TRAILCACHE_URL=f"http://127.0.0.1:{closed}")
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool("recall", {"query": QUESTION})

    result = asyncio.run(go())
    assert not result.is_error
    assert result.structured_content["outcome"] == "miss" and result.structured_content["recall_id"] == ""
    assert "unavailable" in result.structured_content["next_step"]


def test_the_tools_over_streamable_http(service):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "trailcache.mcp_server", "--transport", "streamable-http", "--port", str(port)],
        env={**os.environ, **server_env(service)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        for _ in range(900):  # bounded wait for the port (the interpreter starts in about a second)
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                time.sleep(0.1)

        async def go() -> dict[str, Any]:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client:
                return await the_loop(client)

        check_the_loop(asyncio.run(go()))
    finally:
        process.terminate()
        process.wait(timeout=30)
