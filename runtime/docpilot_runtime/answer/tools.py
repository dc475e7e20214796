"""Stage 5: the tools the model may call, and the record of what this turn emitted.

No tool takes a path, a page set or a scope: there is no argument in which a wider
scope could be expressed, so scope is not a rule the model is asked to follow. Every
excerpt a tool returns is registered as *emitted*; validation later keeps only
citations of emitted ids. An excerpt is spelled out once per turn; later results that
return it again carry only its id and title.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import quoteattr

import httpx

from docpilot_runtime.answer.prompt import Excerpt, as_data, render_excerpt
from docpilot_runtime.check.citations import unit_source
from docpilot_runtime.check.validate import Source
from docpilot_runtime.providers import ToolCall, ToolSpec
from docpilot_runtime.retrieve.site import Site

MAX_EXPANDS = 2
SEARCH_RESULTS = 5
MAX_PAGES_LISTED = 300
SITE_TOOL_TIMEOUT = 10.0
MAX_TOOL_REPLY_CHARS = 4000

_STRING = {"type": "string"}
BUILTIN_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "search_docs": (
        "Search this documentation site. Returns the best matching sections as excerpts.",
        {"query": {**_STRING, "description": "what to look for, in your own words"}},
    ),
    "fetch_section": (
        "Return the full text of one section by its id (an id seen in this conversation).",
        {"id": _STRING},
    ),
    "expand_section": (
        "Return the section immediately before or after a section, on the same page. "
        "At most twice per turn.",
        {"id": _STRING, "direction": {"type": "string", "enum": ["before", "after"]}},
    ),
    "list_pages": ("List the site's pages (url and title).", {}),
    "answer": (
        "Give the final answer. Call exactly once, last.",
        {
            "markdown": {**_STRING, "description": "the answer, citing with [[ID]]"},
            "citations": {"type": "array", "items": _STRING},
            "summary": {**_STRING, "description": "one or two sentences for later turns"},
            "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
            "actions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": _STRING, "arguments": {"type": "object"}},
                    "required": ["name"],
                },
            },
        },
    ),
}
_REQUIRED = {
    "search_docs": ["query"],
    "fetch_section": ["id"],
    "expand_section": ["id", "direction"],
    "list_pages": [],
    "answer": ["markdown"],
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


@dataclass
class TurnTools:
    """The tools of one turn and everything they handed out."""

    site: Site
    http: httpx.AsyncClient | None = None
    emitted: dict[str, Source] = field(default_factory=dict)
    # What each emitted excerpt showed the model (title and text): what the support
    # check reads when an answer cites nothing inline.
    shown: dict[str, str] = field(default_factory=dict)
    expands: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)
    external_urls: set[str] = field(default_factory=set)

    @property
    def site_tools(self) -> dict[str, Mapping[str, Any]]:
        return {str(t["name"]): t for t in self.site.bundle.tools}

    def specs(self) -> list[ToolSpec]:
        specs = [
            ToolSpec(name=name, description=text, parameters=_schema(props, _REQUIRED[name]))
            for name, (text, props) in BUILTIN_TOOLS.items()
        ]
        for name, tool in self.site_tools.items():
            parameters = dict(tool.get("parameters") or {"type": "object", "properties": {}})
            specs.append(
                ToolSpec(
                    name=name, description=str(tool.get("description", "")), parameters=parameters
                )
            )
        return specs

    def emit(self, row: int, text: str | None = None) -> tuple[str, str, bool]:
        """Register a unit as emitted (with the text the model is shown: the whole unit,
        or a window of it); its (title, text, already spelled out this turn)."""
        unit = self.site.bundle.units[row]
        title = " > ".join((*unit.breadcrumb, unit.title))
        body = unit.text if text is None else text
        spelled = unit.id in self.emitted
        if not spelled:
            self.emitted[unit.id] = unit_source(*unit[:5])
            self.external_urls.update(_external_urls(body))
        if body not in self.shown.get(unit.id, ""):
            self.shown[unit.id] = self.shown.get(unit.id, "") + f"\n{title}\n{body}"
        return title, body, spelled

    def excerpts(self, rows: Sequence[int]) -> str:
        """Render units as excerpts, registering them as emitted."""
        units = self.site.bundle.units
        out = []
        for row in rows:
            title, text, spelled = self.emit(row)
            unit = units[row]
            out.append(render_excerpt(Excerpt(unit.id, title, unit.url, text), spelled))
        return "\n".join(out) if out else "(no sections found)"

    async def run(self, call: ToolCall) -> str:
        """The observation for one tool call; a bad call becomes an error observation."""
        if call.arguments is None:
            return f"error: the arguments of {call.name} are not valid JSON"
        if call.name in self.site_tools:
            return await self._site_tool(call.name, call.arguments)
        if call.name not in BUILTIN_TOOLS or call.name == "answer":
            return f"error: there is no tool named {call.name!r}"
        allowed = set(BUILTIN_TOOLS[call.name][1])
        unexpected = sorted(set(call.arguments) - allowed)
        if unexpected:
            takes = ", ".join(sorted(allowed)) or "no arguments"
            return f"error: {call.name} does not take {unexpected[0]!r}; it takes {takes}"
        missing = [a for a in _REQUIRED[call.name] if not isinstance(call.arguments.get(a), str)]
        if missing:
            return f"error: {call.name} needs {missing[0]!r} as a string"
        args = {k: str(v) for k, v in call.arguments.items()}
        if call.name == "search_docs":
            ranking = self.site.search(args["query"])
            return self.excerpts(ranking.order[:SEARCH_RESULTS])
        if call.name == "fetch_section":
            row = self.site.unit_rows.get(args["id"])
            if row is None:
                return f"error: no section has the id {args['id']!r}"
            return self.excerpts([row])
        if call.name == "expand_section":
            return self._expand(args["id"], args["direction"])
        return self._list_pages()

    def _expand(self, unit_id: str, direction: str) -> str:
        if self.expands >= MAX_EXPANDS:
            return f"error: expand_section may be used at most {MAX_EXPANDS} times per turn"
        if direction not in ("before", "after"):
            return "error: direction must be 'before' or 'after'"
        row = self.site.unit_rows.get(unit_id)
        if row is None:
            return f"error: no section has the id {unit_id!r}"
        self.expands += 1
        units = self.site.bundle.units
        neighbour = row - 1 if direction == "before" else row + 1
        if not 0 <= neighbour < len(units) or units[neighbour].page != units[row].page:
            return f"(no section {direction} {unit_id} on the same page)"
        return self.excerpts([neighbour])

    def _list_pages(self) -> str:
        pages = self.site.bundle.pages
        with_units = {u.page for u in self.site.bundle.units}
        lines = [f"{p.url} — {p.title}" for i, p in enumerate(pages) if i in with_units]
        more = len(lines) - MAX_PAGES_LISTED
        lines = lines[:MAX_PAGES_LISTED] + ([f"… and {more} more"] if more > 0 else [])
        return "\n".join(lines)

    async def _site_tool(self, name: str, arguments: dict[str, Any]) -> str:
        import jsonschema

        tool = self.site_tools[name]
        schema = tool.get("parameters") or {"type": "object"}
        try:
            jsonschema.validate(arguments, schema)
        except jsonschema.ValidationError as exc:
            return f"error: arguments of {name} do not match its schema: {exc.message}"
        if self.http is None:
            return f"error: the site tool {name} cannot be reached from here"
        try:
            response = await self.http.post(
                str(tool["endpoint"]), json=arguments, timeout=SITE_TOOL_TIMEOUT
            )
        except httpx.HTTPError as exc:
            return f"error: the site tool {name} did not answer ({exc.__class__.__name__})"
        if response.status_code >= 400:
            return f"error: the site tool {name} answered HTTP {response.status_code}"
        self.tool_calls[name] = self.tool_calls.get(name, 0) + 1
        obs_id = f"tool:{name}:{self.tool_calls[name]}"
        self.emitted[obs_id] = Source(id=obs_id, url="", title=name)
        self.shown[obs_id] = response.text[:MAX_TOOL_REPLY_CHARS]
        body = as_data(response.text[:MAX_TOOL_REPLY_CHARS])  # the site's data, never markup
        return f"<tool_result id={quoteattr(obs_id)}>\n{body}\n</tool_result>"


_URL = re.compile(r"https?://[^\s)\]>\"'`]+")


def _external_urls(text: str) -> set[str]:
    return set(_URL.findall(text))
