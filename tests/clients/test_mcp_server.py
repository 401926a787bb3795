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

import pytest
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


# Over HTTP, the MCP server carries the key's powers: a bearer token of its own guards it, and the
# Host and Origin headers are checked (no DNS rebinding from a browser page).

MCP_TOKEN = "mcp-token-for-the-tests-0123456789"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_http(service: Any, *args: str, **env: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "trailcache.mcp_server", "--transport", "streamable-http", "--port", str(port), *args],
        env={**os.environ, **server_env(service), **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    for _ in range(900):  # bounded wait for the port (the interpreter starts in about a second)
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return process, port
        except OSError:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            time.sleep(0.1)
    raise AssertionError("the MCP server did not listen")


def _post_initialize(port: int, headers: dict[str, str]) -> int:
    import http.client
    import json

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", body=body, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_a_non_loopback_bind_without_a_token_is_refused(service, host):
    env = {k: v for k, v in os.environ.items() if k != "TRAILCACHE_MCP_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "trailcache.mcp_server", "--transport", "streamable-http", "--host", host,
         "--port", str(_free_port()), "--allowed-host", "mcp.example.com"],
        env={**env, **server_env(service)}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "TRAILCACHE_MCP_TOKEN" in done.stderr, done.stderr


def test_a_non_loopback_bind_needs_the_host_names_clients_use(service):
    done = subprocess.run(
        [sys.executable, "-m", "trailcache.mcp_server", "--transport", "streamable-http", "--host", "0.0.0.0",
         "--port", str(_free_port())],
        env={**os.environ, **server_env(service), "TRAILCACHE_MCP_TOKEN": MCP_TOKEN},
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "--allowed-host" in done.stderr, done.stderr


def test_a_short_token_is_refused(service):
    done = subprocess.run(
        [sys.executable, "-m", "trailcache.mcp_server", "--transport", "streamable-http",
         "--port", str(_free_port())],
        env={**os.environ, **server_env(service), "TRAILCACHE_MCP_TOKEN": "short"},
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "TRAILCACHE_MCP_TOKEN" in done.stderr, done.stderr


def test_with_a_token_every_request_needs_it(service):
    process, port = _start_http(service, TRAILCACHE_MCP_TOKEN=MCP_TOKEN)
    try:
        assert _post_initialize(port, {}) == 401
        assert _post_initialize(port, {"Authorization": "Bearer not-the-token"}) == 401
        assert _post_initialize(port, {"Authorization": f"Bearer {MCP_TOKEN}"}) == 200

        async def go() -> dict[str, Any]:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = create_mcp_http_client(headers={"Authorization": f"Bearer {MCP_TOKEN}"})
            async with http, Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                                    read_timeout_seconds=60) as client:
                return await the_loop(client)

        check_the_loop(asyncio.run(go()))
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_foreign_host_or_origin_is_refused(service):
    process, port = _start_http(service, "--allowed-origin", "https://agent.example.com",
                                TRAILCACHE_MCP_TOKEN=MCP_TOKEN)
    auth = {"Authorization": f"Bearer {MCP_TOKEN}"}
    try:
        assert _post_initialize(port, {**auth, "Host": "attacker.example"}) in {400, 421}
        assert _post_initialize(port, {**auth, "Origin": "https://attacker.example"}) in {400, 403}
        assert _post_initialize(port, {**auth, "Origin": "https://agent.example.com"}) == 200
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_transport_security_names_the_allowed_hosts_and_origins():
    from trailcache.mcp_server import transport_security

    loopback = transport_security("127.0.0.1", 8765, hosts=[], origins=[])
    assert loopback.enable_dns_rebinding_protection
    assert "127.0.0.1:*" in loopback.allowed_hosts and "http://localhost:*" in loopback.allowed_origins
    public = transport_security("0.0.0.0", 8765, hosts=["mcp.example.com"], origins=["https://agent.example.com"])
    assert public.enable_dns_rebinding_protection
    assert public.allowed_hosts == ["mcp.example.com", "mcp.example.com:8765"]
    assert public.allowed_origins == ["https://agent.example.com"]
