"""The MCP server with the official MCP Python client: over real stdio (`docpilot mcp
SITE_DIR` spawned as a subprocess by the SDK's stdio client) and over streamable HTTP
against the runtime served by a real uvicorn (`/mcp`). Each transport runs one client
session per scenario set; the tests read what it recorded. Sites with several bundles
(a two-language mkdocs-static-i18n build, two versions deployed by mike) show the
`site` argument and `list_sites`."""

from __future__ import annotations

import json
import logging
import random
import re
import string
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
import yaml
from corpora import mkdocs_build
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.settings.providers import ProviderSettings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.turn import load_runtime
from i18n_sites import _site as i18n_site
from i18n_sites import build_project_per_language
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from servers.openai_chat import OpenAIChatServer, answer_reply
from servers.runtime import RunningServer, example_settings, serve_app
from servers.runtime import example_server as example_server  # session fixture
from versioned_sites import QUESTION as VERSIONS_QUESTION
from versioned_sites import versioned_site as versioned_site  # module fixture (mike)


def _aws_pair(seed: int) -> tuple[str, str]:
    """An AWS-style key id and secret no vendor published (seeded: failures reproduce)."""
    rng = random.Random(seed)
    key_id = "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))
    return key_id, "".join(rng.choices(string.ascii_letters + string.digits + "+/", k=40))


KEY_ID, SECRET = _aws_pair(1414)

COVERED = "How do I exclude a page from the assistant?"
UNCOVERED = "What is the best recipe for sourdough bread?"
CREDENTIAL = f"deploy fails with aws_access_key_id = {KEY_ID} aws_secret_access_key = {SECRET}"
INVENTED_ID = "/no-such-page/#nothing-here"
EXPECTED_TOOLS = {"search_docs", "fetch_section", "expand_section", "list_pages", "list_sites"}
Scenarios = dict[str, tuple[str, dict[str, Any]]]  # key -> (tool, arguments)
SCENARIOS: Scenarios = {
    "covered": ("search_docs", {"query": COVERED}),
    "uncovered": ("search_docs", {"query": UNCOVERED}),
    "invented": ("fetch_section", {"id": INVENTED_ID}),
    "credential": ("search_docs", {"query": CREDENTIAL}),
    "credential_in_id": ("fetch_section", {"id": f"/security/#x aws_secret_access_key={SECRET}"}),
    "pages": ("list_pages", {}),
    "scoped": ("search_docs", {"query": COVERED, "scope": "/internal/"}),
    "unknown": ("read_file", {"path": "/etc/passwd"}),
}


@dataclass
class Recorded:
    """What one client session saw: the tool names and each scenario's result."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, tuple[bool, dict[str, Any], str]] = field(default_factory=dict)


async def _call(
    session: ClientSession, name: str, args: dict[str, Any]
) -> tuple[bool, dict[str, Any], str]:
    result = await session.call_tool(name, args)
    text = "".join(getattr(c, "text", "") for c in result.content)
    return bool(result.is_error), dict(result.structured_content or {}), text


async def _record(
    session: ClientSession, recorded: Recorded, scenarios: Scenarios, *, opening: bool = False
) -> None:
    """Call each scenario's tool (after initialize and list_tools when ``opening``)."""
    if opening:
        await session.initialize()
        listed = await session.list_tools()
        recorded.tools = {t.name: dict(t.input_schema) for t in listed.tools}
    for key, (name, args) in scenarios.items():
        recorded.results[key] = await _call(session, name, args)


async def _run_scenarios(session: ClientSession, recorded: Recorded) -> None:
    await _record(session, recorded, SCENARIOS, opening=True)
    _ok, covered, _text = recorded.results["covered"]
    first = covered["sections"][0]["id"]
    recorded.results["fetch"] = await _call(session, "fetch_section", {"id": first})
    recorded.results["expand"] = await _call(
        session, "expand_section", {"id": first, "direction": "after"}
    )


def _docpilot() -> list[str]:
    script = Path(sys.executable).with_name("docpilot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "docpilot_runtime.cli"]


def _stdio(
    site: Path, errlog: Path, *extra: str, verbose: bool = False
) -> Callable[[Callable[[ClientSession], Awaitable[None]]], None]:
    command, *args = _docpilot()

    def run(body: Callable[[ClientSession], Awaitable[None]]) -> None:
        async def main() -> None:
            params = StdioServerParameters(
                command=command,
                args=[*args, *(["-v"] if verbose else []), "mcp", str(site), *extra],
            )
            with errlog.open("w", encoding="utf-8") as err:
                async with (
                    stdio_client(params, errlog=err) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await body(session)

        anyio.run(main)

    return run


def _http(base_url: str) -> Callable[[Callable[[ClientSession], Awaitable[None]]], None]:
    """Run a body in one client session against the server's `/mcp` (streamable HTTP)."""

    def run(body: Callable[[ClientSession], Awaitable[None]]) -> None:
        async def main() -> None:
            async with (
                streamable_http_client(base_url + "/mcp") as (read, write),
                ClientSession(read, write) as session,
            ):
                await body(session)

        anyio.run(main)

    return run


@pytest.fixture(scope="module")
def stdio_run(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Recorded, str]:
    errlog = tmp_path_factory.mktemp("mcp") / "stderr.txt"
    recorded = Recorded()

    async def body(session: ClientSession) -> None:
        await _run_scenarios(session, recorded)

    _stdio(example_site, errlog, verbose=True)(body)
    return recorded, errlog.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def http_run(example_server: RunningServer) -> tuple[Recorded, str]:
    recorded = Recorded()
    handler = _ListHandler()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:

        async def body(session: ClientSession) -> None:
            await _run_scenarios(session, recorded)

        _http(example_server.base_url)(body)
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    return recorded, "\n".join(handler.lines)


# The test's own client side runs in this process too: its debug lines quote what it sends.
CLIENT_LOGGERS = ("mcp.client", "httpx", "httpcore", "httpx2", "httpcore2")


class _ListHandler(logging.Handler):
    """Every record the server side logs while the HTTP session runs, formatted."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(CLIENT_LOGGERS):
            return
        self.lines.append(f"{record.name} {record.getMessage()} {record.args!r}")


TRANSPORTS = ["stdio_run", "http_run"]


def _page_dir(site: Path, url: str) -> Path:
    """The built folder of a page URL (absolute under example-site's site_url, or a path)."""
    return site / urlsplit(url).path.lstrip("/")


def _anchor_exists(site: Path, url: str) -> bool:
    anchor = urlsplit(url).fragment
    html = (_page_dir(site, url) / "index.html").read_text(encoding="utf-8")
    return not anchor or re.search(rf'\bid="{re.escape(anchor)}"', html) is not None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tools_are_listed_and_none_takes_a_path_or_a_scope(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    assert set(recorded.tools) == EXPECTED_TOOLS  # no providers configured: no `ask`
    for schema in recorded.tools.values():
        assert not {"path", "scope", "page", "url"} & set(schema["properties"])
        assert schema["additionalProperties"] is False


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_covered_query_returns_sections_citing_real_section_urls(
    transport: str, request: pytest.FixtureRequest, example_site: Path
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    error, data, text = recorded.results["covered"]
    assert not error and data["covered"] is True
    assert data["confidence"] >= 50
    assert (
        json.loads(text) == data
    )  # the text content is the same JSON for agents without structured output
    sections = data["sections"]
    assert sections and {"id", "title", "breadcrumb", "url", "text"} <= set(sections[0])
    assert any("exclude" in s["text"] for s in sections)
    for section in sections:
        assert _anchor_exists(example_site, section["url"]), section["url"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_uncovered_query_is_a_structured_not_covered_with_closest_pages(
    transport: str, request: pytest.FixtureRequest, example_site: Path
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    error, data, _text = recorded.results["uncovered"]
    assert not error
    assert data["covered"] is False and "sections" not in data
    assert data["confidence"] < 50
    assert 3 <= len(data["closest"]) <= 5
    for page in data["closest"]:
        assert (_page_dir(example_site, page["url"]) / "index.html").exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_invented_id_is_a_clear_error_result(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    error, data, text = recorded.results["invented"]
    assert error
    assert INVENTED_ID in data["error"] and "no section" in data["error"]
    assert INVENTED_ID in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_argument_it_does_not_take_is_an_error_naming_it(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    error, data, _text = recorded.results["scoped"]
    assert error and "'scope'" in data["error"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_tool_it_does_not_have_is_an_error_listing_the_tools(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    error, data, _text = recorded.results["unknown"]
    assert error and "no tool" in data["error"] and "search_docs" in data["error"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fetch_and_expand_return_the_section_and_its_neighbour(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    first = recorded.results["covered"][1]["sections"][0]
    error, fetched, _text = recorded.results["fetch"]
    assert not error and fetched["sections"][0]["id"] == first["id"]
    assert fetched["sections"][0]["text"] == first["text"]
    error, expanded, _text = recorded.results["expand"]
    assert not error
    # Either the next section of the same page, or a plain note that there is none.
    if expanded["sections"]:
        assert expanded["sections"][0]["url"].split("#")[0] == first["url"].split("#")[0]
        assert expanded["sections"][0]["id"] != first["id"]
    else:
        assert "no section after" in expanded["message"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_pages_leaves_out_excluded_pages(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _log = request.getfixturevalue(transport)
    error, data, _text = recorded.results["pages"]
    urls = [urlsplit(p["url"]).path for p in data["pages"]]  # absolute under site_url
    assert not error and "/" in urls and "/reference/cli/" in urls
    assert "/internal/release-checklist/" not in urls


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("scenario", ["credential", "credential_in_id"])
def test_pasted_credential_is_refused_and_in_no_log_line(
    transport: str, scenario: str, request: pytest.FixtureRequest
) -> None:
    recorded, log_text = request.getfixturevalue(transport)
    error, data, text = recorded.results[scenario]
    assert error and data["error"].startswith("refused")
    assert data["credential_kind"].startswith("aws")
    assert "sections" not in data and "closest" not in data  # nothing was searched
    assert SECRET not in text and KEY_ID not in text
    assert "mcp tool" in log_text  # the log was captured, and it says which tools ran
    leaked = [line for line in log_text.splitlines() if SECRET in line or KEY_ID in line]
    assert not leaked
    assert UNCOVERED not in log_text  # no argument text at all (the docs never say it)


def test_the_per_session_cap_turns_the_next_call_into_an_error(
    example_site: Path, tmp_path: Path
) -> None:
    seen: list[tuple[bool, dict[str, Any], str]] = []

    async def body(session: ClientSession) -> None:
        await session.initialize()
        for _ in range(3):
            seen.append(await _call(session, "list_pages", {}))

    _stdio(example_site, tmp_path / "stderr.txt", "--max-calls", "2")(body)
    assert [error for error, _data, _text in seen] == [False, False, True]
    assert "rate cap" in seen[2][1]["error"]


def test_with_a_provider_ask_returns_the_validated_answer_with_section_urls(
    example_site: Path, tmp_path: Path
) -> None:
    primed = load_runtime(example_site).site_for(None).retrieve(AskRequest(COVERED))
    cited = primed.shown_units()[0]
    config = tmp_path / "docpilot.toml"
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        await session.initialize()
        seen["tools"] = {t.name for t in (await session.list_tools()).tools}
        seen["ask"] = await _call(session, "ask", {"question": COVERED})
        seen["credential"] = await _call(session, "ask", {"question": CREDENTIAL})

    with OpenAIChatServer() as server:
        server.script(
            answer_reply(
                markdown=f"Exclude it in its front matter [[{cited.id}]]. Invented [[/nope/#x]].",
                citations=[cited.id, "/nope/#x"],
                confidence=90,
            )
        )
        _provider_config(config, server.base_url)
        _stdio(example_site, tmp_path / "stderr.txt", "--config", str(config))(body)
        assert len(server.requests) == 1  # the credential never reached the provider
    assert seen["tools"] == {*EXPECTED_TOOLS, "ask"}
    error, data, _text = seen["ask"]
    assert not error and data["kind"] == "answer"
    assert data["markdown"] == "Exclude it in its front matter [1]. Invented."
    assert [c["id"] for c in data["citations"]] == [cited.id]
    assert _anchor_exists(example_site, data["citations"][0]["url"])
    error, data, _text = seen["credential"]
    assert error and data["error"].startswith("refused")


def test_mcp_without_a_bundle_exits_2_naming_the_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [*_docpilot(), "mcp", str(tmp_path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert str(tmp_path / "docpilot" / "bundle.msgpack") in done.stderr
    assert done.stdout == ""  # stdout is the protocol's: nothing else goes there


# ------------------------------------------------ several bundles: languages and versions

SITE_URL = "https://docs.example.com/"
GERMAN = "Welche Python-Version wird für den Bau benötigt?"
GERMAN_WORDS = ("benötigt", "Zwischenspeicher", "Voraussetzungen", "Installieren")
LANGUAGE_SCENARIOS: Scenarios = {
    "sites": ("list_sites", {}),
    "german": ("search_docs", {"query": GERMAN, "site": "/de/"}),
    "default": ("search_docs", {"query": GERMAN}),
    "pages_de": ("list_pages", {"site": "/de/"}),
    "unknown_site": ("search_docs", {"query": GERMAN, "site": "/fr/"}),
    "site_by_name": ("list_pages", {"site": "de"}),
    "site_not_a_string": ("list_pages", {"site": 2}),
    "credential_site": ("list_pages", {"site": CREDENTIAL}),
    "sites_with_site": ("list_sites", {"site": "/de/"}),
}


@pytest.fixture(scope="module")
def languages_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """English at / and German at /de/ (mkdocs-static-i18n, folder layout), published
    at SITE_URL: every language's build keeps the root's site_url."""
    work = tmp_path_factory.mktemp("mcp-languages")
    config = i18n_site(work, "folder")
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    config.write_text(yaml.safe_dump({"site_url": SITE_URL, **data}, sort_keys=False))
    mkdocs_build(config)
    return work / "site"


async def _run_language_scenarios(session: ClientSession, recorded: Recorded) -> None:
    await _record(session, recorded, LANGUAGE_SCENARIOS, opening=True)
    first = recorded.results["german"][1]["sections"][0]
    then: Scenarios = {
        "fetch_de": ("fetch_section", {"id": first["id"], "site": "/de/"}),
        "fetch_by_url": ("fetch_section", {"id": first["url"]}),
        "fetch_de_id_at_root": ("fetch_section", {"id": first["id"]}),
        "expand_de": ("expand_section", {"id": first["id"], "direction": "after", "site": "/de/"}),
    }
    await _record(session, recorded, then)


@pytest.fixture(scope="module")
def languages_stdio(
    languages_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Recorded, list[dict[str, Any]]]:
    recorded = Recorded()
    run = _stdio(languages_site, tmp_path_factory.mktemp("mcp-de") / "stderr.txt")
    run(lambda session: _run_language_scenarios(session, recorded))
    return recorded, load_runtime(languages_site).health()["sites"]


@pytest.fixture(scope="module")
def languages_http(languages_site: Path) -> tuple[Recorded, list[dict[str, Any]]]:
    recorded = Recorded()
    with serve_app(create_app(languages_site, example_settings())) as running:
        _http(running.base_url)(lambda session: _run_language_scenarios(session, recorded))
        health = httpx.get(running.base_url + "/api/health", timeout=30).json()
    return recorded, health["sites"]


LANGUAGE_TRANSPORTS = ["languages_stdio", "languages_http"]


@pytest.mark.parametrize("transport", LANGUAGE_TRANSPORTS)
def test_every_tool_but_list_sites_takes_an_optional_site_listing_the_bundles(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _health = request.getfixturevalue(transport)
    assert set(recorded.tools) == EXPECTED_TOOLS
    assert recorded.tools["list_sites"]["properties"] == {}
    for name in EXPECTED_TOOLS - {"list_sites"}:
        schema = recorded.tools[name]
        site = schema["properties"]["site"]
        assert site["enum"] == ["/", "/de/"]
        assert "'/de/' (language de)" in site["description"]
        assert "site" not in schema["required"] and schema["additionalProperties"] is False


@pytest.mark.parametrize("transport", LANGUAGE_TRANSPORTS)
def test_list_sites_names_the_bundles_as_api_health_does(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, health = request.getfixturevalue(transport)
    error, data, _text = recorded.results["sites"]
    assert not error
    described = [(s["prefix"], s["language"], s["version"]) for s in data["sites"]]
    assert described == [(s["prefix"], s["language"], s["version"]) for s in health]
    assert described == [("/", "en", ""), ("/de/", "de", "")]
    assert [(s["default"], s["url"]) for s in data["sites"]] == [
        (True, SITE_URL),
        (False, SITE_URL + "de/"),
    ]
    assert all(s["pages"] == 2 and s["sections"] >= 2 for s in data["sites"])
    error, data, _text = recorded.results["sites_with_site"]
    assert error and "'site'" in data["error"]  # list_sites lists them all; it takes none


@pytest.mark.parametrize("transport", LANGUAGE_TRANSPORTS)
def test_an_agent_searching_the_german_bundle_gets_german_sections_and_urls(
    transport: str, request: pytest.FixtureRequest, languages_site: Path
) -> None:
    recorded, _health = request.getfixturevalue(transport)
    error, data, _text = recorded.results["german"]
    assert not error and data["covered"] is True and data["site"] == "/de/"
    assert any("benötigt" in s["text"] for s in data["sections"])
    assert not any("or newer" in s["text"] for s in data["sections"])
    for section in data["sections"]:
        assert section["url"].startswith(SITE_URL + "de/"), section["url"]
        assert section["url"] == SITE_URL + "de" + section["id"]
        assert _anchor_exists(languages_site, section["url"]), section["url"]
    # Without `site`, the root bundle (English) answers: nothing German, nothing under /de/.
    error, data, _text = recorded.results["default"]
    assert not error and data["site"] == "/"
    found = data.get("sections", []) + data.get("closest", [])
    assert found and not any(urlsplit(f["url"]).path.startswith("/de/") for f in found)
    assert not any(w in s["text"] for s in data.get("sections", []) for w in GERMAN_WORDS)


@pytest.mark.parametrize("transport", LANGUAGE_TRANSPORTS)
def test_german_pages_and_sections_read_by_id_or_by_url(
    transport: str, request: pytest.FixtureRequest, languages_site: Path
) -> None:
    recorded, _health = request.getfixturevalue(transport)
    error, data, _text = recorded.results["pages_de"]
    assert not error and data["site"] == "/de/"
    assert {p["url"] for p in data["pages"]} == {SITE_URL + "de/", SITE_URL + "de/guide/"}
    assert {p["title"] for p in data["pages"]} == {"Installation", "Anleitung"}
    first = recorded.results["german"][1]["sections"][0]
    for key in ("fetch_de", "fetch_by_url"):  # a section URL names its bundle by itself
        error, data, _text = recorded.results[key]
        assert not error and data["site"] == "/de/", (key, data)
        assert data["sections"][0] == first
    # A German id alone is read in the root bundle, which has no such section: the error
    # says which site has it.
    error, data, _text = recorded.results["fetch_de_id_at_root"]
    assert error and "no section has the id" in data["error"]
    assert "'/de/'" in data["error"] and "'site'" in data["error"]
    error, data, _text = recorded.results["expand_de"]
    assert not error and data["site"] == "/de/"
    for section in data["sections"]:
        assert section["url"].startswith(SITE_URL + "de/")
        assert _anchor_exists(languages_site, section["url"])


@pytest.mark.parametrize("transport", LANGUAGE_TRANSPORTS)
@pytest.mark.parametrize("scenario", ["unknown_site", "site_by_name", "site_not_a_string"])
def test_a_site_it_does_not_serve_is_an_error_naming_the_argument_and_the_choices(
    transport: str, scenario: str, request: pytest.FixtureRequest
) -> None:
    recorded, _health = request.getfixturevalue(transport)
    error, data, text = recorded.results[scenario]
    assert error and "sections" not in data and "pages" not in data
    assert "'site'" in data["error"] and "'/' (language en)" in data["error"]
    assert "'/de/' (language de)" in data["error"] and "list_sites" in data["error"]
    assert data["sites"] == ["/", "/de/"]
    assert json.loads(text) == data


@pytest.mark.parametrize("transport", LANGUAGE_TRANSPORTS)
def test_a_credential_given_as_the_site_is_refused_and_never_echoed(
    transport: str, request: pytest.FixtureRequest
) -> None:
    recorded, _health = request.getfixturevalue(transport)
    error, data, text = recorded.results["credential_site"]
    assert error and data["error"].startswith("refused") and "sites" not in data
    assert SECRET not in text and KEY_ID not in text


def test_a_language_project_whose_site_url_has_its_folder_links_under_it_once(
    tmp_path: Path,
) -> None:
    """One MkDocs project per language, each with its own site_url (…/en/, …/de/): the
    bundle's site_url already ends with its prefix, and URLs carry the folder once."""
    site = build_project_per_language(tmp_path, SITE_URL)
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        await session.initialize()
        seen["sites"] = await _call(session, "list_sites", {})
        seen["german"] = await _call(session, "search_docs", {"query": GERMAN, "site": "/de/"})

    _stdio(site, tmp_path / "stderr.txt")(body)
    error, data, _text = seen["sites"]
    assert [(s["prefix"], s["url"]) for s in data["sites"]] == [
        ("/de/", SITE_URL + "de/"),
        ("/en/", SITE_URL + "en/"),
    ]
    error, data, _text = seen["german"]
    assert not error and data["covered"] is True
    assert any("benötigt" in s["text"] for s in data["sections"])
    for section in data["sections"]:
        assert section["url"] == SITE_URL + "de" + section["id"]
        assert _anchor_exists(site, section["url"]), section["url"]


def _provider_config(path: Path, base_url: str) -> Path:
    path.write_text(
        f'[[providers]]\nkind = "openai"\nbase_url = "{base_url}"\nmodel = "test-model"\n',
        encoding="utf-8",
    )
    return path


def test_two_versions_by_mike_each_searched_and_asked_through_its_own_site(
    versioned_site: Path, tmp_path: Path
) -> None:
    """No site_url: URLs are paths under the version's prefix, as the widget served from
    that version links them. The same section id in both versions is read in the one
    chosen, and `ask` cites the chosen version's section."""
    v2 = load_runtime(versioned_site).site_for("/2.0/")
    cited = v2.retrieve(AskRequest(VERSIONS_QUESTION)).shown_units()[0]
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        await session.initialize()
        listed = {t.name: dict(t.input_schema) for t in (await session.list_tools()).tools}
        seen["ask_schema"] = listed["ask"]
        seen["sites"] = await _call(session, "list_sites", {})
        for prefix in ("/1.0/", "/2.0/"):
            seen[prefix] = await _call(
                session, "search_docs", {"query": VERSIONS_QUESTION, "site": prefix}
            )
            seen["fetch" + prefix] = await _call(
                session, "fetch_section", {"id": cited.id, "site": prefix}
            )
        seen["latest"] = await _call(
            session, "search_docs", {"query": VERSIONS_QUESTION, "site": "latest"}
        )
        seen["ask"] = await _call(session, "ask", {"question": VERSIONS_QUESTION, "site": "/2.0/"})

    with OpenAIChatServer() as server:
        server.script(
            answer_reply(
                markdown=f"In the user cache directory [[{cited.id}]].",
                citations=[cited.id],
                confidence=90,
            )
        )
        config = _provider_config(tmp_path / "docpilot.toml", server.base_url)
        _stdio(versioned_site, tmp_path / "stderr.txt", "--config", str(config))(body)
        primed = json.dumps(server.requests[0].body, ensure_ascii=False)
    assert seen["ask_schema"]["properties"]["site"]["enum"] == ["/1.0/", "/2.0/"]
    error, data, _text = seen["sites"]
    assert [(s["prefix"], s["version"], s["default"], s["url"]) for s in data["sites"]] == [
        ("/1.0/", "1.0", True, "/1.0/"),
        ("/2.0/", "2.0", False, "/2.0/"),
    ]
    for prefix, words in (("/1.0/", "Version one"), ("/2.0/", "Version two")):
        error, data, _text = seen[prefix]
        assert not error and data["covered"] is True and data["site"] == prefix
        assert any(words in s["text"] for s in data["sections"])
        for section in data["sections"]:
            assert section["url"] == prefix.rstrip("/") + section["id"]
            assert _anchor_exists(versioned_site, section["url"]), section["url"]
        error, data, _text = seen["fetch" + prefix]
        assert not error and words in data["sections"][0]["text"]
        assert data["sections"][0]["url"] == prefix.rstrip("/") + cited.id
    error, data, _text = seen["latest"]
    assert error and "'site'" in data["error"]
    assert "'/1.0/' (version 1.0)" in data["error"] and "'/2.0/' (version 2.0)" in data["error"]
    assert "Version two" in primed and "Version one" not in primed  # the 2.0 bundle's excerpts
    error, data, _text = seen["ask"]
    assert not error and data["kind"] == "answer" and data["site"] == "/2.0/"
    assert [(c["id"], c["url"]) for c in data["citations"]] == [(cited.id, "/2.0" + cited.id)]
    assert _anchor_exists(versioned_site, data["citations"][0]["url"])


def test_over_http_the_ask_tools_answer_cap_counts_per_chosen_site(
    versioned_site: Path, tmp_path: Path
) -> None:
    """`ask` takes its answer from the app's caps under the chosen bundle's prefix, as
    /api/ask does under the reader's: one answer a minute per site here."""
    v1 = load_runtime(versioned_site).site_for("/1.0/")
    cited = v1.retrieve(AskRequest(VERSIONS_QUESTION)).shown_units()[0]
    seen: list[tuple[bool, dict[str, Any], str]] = []
    with OpenAIChatServer() as server:
        for _ in range(2):
            server.script(
                answer_reply(markdown=f"There [[{cited.id}]].", citations=[cited.id])
            )
        provider = ProviderSettings(kind="openai", base_url=server.base_url, model="test-model")
        caps = LimitSettings(answers_per_minute=1, answers_per_minute_per_client=0)
        settings = Settings(providers=(provider,), caps=caps)
        async def body(session: ClientSession) -> None:
            await session.initialize()
            for prefix in ("/1.0/", "/1.0/", "/2.0/"):
                args = {"question": VERSIONS_QUESTION, "site": prefix}
                seen.append(await _call(session, "ask", args))

        with serve_app(create_app(versioned_site, settings)) as running:
            _http(running.base_url)(body)
        assert len(server.requests) == 2  # the capped call reached no provider
    assert [error for error, _data, _text in seen] == [False, True, False]
    assert "answer cap reached (site)" in seen[1][1]["error"]
    assert [seen[0][1]["site"], seen[2][1]["site"]] == ["/1.0/", "/2.0/"]
