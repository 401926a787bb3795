"""Trailcache as an MCP server (the official ``mcp`` SDK, 2.x): the tools ``recall``,
``record_trail``, ``feedback`` and ``upsert_sections``, calling the REST API through the client.

Configured by the environment: ``TRAILCACHE_URL`` (default ``http://127.0.0.1:8000``),
``TRAILCACHE_API_KEY`` (required), ``TRAILCACHE_SCOPE`` (default scope, ``default``).

    trailcache-mcp                                    # stdio (what MCP hosts launch)
    trailcache-mcp --transport streamable-http --port 8765   # http://127.0.0.1:8765/mcp

Over HTTP the server acts with the key's full powers for whoever reaches its port, so:
``TRAILCACHE_MCP_TOKEN`` (at least 32 characters) makes every request carry
``Authorization: Bearer <token>`` (the SDK's token verifier; 401 otherwise), and a bind to
anything but loopback is refused without it. The Host and Origin headers are always checked
(DNS rebinding): loopback names on a loopback bind, otherwise the names given with
``--allowed-host`` (required then) and the origins given with ``--allowed-origin``. Give the
server a key without ``sections:write`` unless its agent must send sections: a prompt-injected
agent could otherwise rewrite the corpus.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
from typing import Annotated, Any

from pydantic import BaseModel, Field

from trailcache import errors
from trailcache._client import AsyncTrailcache
from trailcache.models import RecallResult

try:
    from mcp.server import MCPServer
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("the MCP server needs the mcp extra: pip install 'trailcache[mcp]'") from exc

INSTRUCTIONS = """\
Trailcache remembers which document sections answered a question before (a "trail") and hands
them back, verified unchanged, when a similar question comes again. It never stores answers.
Use it around your own search tools:
1. Call `recall` with the user's question BEFORE your first search.
   - outcome "prefetch": the returned sections' text is current and verified; answer from it
     (search more only if it is not enough).
   - outcome "hint": read the listed section ids first with your own tools; their text is not
     served because the match or the sections are uncertain.
   - outcome "miss": search as usual.
2. After you answered and the answer was accepted, call `record_trail` with the question, the
   ids of the sections you cited, your search steps, and the `recall_id` from step 1.
3. When a recall served sections, call `feedback` with whether they actually helped.
Section ids are the ids your search tools return; the sections must have been sent with
`upsert_sections` (or by the application) before they can be cited.
"""


class RecallSectionOut(BaseModel):
    id: str
    status: str = Field(description="valid (text is current), changed, missing or unverified")
    text: str | None = Field(default=None, description="current, verified text (prefetch only)")


class RecallOut(BaseModel):
    outcome: str = Field(description="prefetch, hint or miss")
    reason: str
    confidence: float
    recall_id: str = Field(description="pass to record_trail and feedback; empty when the cache was unreachable")
    next_step: str = Field(description="what to do with this answer")
    sections: list[RecallSectionOut]
    omitted: list[str] = Field(description="section ids that did not fit the token budget: read them yourself")
    hint: str | None = None
    trail_id: str | None = None


class RecordOut(BaseModel):
    trail_id: str
    status: str = Field(description="active (will be served), pending (kept until positive feedback)")


class FeedbackOut(BaseModel):
    recall_id: str
    accepted: bool


class UpsertOut(BaseModel):
    created: int
    updated: int
    unchanged: int
    invalidated_trails: int


class StepIn(BaseModel):
    tool: str = Field(description="the tool you called, e.g. search")
    args: dict[str, Any] = Field(default_factory=dict, description="its arguments, e.g. {\"q\": \"install ubuntu\"}")
    returned: list[str] = Field(default_factory=list, description="section ids it returned")


class SectionText(BaseModel):
    id: str = Field(description="stable id of the section, as your search tools return it")
    text: str = Field(description="the section's current text")


def _next_step(result: RecallResult) -> str:
    if result.failed_open:
        return "The cache is unavailable right now: search as usual. Do not call record_trail or feedback with it."
    if result.outcome == "prefetch":
        return ("Answer from these sections' text (verified current). Then call feedback with recall_id "
                "(accepted true if they answered the question) and record_trail after an accepted answer.")
    if result.outcome == "hint":
        return ("Read these section ids first with your own tools (their text is not served: " + result.reason
                + "), then search as needed. After an accepted answer, call record_trail with recall_id.")
    return "Nothing reliable is cached: search as usual; after an accepted answer, call record_trail with recall_id."


def _tool_error(exc: errors.TrailcacheError) -> ToolError:
    if isinstance(exc, errors.APIError):
        extra = f" unknown ids: {exc.unknown_ids}" if isinstance(exc, errors.UnknownSectionsError) else ""
        fields = f" fields: {exc.fields}" if exc.fields else ""
        return ToolError(f"Trailcache refused ({exc.status_code} {exc.error}): {exc.detail}.{fields}{extra}")
    return ToolError(f"Trailcache is unreachable: {exc}")


MIN_TOKEN_LENGTH = 32
_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for one shared bearer token (compared in constant time)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id="trailcache-mcp", scopes=[])
        return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(host: str, port: int, *, hosts: list[str], origins: list[str]) -> TransportSecuritySettings:
    """Host and Origin checks for the HTTP transport, always on: loopback names (and any given)
    on a loopback bind; otherwise only the given host names (with and without the port)."""
    allowed_hosts = [h for name in hosts for h in (name, f"{name}:{port}")]
    if is_loopback(host):
        allowed_hosts = _LOOPBACK_HOSTS + allowed_hosts
        origins = _LOOPBACK_ORIGINS + origins
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                     allowed_origins=list(origins))


def build_server(client: AsyncTrailcache | None = None, *, token: str | None = None,
                 public_url: str = "http://127.0.0.1:8765") -> MCPServer:
    """The MCP server; ``client`` defaults to one built from the environment on first use. With
    ``token``, the HTTP transport answers only requests bearing it."""
    holder: dict[str, AsyncTrailcache] = {}
    default_scope = os.environ.get("TRAILCACHE_SCOPE") or "default"

    def tc() -> AsyncTrailcache:
        if "client" not in holder:
            holder["client"] = client or AsyncTrailcache(scope=default_scope)
        return holder["client"]

    auth: dict[str, Any] = {}
    if token:
        # A resource server only (no OAuth routes): the issuer is this server, for the SDK's settings.
        auth = {"token_verifier": StaticTokenVerifier(token),
                "auth": AuthSettings(issuer_url=public_url, resource_server_url=None)}  # type: ignore[arg-type]
    server: MCPServer = MCPServer("trailcache", instructions=INSTRUCTIONS, **auth)

    @server.tool(title="Recall cached sections for a question")
    async def recall(
        query: Annotated[str, Field(description="the user's question, as asked")],
        scope: Annotated[str | None, Field(description="a product, document or permission group; "
                                           "omit for the configured default")] = None,
        budget_tokens: Annotated[int | None, Field(ge=1, le=100_000,
                                                   description="most tokens of section text to return")] = None,
    ) -> RecallOut:
        """Call this BEFORE your first search for a question. Returns `prefetch` (sections with
        verified current text that answered a very similar question: answer from them), `hint`
        (section ids worth reading first, no text) or `miss` (search as usual). Keep `recall_id`
        for record_trail and feedback. Never fails: when the cache is down it answers a miss."""
        result = await tc().recall(query, scope=scope, budget_tokens=budget_tokens)
        return RecallOut(
            outcome=result.outcome, reason=result.reason, confidence=result.confidence, recall_id=result.recall_id,
            next_step=_next_step(result), omitted=result.omitted, hint=result.hint, trail_id=result.trail_id,
            sections=[RecallSectionOut(id=s.id, status=s.status, text=s.text) for s in result.sections],
        )

    @server.tool(title="Record the sections that answered a question")
    async def record_trail(
        query: Annotated[str, Field(description="the user's question, exactly as given to recall")],
        cited: Annotated[list[str], Field(min_length=1, description="ids of the sections the answer cites")],
        steps: Annotated[list[StepIn] | None, Field(description="the searches and reads you made, in order")] = None,
        recall_id: Annotated[str | None, Field(description="recall_id from the recall before this answer")] = None,
        accepted: Annotated[bool | None, Field(description="true when the user or a check accepted the answer; "
                                               "null when unknown (kept pending, never served)")] = True,
        answer: Annotated[str | None, Field(description="your answer text, only for the service's verifier "
                                            "(checked, never stored)")] = None,
        scope: Annotated[str | None, Field(description="same scope as the recall")] = None,
    ) -> RecordOut:
        """Call this AFTER an answer was accepted: remembers which sections answered the
        question (never the answer itself) so the next similar question gets them at once. Cite
        only sections you actually used. Pass the recall_id of the recall you made first."""
        try:
            result = await tc().record(query, cited, scope=scope, recall_id=recall_id, accepted=accepted,
                                       answer=answer, steps=[s.model_dump() for s in steps or []])
        except errors.TrailcacheError as exc:
            raise _tool_error(exc) from exc
        return RecordOut(trail_id=result.trail_id, status=result.status)

    @server.tool(title="Say whether recalled sections helped")
    async def feedback(
        recall_id: Annotated[str, Field(description="recall_id of a recall that returned sections")],
        accepted: Annotated[bool, Field(description="true if the sections answered the question, false if "
                                        "they were wrong or unrelated")],
    ) -> FeedbackOut:
        """Call this after using what a recall served. false takes the trail out of service (an
        operator reviews it); true reinforces it. Do not call it for a miss."""
        try:
            result = await tc().feedback(recall_id, accepted)
        except errors.TrailcacheError as exc:
            raise _tool_error(exc) from exc
        return FeedbackOut(recall_id=result.recall_id, accepted=result.accepted)

    @server.tool(title="Send sections' current text")
    async def upsert_sections(
        sections: Annotated[list[SectionText], Field(min_length=1, description="sections as {id, text}")],
    ) -> UpsertOut:
        """Send the current text of sections your search tools return, so they can be cited and
        checked: a section whose text changed is never served from an old trail again. Sending the
        same text again changes nothing. Any number of sections (sent in batches)."""
        try:
            result = await tc().upsert_sections([(s.id, s.text) for s in sections])
        except errors.TrailcacheError as exc:
            raise _tool_error(exc) from exc
        return UpsertOut(**result.model_dump())

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="trailcache-mcp", description="Trailcache's tools over MCP")
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http: address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="streamable-http: port")
    parser.add_argument("--path", default="/mcp", help="streamable-http: endpoint path")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="streamable-http: a host name clients use (Host header); required off loopback")
    parser.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN",
                        help="streamable-http: a browser origin allowed to call (e.g. https://agent.example.com)")
    args = parser.parse_args(argv)
    if not os.environ.get("TRAILCACHE_API_KEY"):
        parser.error("set TRAILCACHE_API_KEY (and TRAILCACHE_URL unless it is http://127.0.0.1:8000)")
    if args.transport == "stdio":
        build_server().run("stdio")
        return
    token = os.environ.get("TRAILCACHE_MCP_TOKEN") or None
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        parser.error(f"TRAILCACHE_MCP_TOKEN must have at least {MIN_TOKEN_LENGTH} characters")
    if not is_loopback(args.host):
        if token is None:
            parser.error(f"refusing to listen on {args.host} without a bearer token: set TRAILCACHE_MCP_TOKEN "
                         "(or listen on 127.0.0.1)")
        if not args.allowed_host:
            parser.error("listening off loopback: name the host names clients use with --allowed-host")
    security = transport_security(args.host, args.port, hosts=args.allowed_host, origins=args.allowed_origin)
    public = args.allowed_host[0] if args.allowed_host else "127.0.0.1"
    server = build_server(token=token, public_url=f"http://{public}:{args.port}")
    server.run("streamable-http", host=args.host, port=args.port, streamable_http_path=args.path,
               transport_security=security)


if __name__ == "__main__":
    main()
