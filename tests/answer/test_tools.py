"""Stage 5's tools over example-site's real bundle: what each returns, what it registers
as emitted, the errors a bad call gets, and a site tool reached over real HTTP."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from docpilot_runtime.answer.tools import (
    BUILTIN_TOOLS,
    MAX_EXPANDS,
    MAX_TOOL_REPLY_CHARS,
    SEARCH_RESULTS,
    TurnTools,
)
from docpilot_runtime.index.build import index_site
from docpilot_runtime.providers import ToolCall
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.settings.index import IndexOptions, embedder_spec
from docpilot_runtime.sites.loader import load_site
from servers.site_tool import PLAN_SCHEMA, site_tool_backend

QUESTION = "How do I exclude a page from the assistant?"
EXCERPT_ID = re.compile(r'<excerpt id="([^"]+)"')


@pytest.fixture(scope="module")
def site(example_site: Path) -> Site:
    return load_site(example_site, "/")


def call(name: str, arguments: dict[str, Any] | None, raw: str = "") -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments, raw_arguments=raw or "{}")


def run(tools: TurnTools, name: str, arguments: dict[str, Any] | None) -> str:
    return str(asyncio.run(tools.run(call(name, arguments))))


def test_search_docs_returns_the_searchers_best_sections_and_registers_them(site: Site) -> None:
    tools = TurnTools(site)
    reply = run(tools, "search_docs", {"query": QUESTION})
    ids = EXCERPT_ID.findall(reply)
    expected = [site.bundle.units[r].id for r in site.search(QUESTION).order[:SEARCH_RESULTS]]
    assert ids == expected
    assert list(tools.emitted) == expected
    first = site.bundle.units[site.unit_rows[ids[0]]]
    assert tools.emitted[first.id].url == first.url
    assert first.text.split("\n")[0][:40] in reply.replace("&amp;", "&").replace("&lt;", "<")


def test_an_excerpt_is_spelled_out_once_per_turn(site: Site) -> None:
    tools = TurnTools(site)
    first = run(tools, "search_docs", {"query": QUESTION})
    again = run(tools, "search_docs", {"query": QUESTION})
    assert "</excerpt>" in first
    assert "</excerpt>" not in again
    assert again.count('repeated="true"') == SEARCH_RESULTS


def test_fetch_section_returns_one_section_and_refuses_unknown_ids(site: Site) -> None:
    tools = TurnTools(site)
    unit = site.bundle.units[5]
    reply = run(tools, "fetch_section", {"id": unit.id})
    assert EXCERPT_ID.findall(reply) == [unit.id]
    assert set(tools.emitted) == {unit.id}
    made_up = "/no/such/page/#nowhere"
    assert run(tools, "fetch_section", {"id": made_up}) == (
        f"error: no section has the id {made_up!r}"
    )
    assert made_up not in tools.emitted, "an id never returned is never citable"


def test_expand_section_walks_the_same_page_and_is_capped(site: Site) -> None:
    units = site.bundle.units
    # A unit with a neighbour on each side on its own page.
    row = next(
        i
        for i in range(1, len(units) - 1)
        if units[i - 1].page == units[i].page == units[i + 1].page
    )
    tools = TurnTools(site)
    after = run(tools, "expand_section", {"id": units[row].id, "direction": "after"})
    before = run(tools, "expand_section", {"id": units[row].id, "direction": "before"})
    assert EXCERPT_ID.findall(after) == [units[row + 1].id]
    assert EXCERPT_ID.findall(before) == [units[row - 1].id]
    third = run(tools, "expand_section", {"id": units[row].id, "direction": "after"})
    assert third == f"error: expand_section may be used at most {MAX_EXPANDS} times per turn"


def test_expand_section_stops_at_the_page_edge(site: Site) -> None:
    units = site.bundle.units
    last = next(i for i in range(len(units) - 1) if units[i].page != units[i + 1].page)
    tools = TurnTools(site)
    reply = run(tools, "expand_section", {"id": units[last].id, "direction": "after"})
    assert reply == f"(no section after {units[last].id} on the same page)"
    assert units[last + 1].id not in tools.emitted


def test_expand_section_rejects_a_bad_direction_and_an_unknown_id(site: Site) -> None:
    tools = TurnTools(site)
    unit = site.bundle.units[0]
    bad = run(tools, "expand_section", {"id": unit.id, "direction": "sideways"})
    assert bad == "error: direction must be 'before' or 'after'"
    unknown = run(tools, "expand_section", {"id": "/nope/#x", "direction": "after"})
    assert unknown == "error: no section has the id '/nope/#x'"
    assert tools.expands == 0, "a refused expand does not use up the allowance"


def test_list_pages_lists_every_page_with_sections_and_nothing_else(site: Site) -> None:
    reply = run(TurnTools(site), "list_pages", {})
    with_units = {u.page for u in site.bundle.units}
    expected = [f"{p.url} — {p.title}" for i, p in enumerate(site.bundle.pages) if i in with_units]
    assert reply.splitlines() == expected
    assert len(expected) < len(site.bundle.pages), "example-site has a page with no sections"


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("search_docs", None, "error: the arguments of search_docs are not valid JSON"),
        ("search_docs", {}, "error: search_docs needs 'query' as a string"),
        ("search_docs", {"query": 7}, "error: search_docs needs 'query' as a string"),
        (
            "search_docs",
            {"query": "x", "path": "/admin/"},
            "error: search_docs does not take 'path'; it takes query",
        ),
        (
            "list_pages",
            {"scope": "all"},
            "error: list_pages does not take 'scope'; it takes no arguments",
        ),
        ("fetch_section", {"id": ["a"]}, "error: fetch_section needs 'id' as a string"),
        ("read_file", {"path": "/etc/passwd"}, "error: there is no tool named 'read_file'"),
        ("answer", {"markdown": "x"}, "error: there is no tool named 'answer'"),
    ],
)
def test_bad_calls_get_an_error_observation_naming_the_problem(
    site: Site, name: str, arguments: dict[str, Any] | None, error: str
) -> None:
    tools = TurnTools(site)
    assert run(tools, name, arguments) == error
    assert tools.emitted == {}


def test_specs_offer_the_builtin_tools_with_closed_schemas(site: Site) -> None:
    specs = {s.name: s for s in TurnTools(site).specs()}
    assert set(specs) == set(BUILTIN_TOOLS)
    for spec in specs.values():
        assert spec.parameters["additionalProperties"] is False
        assert set(spec.parameters["required"]) <= set(spec.parameters["properties"])
    # No tool can be given a scope: no argument names a path or a page set.
    every_argument = {a for s in specs.values() for a in s.parameters["properties"]}
    assert not every_argument & {"path", "url", "scope", "pages"}


# --- A site tool, reached over real HTTP --------------------------------------------------


@pytest.fixture(scope="module")
def tool_site(
    example_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Site, list[Any]]]:
    """example-site re-indexed (lexical, fast) with one site tool served on loopback."""

    def limits(body: dict[str, Any]) -> tuple[int, str, bytes]:
        if body.get("plan") == "broken":
            return 500, "text/plain", b""
        return 200, "text/plain", ("<b>Pro</b> allows 5000 questions. " * 400).encode()

    with site_tool_backend(limits) as (endpoint, calls):
        copy = tmp_path_factory.mktemp("tools") / "site"
        shutil.copytree(example_site, copy)
        tool = {
            "name": "plan_limits",
            "description": "Limits of a plan",
            "parameters": PLAN_SCHEMA,
            "endpoint": endpoint,
        }
        options = IndexOptions(
            embedder=embedder_spec("none", "test"), site_name="DocPilot", tools=(tool,)
        )
        index_site(copy, options)
        yield load_site(copy, "/"), calls


def _with_http(site: Site, name: str, arguments: dict[str, Any]) -> tuple[str, TurnTools]:
    async def go() -> tuple[str, TurnTools]:
        async with httpx.AsyncClient() as http:
            tools = TurnTools(site, http)
            return await tools.run(call(name, arguments)), tools

    return asyncio.run(go())


def test_a_site_tool_reply_is_bounded_verbatim_data_with_a_citable_id(
    tool_site: tuple[Site, list[Any]],
) -> None:
    site, calls = tool_site
    calls.clear()
    reply, tools = _with_http(site, "plan_limits", {"plan": "pro"})
    assert calls == [{"plan": "pro"}]
    assert reply.startswith('<tool_result id="tool:plan_limits:1">\n')
    # The site's data as it sent it (no entities), within its wrapper.
    assert "<b>Pro</b> allows" in reply and "&lt;" not in reply
    assert reply.count("</tool_result>") == 1 and reply.endswith("</tool_result>")
    body = reply.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert len(body) == MAX_TOOL_REPLY_CHARS
    assert tools.emitted["tool:plan_limits:1"].url == ""
    assert "plan_limits" in {s.name for s in tools.specs()}


def test_site_tool_arguments_are_checked_against_its_schema_before_any_request(
    tool_site: tuple[Site, list[Any]],
) -> None:
    site, calls = tool_site
    calls.clear()
    reply, tools = _with_http(site, "plan_limits", {"plan": 5})
    assert reply.startswith("error: arguments of plan_limits do not match its schema: ")
    assert "5 is not of type 'string'" in reply
    assert calls == [] and tools.emitted == {}


def test_a_failing_site_tool_is_an_error_observation_and_nothing_citable(
    tool_site: tuple[Site, list[Any]],
) -> None:
    site, _ = tool_site
    reply, tools = _with_http(site, "plan_limits", {"plan": "broken"})
    assert reply == "error: the site tool plan_limits answered HTTP 500"
    assert tools.emitted == {}
    offline = run(TurnTools(site), "plan_limits", {"plan": "pro"})
    assert offline == "error: the site tool plan_limits cannot be reached from here"
