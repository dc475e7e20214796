"""`docpilot mcp`: the site's gated, scope-free tools for coding agents, over MCP.

The same tools the answer loop gives the model (`answer.tools`) and the same gated retrieval
a reader's turn goes through (`Site.retrieve`, `Runtime.ask`), served with the official
`mcp` SDK over stdio (`docpilot mcp SITE_DIR`) or streamable HTTP (`/mcp` in the
runtime's app). `mcp_tools.DocsTools` holds the behaviour and knows nothing of the SDK, so the
transports are a few lines each.

A runtime serves every bundle its manifests list (one per language, one per version).
Every tool takes an optional ``site``: a bundle's URL prefix exactly as `/api/health`
reports it ("/", "/de/", "/2.0/"), listed in the argument's JSON-schema ``enum`` and by
the `list_sites` tool; omitted, the root bundle (`Runtime.site_for(None)`) answers. An
unknown value is an error naming the argument and the choices. Section and page URLs
are the published ones of the chosen bundle (`bundle_link`), and a section URL given as
an ``id`` is read in the bundle it belongs to.

Every string argument passes the credential check first: a call carrying a credential
is refused, and no log line ever carries argument text (only the tool's name and the
outcome). Every call also passes ``limit(client)``, the rate cap hook: `CallCap` is the
in-process per-client cap of `docpilot mcp`; the HTTP app hands in its `Caps` (memory, or
shared through the database), so `/mcp` counts calls per client like `/api/ask` counts
answers, and the `ask` tool takes an answer from the same caps and spend bound (its
answer cap keyed by the chosen bundle's prefix, as `/api/ask` keys it by the reader's).
Over HTTP, `mcp_sessions.SessionGate` bounds the sessions themselves: per client and in
all, opened through the call cap, idle ones ended quickly.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docpilot_runtime import __version__
from docpilot_runtime.limits.caps import Admission
from docpilot_runtime.serve.mcp_sessions import AdmitCall, SessionGate, limits_of
from docpilot_runtime.serve.mcp_tools import (
    DEFAULT_CALLS_PER_MINUTE,
    CallCap,
    CapsSource,
    DocsTools,
    Limit,
)
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.turn import Runtime, load_runtime

log = logging.getLogger("docpilot.mcp")

MCP_PATH = "/mcp"
STDIO_CLIENT = "stdio"  # one process serves one stdio session
HINT = "pip install 'mkdocs-docpilot[mcp]'"


class McpUnavailable(RuntimeError):
    """The optional `mcp` SDK is not installed."""


def mcp_installed() -> bool:
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        return False
    return True



def _client_of(context: Any) -> str:
    """The caller for the rate cap: the HTTP peer's address, or the stdio session."""
    request = getattr(context, "request", None)
    peer = getattr(request, "client", None)
    return f"http:{peer.host}" if peer is not None else STDIO_CLIENT


def build_server(tools: DocsTools) -> Any:
    """An `mcp` low-level Server whose tools are ``tools``. Raises McpUnavailable."""
    try:
        import mcp.types as types
        from mcp.server.lowlevel import Server
    except ImportError:
        raise McpUnavailable(f"the MCP server needs the mcp extra: {HINT}") from None

    async def list_tools(_context: Any, _params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=text, input_schema=schema)
                for name, text, schema in tools.specs()
            ]
        )

    async def call_tool(context: Any, params: Any) -> Any:
        reply = await tools.call(params.name, params.arguments, _client_of(context))
        text = json.dumps(reply.data, ensure_ascii=False, indent=1)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=reply.data,
            is_error=reply.error,
        )

    return Server(
        "docpilot",
        version=__version__,
        instructions=(
            f"Documentation of {tools.site.name}: search it, read sections by id, cite "
            "section URLs. A search the site does not cover says so (covered=false). "
            "Other languages or docs versions, when served: list_sites names them, and "
            "every tool's optional `site` argument picks one (default: the root bundle)."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def run_stdio(site_dir: str | Path, settings: Settings, calls_per_minute: int) -> None:
    """Serve the site's tools over stdin/stdout until the client closes the stream."""
    import anyio

    runtime = load_runtime(site_dir, settings)
    server = build_server(DocsTools(runtime, CallCap(calls_per_minute)))

    async def serve() -> None:
        from mcp.server.stdio import stdio_server

        try:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            await runtime.aclose()

    anyio.run(serve)


@dataclass(frozen=True)
class HttpMount:
    """The `/mcp` endpoint for the runtime's app and the lifespan it needs running."""

    app: Any  # an ASGI app
    lifespan: Callable[[], AbstractAsyncContextManager[None]]


def http_mount(
    runtime: Runtime, limit: Limit | None = None, caps: CapsSource | None = None
) -> HttpMount | None:
    """Streamable HTTP for the app at MCP_PATH, or None (logged) without the mcp extra.
    With ``caps`` (the app's), every call and the `ask` tool's answers count there."""
    if not mcp_installed():
        log.info(
            "MCP endpoint %s not served: the mcp extra is not installed (%s)",
            MCP_PATH,
            HINT,
        )
        return None
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from mcp.server.transport_security import TransportSecuritySettings

    admit: AdmitCall | None = None
    if caps is not None:
        source = caps

        async def admit_call(client: str) -> Admission:
            return await source().admit_calls(client, DEFAULT_CALLS_PER_MINUTE)

        async def limit_calls(client: str) -> bool:
            return (await admit_call(client)).allowed

        admit = admit_call  # opening a session is a call too
        limit = limit or limit_calls
    server = build_server(DocsTools(runtime, limit, caps))
    sessions = limits_of(runtime.settings.caps)
    # The tools hand out only the public site's own text, like /api/ask, which has no
    # host check either; a fixed host list would break every real deployment. The SDK's
    # own session bound is a backstop: SessionGate counts sessions per client and in all.
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=sessions.idle_seconds,
        max_sessions=2 * sessions.total,
    )

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    gate = SessionGate(StreamableHTTPASGIApp(manager), sessions, admit,
                       runtime.settings.caps.trusted_proxies)
    return HttpMount(gate, lifespan)
