"""The MCP tools over every bundle of one runtime: gated search, sections by id, pages,
the sites, and `ask`; no SDK here (`serve.mcp` serves them over stdio and HTTP)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from docpilot_runtime.answer.tools import BUILTIN_TOOLS, TurnTools
from docpilot_runtime.index.llms_txt import site_link
from docpilot_runtime.limits.caps import Caps
from docpilot_runtime.providers import ToolCall
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.screen.credentials import find_credential
from docpilot_runtime.shared.paths import published_under
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.turn import Runtime

log = logging.getLogger("docpilot.mcp")

DEFAULT_CALLS_PER_MINUTE = 120

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
LIST_SITES_TOOL = (
    "List the documentation bundles this server serves (one per language or docs "
    "version): each one's prefix (the value of the other tools' `site` argument), "
    "language, version, name and the URL its pages are published under. The one marked "
    "default answers when `site` is omitted."
)
SITE_ARG = "site"



def bundle_link(site: Site) -> str:
    """Where a bundle's pages are published, for `site_link` (`paths.published_under`;
    with no site_url known, links are paths from the root)."""
    return published_under(site.bundle.site.url, site.prefix)


def _label(site: Site) -> str:
    """A bundle's prefix with what it holds: "'/de/' (language de)"."""
    parts = [f"{k} {v}" for k, v in (("language", site.language), ("version", site.version)) if v]
    return repr(site.prefix) + (f" ({', '.join(parts)})" if parts else "")


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


def _schema(
    properties: Mapping[str, Any], optional: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**properties, **(optional or {})},
        "required": sorted(properties),
        "additionalProperties": False,
    }


class DocsTools:
    """The MCP tools over every site (bundle) of one runtime; transports call `call`."""

    def __init__(
        self, runtime: Runtime, limit: Limit | None = None, caps: CapsSource | None = None
    ) -> None:
        self.runtime = runtime
        self.limit = limit or CallCap()
        self.caps = caps  # answers of the `ask` tool count against these, when given

    @property
    def site(self) -> Site:
        """The root bundle: the one a call without ``site`` uses."""
        # Read per call: a bundle swap replaces the runtime's sites.
        return self.runtime.site_for(None)

    def _site_argument(self) -> dict[str, Any]:
        sites = self.runtime.sites
        default = self.site
        others = ", ".join(_label(s) for s in sites if s is not default)
        return {
            SITE_ARG: {
                "type": "string",
                "enum": [s.prefix for s in sites],
                "description": (
                    "which documentation bundle to use (one per language or docs version), "
                    f"by its prefix as list_sites reports it; omitted: {_label(default)}"
                    + (f"; the others: {others}" if others else "")
                ),
            }
        }

    def specs(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(name, description, input schema) of every tool this server offers."""
        site = self._site_argument()
        out = [("search_docs", SEARCH_TOOL, _schema(BUILTIN_TOOLS["search_docs"][1], site))]
        for name in ("fetch_section", "expand_section", "list_pages"):
            text, properties = BUILTIN_TOOLS[name]
            text = text.replace(" (an id seen in this conversation)", "")
            out.append((name, text, _schema(properties, site)))
        out.append(("list_sites", LIST_SITES_TOOL, _schema({})))
        if self.runtime.providers:
            out.append(("ask", ASK_TOOL, _schema({"question": {"type": "string"}}, site)))
        return out

    def _section(self, site: Site, row: int) -> dict[str, Any]:
        unit = site.bundle.units[row]
        return {
            "id": unit.id,
            "title": unit.title,
            "breadcrumb": list(unit.breadcrumb),
            "url": site_link(unit.url, bundle_link(site)),
            "text": unit.text,
        }

    @staticmethod
    def _page(site: Site, url: str, title: str) -> dict[str, str]:
        return {"title": title, "url": site_link(url, bundle_link(site))}

    def _choose(self, name: str, args: dict[str, Any]) -> Site | ToolReply:
        """The bundle a call names with ``site`` (popped from ``args``), or the root."""
        if SITE_ARG not in args:
            return self.site
        value = args.pop(SITE_ARG)
        sites = list(self.runtime.sites)
        for site in sites:
            if site.prefix == value:
                return site
        wrong = (
            f"{value[:80]!r} is not a bundle this server serves"
            if isinstance(value, str)
            else "must be a string"
        )
        return ToolReply.failure(
            f"{name}: 'site' {wrong}; 'site' is one of {', '.join(_label(s) for s in sites)} "
            f"(list_sites describes them), or leave it out for {self.site.prefix!r}",
            sites=[s.prefix for s in sites],
        )

    def _section_id(self, text: str, site: Site, chosen: bool) -> tuple[Site, str]:
        """The bundle and unit id an ``id`` argument names: the id itself in ``site``, or
        a section URL this server hands out, in ``site`` when it was ``chosen``, else in
        whichever bundle it is the URL of."""
        if text in site.unit_rows:
            return site, text
        sites = [site] if chosen else self.runtime.sites
        for candidate in sorted(sites, key=lambda s: len(bundle_link(s)), reverse=True):
            base = bundle_link(candidate).rstrip("/")
            if base and text.startswith(base + "/"):
                rest = text[len(base) :]
                for key in (rest, unquote(rest)):
                    if key in candidate.unit_rows:
                        return candidate, key
        return site, text

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
        for key in specs[name]["required"]:
            if not isinstance(args.get(key), str):
                return ToolReply.failure(f"{name} needs {key!r} as a string")
        chosen = SITE_ARG in args
        site = self._choose(name, args)  # one bundle for the whole call, even if a swap lands
        if isinstance(site, ToolReply):
            return site
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
            return await self._search(site, args["query"])
        if name == "ask":
            return await self._ask(site, args["question"], client)
        if name == "list_sites":
            return self._list_sites()
        if "id" in args:  # a section URL given as id reads the bundle it belongs to
            site, args["id"] = self._section_id(args["id"], site, chosen)
        return await self._model_tool(site, name, args)

    def _list_sites(self) -> ToolReply:
        # The same prefix, language and version as /api/health's `sites`.
        default = self.site
        return ToolReply(
            {
                "sites": [
                    {
                        "prefix": s.prefix,
                        "language": s.language,
                        "version": s.version,
                        "default": s is default,
                        "name": s.name,
                        "url": bundle_link(s),
                        "pages": len(s.bundle.pages),
                        "sections": len(s.bundle.units),
                    }
                    for s in self.runtime.sites
                ]
            }
        )

    async def _search(self, site: Site, query: str) -> ToolReply:
        # The turn's own stage 3: hybrid retrieval, then the calibrated gate.
        retrieval = await asyncio.to_thread(site.retrieve, AskRequest(question=query))
        common = {
            "confidence": retrieval.confidence,
            "retriever": retrieval.retriever,
            SITE_ARG: site.prefix,
        }
        if not retrieval.passed:
            closest = [self._page(site, p.url, p.title) for p in retrieval.closest_pages()]
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

    async def _model_tool(self, site: Site, name: str, args: dict[str, Any]) -> ToolReply:
        # The answer loop's own tools (one owner): a fresh TurnTools per call, so the
        # per-turn expand limit does not carry over between an agent's calls, and every
        # section it hands out is spelled out (its `emitted` record says which, in order).
        tools = TurnTools(site)
        observation = await tools.run(ToolCall("mcp", name, args, ""))
        if observation.startswith("error: "):
            message = observation.removeprefix("error: ")
            unit_id = args.get("id")
            elsewhere = [s.prefix for s in self.runtime.sites if unit_id in s.unit_rows]
            if elsewhere and site.prefix not in elsewhere:
                where = ", ".join(map(repr, elsewhere))
                message += (
                    f" in site {site.prefix!r}; it is a section of site {where}: pass that "
                    "'site' with the id, as the call that returned it did"
                )
            return ToolReply.failure(message)
        if name == "list_pages":
            pages = []
            for line in observation.splitlines():
                url, sep, title = line.partition(" — ")
                if sep:
                    pages.append(self._page(site, url, title))
            return ToolReply({"pages": pages, SITE_ARG: site.prefix})
        rows = [site.unit_rows[i] for i in tools.emitted if i in site.unit_rows]
        data: dict[str, Any] = {"sections": [self._section(site, r) for r in rows]}
        if not rows:
            data["message"] = observation.strip("()")
        data[SITE_ARG] = site.prefix
        return ToolReply(data)

    async def _ask(self, site: Site, question: str, client: str) -> ToolReply:
        caps = self.caps() if self.caps is not None else None
        over_budget = False
        if caps is not None:
            admission = await caps.admit(site.prefix, client)
            if not admission.allowed:
                return ToolReply.failure(
                    f"answer cap reached ({admission.cap}); try again in "
                    f"{admission.retry_after} s",
                    retry_after=admission.retry_after,
                )
            over_budget = await caps.spend_exhausted()
        # No reader's page (nothing to rank first, nothing to tell the model); the
        # runtime's own words (refusals) follow the chosen bundle's language.
        request = AskRequest(question=question, lang=site.language or None)
        # Its model calls hold and settle their cost through the runtime's caps.
        result = await self.runtime.ask(request, models=not over_budget, site=site)
        link = bundle_link(site)
        return ToolReply(
            {
                "kind": result.kind,
                "markdown": result.markdown,
                "citations": [
                    {"n": c.n, "id": c.id, "title": c.title, "url": site_link(c.url, link)}
                    for c in result.citations
                ],
                "closest": [self._page(site, p.url, p.title) for p in result.closest],
                "tentative": result.tentative,
                "confidence": result.confidence,
                SITE_ARG: site.prefix,
            }
        )


