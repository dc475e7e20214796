"""`docpilot mcp`: the site's gated, scope-free tools for coding agents, over MCP.

The same tools the answer loop gives the model (tools.py) and the same gated retrieval
a reader's turn goes through (`Site.retrieve`, `Runtime.ask`), served with the official
`mcp` SDK over stdio (`docpilot mcp SITE_DIR`) or streamable HTTP (`/mcp` in the
runtime's app). `DocsTools` holds the behaviour and knows nothing of the SDK, so the
transports are a few lines each.

Every string argument passes the credential check first: a call carrying a credential
is refused, and no log line ever carries argument text (only the tool's name and the
outcome). Every call also passes ``limit(client)``, the rate cap hook: `CallCap` is the
in-process per-client cap of `docpilot mcp`; the HTTP app hands in its `Caps` (memory, or
shared through the database), so `/mcp` counts calls per client like `/api/ask` counts
answers, and the `ask` tool takes an answer from the same caps and spend bound.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .caps import Caps
from .credentials import find_credential
from .index.llms_txt import site_link
from .providers import ToolCall
from .retrieval import Site
from .settings import Settings
from .tools import BUILTIN_TOOLS, TurnTools
from .turn import Runtime, load_runtime
from .types import AskRequest

log = logging.getLogger("docpilot.mcp")

MCP_PATH = "/mcp"
DEFAULT_CALLS_PER_MINUTE = 120
STDIO_CLIENT = "stdio"  # one process serves one stdio session
HINT = "pip install 'mkdocs-docpilot[mcp]'"

# True when the client may make one more call now (a coroutine for shared caps).
Limit = Callable[[str], bool | Awaitable[bool]]
CapsSource = Callable[[], Caps]  # the app's caps, read per call (they open with its lifespan)

ASK_TOOL = (
    "Ask the documentation a question. Returns the validated answer with its citations "
    "(section URLs), or a refusal with the closest pages when the site does not cover it."
)
SEARCH_TOOL = (
    "Search this documentation site. When the site covers the query, returns the best "
    "sections (id, title, section URL, text); when it does not, returns covered=false "
    "with the closest pages instead of weak matches."
)


class McpUnavailable(RuntimeError):
    """The optional `mcp` SDK is not installed."""


def mcp_installed() -> bool:
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class CallCap:
    """At most ``limit`` tool calls per client in any ``window`` seconds (in process)."""

    limit: int = DEFAULT_CALLS_PER_MINUTE
    window: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _calls: dict[str, deque[float]] = field(default_factory=dict)

    def __call__(self, client: str) -> bool:
        now = self.clock()
        calls = self._calls.setdefault(client, deque())
        while calls and calls[0] <= now - self.window:
            calls.popleft()
        if len(calls) >= self.limit:
            return False
        calls.append(now)
        return True


@dataclass(frozen=True)
class ToolReply:
    """One tool's result: JSON-able data, or an error the agent should read."""

    data: dict[str, Any]
    error: bool = False

    @classmethod
    def failure(cls, message: str, **extra: Any) -> ToolReply:
        return cls({"error": message, **extra}, error=True)


def _schema(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": sorted(properties),
        "additionalProperties": False,
    }


class DocsTools:
    """The MCP tools over one runtime's root site; transports call `call`."""

    def __init__(
        self, runtime: Runtime, limit: Limit | None = None, caps: CapsSource | None = None
    ) -> None:
        self.runtime = runtime
        self.limit = limit or CallCap()
        self.caps = caps  # answers of the `ask` tool count against these, when given

    @property
    def site(self) -> Site:
        # Read per call: a bundle swap replaces the runtime's sites.
        return self.runtime.site_for(None)

    @property
    def site_url(self) -> str:
        return self.site.bundle.site.url

    def specs(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(name, description, input schema) of every tool this server offers."""
        out = [("search_docs", SEARCH_TOOL, _schema(BUILTIN_TOOLS["search_docs"][1]))]
        for name in ("fetch_section", "expand_section", "list_pages"):
            text, properties = BUILTIN_TOOLS[name]
            out.append(
                (name, text.replace(" (an id seen in this conversation)", ""), _schema(properties))
            )
        if self.runtime.providers:
            out.append(("ask", ASK_TOOL, _schema({"question": {"type": "string"}})))
        return out

    def _section(self, site: Site, row: int) -> dict[str, Any]:
        unit = site.bundle.units[row]
        return {
            "id": unit.id,
            "title": unit.title,
            "breadcrumb": list(unit.breadcrumb),
            "url": site_link(unit.url, site.bundle.site.url),
            "text": unit.text,
        }

    def _page(self, url: str, title: str) -> dict[str, str]:
        return {"title": title, "url": site_link(url, self.site_url)}

    async def call(self, name: str, arguments: Mapping[str, Any] | None, client: str) -> ToolReply:
        """Check, screen, cap, then run one tool. Never logs argument text."""
        reply = await self._call(name, dict(arguments or {}), client)
        outcome = "error" if reply.error else "ok"
        log.info("mcp tool %s outcome=%s", name if name in self._names() else "(unknown)", outcome)
        return reply

    def _names(self) -> set[str]:
        return {name for name, _text, _schema in self.specs()}

    async def _call(self, name: str, args: dict[str, Any], client: str) -> ToolReply:
        # The credential check comes first, on every string the call carries, so nothing
        # below (errors included) can echo a secret.
        for key, value in args.items():
            for text in (key, value):
                found = find_credential(text) if isinstance(text, str) else None
                if found is not None:
                    return ToolReply.failure(
                        f"refused: an argument carries what looks like a {found.label}. Nothing "
                        "was searched or recorded. Treat the secret as exposed and rotate it.",
                        credential_kind=found.kind,
                    )
        specs = {n: schema for n, _text, schema in self.specs()}
        if name not in specs:
            return ToolReply.failure(f"there is no tool by that name; tools: {sorted(specs)}")
        allowed = specs[name]["properties"]
        unexpected = sorted(set(args) - set(allowed))
        if unexpected:
            takes = ", ".join(sorted(allowed)) or "no arguments"
            return ToolReply.failure(f"{name} does not take {unexpected[0]!r}; it takes {takes}")
        for key in allowed:
            if not isinstance(args.get(key), str):
                return ToolReply.failure(f"{name} needs {key!r} as a string")
        allowed = self.limit(client)
        if not (await allowed if inspect.isawaitable(allowed) else allowed):
            return ToolReply.failure("rate cap reached for this client; try again in a minute")
        limit = self.runtime.settings.limits.max_question_chars
        for key in ("query", "question"):
            if key in args and len(args[key]) > limit:
                return ToolReply.failure(
                    f"{key!r} is {len(args[key])} characters, over the limit {limit}"
                )
        if name == "search_docs":
            return await self._search(args["query"])
        if name == "ask":
            return await self._ask(args["question"], client)
        if "id" in args and self.site_url and args["id"].startswith(self.site_url.rstrip("/")):
            args["id"] = args["id"][len(self.site_url.rstrip("/")) :]  # a section URL given as id
        return await self._model_tool(name, args)

    async def _search(self, query: str) -> ToolReply:
        # The turn's own stage 3: hybrid retrieval, then the calibrated gate.
        site = self.site  # one bundle for the whole call, even if a swap lands meanwhile
        retrieval = await asyncio.to_thread(site.retrieve, AskRequest(question=query))
        common = {"confidence": retrieval.confidence, "retriever": retrieval.retriever}
        if not retrieval.passed:
            closest = [self._page(p.url, p.title) for p in retrieval.closest_pages()]
            return ToolReply(
                {
                    "covered": False,
                    "message": "No section of this documentation covers this closely.",
                    "closest": closest,
                    **common,
                }
            )
        rows = [site.unit_rows[u.id] for u in retrieval.shown_units()]
        sections = [self._section(site, r) for r in rows]
        return ToolReply({"covered": True, "sections": sections, **common})

    async def _model_tool(self, name: str, args: dict[str, Any]) -> ToolReply:
        # The answer loop's own tools (one owner): a fresh TurnTools per call, so the
        # per-turn expand limit does not carry over between an agent's calls, and every
        # section it hands out is spelled out (its `emitted` record says which, in order).
        site = self.site
        tools = TurnTools(site)
        observation = await tools.run(ToolCall("mcp", name, args, ""))
        if observation.startswith("error: "):
            return ToolReply.failure(observation.removeprefix("error: "))
        if name == "list_pages":
            pages = []
            for line in observation.splitlines():
                url, sep, title = line.partition(" — ")
                if sep:
                    pages.append(self._page(url, title))
            return ToolReply({"pages": pages})
        rows = [site.unit_rows[i] for i in tools.emitted if i in site.unit_rows]
        data: dict[str, Any] = {"sections": [self._section(site, r) for r in rows]}
        if not rows:
            data["message"] = observation.strip("()")
        return ToolReply(data)

    async def _ask(self, question: str, client: str) -> ToolReply:
        caps = self.caps() if self.caps is not None else None
        over_budget = False
        if caps is not None:
            admission = await caps.admit(self.site.prefix, client)
            if not admission.allowed:
                return ToolReply.failure(
                    f"answer cap reached ({admission.cap}); try again in "
                    f"{admission.retry_after} s",
                    retry_after=admission.retry_after,
                )
            over_budget = await caps.spend_exhausted()
        result = await self.runtime.ask(AskRequest(question=question), models=not over_budget)
        if caps is not None and result.usage:
            await caps.record_spend(int(result.usage.get("cost_micro_usd") or 0))
        return ToolReply(
            {
                "kind": result.kind,
                "markdown": result.markdown,
                "citations": [
                    {"n": c.n, "id": c.id, "title": c.title, "url": site_link(c.url, self.site_url)}
                    for c in result.citations
                ],
                "closest": [self._page(p.url, p.title) for p in result.closest],
                "tentative": result.tentative,
                "confidence": result.confidence,
            }
        )


# ------------------------------------------------------------------- the SDK side


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
            "section URLs. A search the site does not cover says so (covered=false)."
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

    if limit is None and caps is not None:
        source = caps

        async def limit_calls(client: str) -> bool:
            admission = await source().admit_calls(client, DEFAULT_CALLS_PER_MINUTE)
            return admission.allowed

        limit = limit_calls
    server = build_server(DocsTools(runtime, limit, caps))
    # The tools hand out only the public site's own text, like /api/ask, which has no
    # host check either; a fixed host list would break every real deployment.
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return HttpMount(StreamableHTTPASGIApp(manager), lifespan)
