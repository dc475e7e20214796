"""The widget's life on a page: where it sends questions (the runtime, a runtime under a
path prefix, or none at all: static mode by itself), when Pyodide starts (at the first
sign of intent), where its files come from on the next page load (Cache Storage), and a
question a page load interrupted (offered again with Retry)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browsing import ANSWER_TIMEOUT_MS, MKDOCS_ENV, Reader, file_server
from corpora import EXAMPLE_SITE
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.sites.loader import load_site
from playwright.sync_api import expect
from servers.anthropic_messages import Fault, answer_reply
from servers.openai_chat import OpenAIChatServer
from servers.prefix_proxy import prefix_proxy
from servers.processes import free_port
from servers.runtime import NO_CAPS, serve_app

COVERED = "How do I exclude a page from the assistant?"
STRINGS = json.loads((Path(__file__).parents[2] / "widget/i18n/en.json").read_text("utf-8"))
PYODIDE_KEPT = (".wasm", ".zip", ".whl")  # what the worker keeps in Cache Storage
SERVE_DEADLINE = 180.0  # seconds for `mkdocs serve` to build example-site and listen


def asked(reader: Reader) -> list[str]:
    return [r.url for r in reader.requests if r.method == "POST" and "/api/ask" in r.url]


# ---------------------------------------------------------------- no runtime at all




@pytest.fixture(scope="module")
def mkdocs_serve(example_site: Path) -> Iterator[str]:
    """A real `mkdocs serve` of example-site (the plugin builds it; no runtime, no /api).
    Depends on `example_site` so the embedding cache is warm before it starts."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "-f", str(EXAMPLE_SITE / "mkdocs.yml"),
         "-a", f"127.0.0.1:{port}"],
        env=MKDOCS_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVE_DEADLINE
        while True:  # until it has built and listens (or has died)
            if process.poll() is not None:
                pytest.fail(f"mkdocs serve exited {process.returncode}: {process.stderr.read()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/docpilot/static.json", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"mkdocs serve did not answer within {SERVE_DEADLINE} s")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if process.stderr:
            process.stderr.close()


def assert_answered_in_the_browser(reader: Reader, base: str) -> None:
    page = reader.page
    reader.open_panel()
    notice = page.locator("#dp-panel .dp-notice")
    expect(notice).to_have_text(STRINGS["static_fallback"], timeout=ANSWER_TIMEOUT_MS)
    reader.ask(COVERED)
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "passages"
    href = page.locator(".dp-cites li a").first.get_attribute("href") or ""
    assert href.startswith(f"{base}/") and "#" in href
    reader.ask("hello")
    assert reader.wait_answer(1).get_attribute("data-kind") == "social"
    expect(notice).to_have_count(1)  # said once, not per answer
    expect(page.locator(".dp-fb")).to_have_count(0)  # nowhere to send feedback
    # It asked whether a runtime was there, found none, and sent no question anywhere.
    assert f"{base}/api/health" in [r.url for r in reader.requests]
    assert asked(reader) == []
    assert f"{base}/docpilot/static/manifest.json" in [r.url for r in reader.requests]


def test_under_mkdocs_serve_the_widget_answers_in_static_mode_by_itself(
    reader: Reader, mkdocs_serve: str
) -> None:
    reader.page.goto(f"{mkdocs_serve}/reference/cli/")
    assert_answered_in_the_browser(reader, mkdocs_serve)


@pytest.fixture(scope="module")
def default_site_on_static_host(example_site: Path) -> Iterator[str]:
    """example-site as built with the default endpoint, published on a plain file server
    (as on GitHub Pages with the runtime never deployed)."""
    with file_server(example_site) as base:
        yield base


def test_on_a_static_host_the_default_endpoint_falls_back_to_static_mode(
    reader: Reader, default_site_on_static_host: str
) -> None:
    reader.page.goto(f"{default_site_on_static_host}/guides/static-sites/")
    assert_answered_in_the_browser(reader, default_site_on_static_host)


# ---------------------------------------------------------------- under a path prefix


@pytest.fixture(scope="module")
def docs_behind_proxy(example_site: Path) -> Iterator[str]:
    """The runtime serving example-site with root_path /docs, behind a proxy that
    publishes it at /docs/ and strips the prefix; nothing else on the proxy's host."""
    settings = Settings(caps=NO_CAPS)
    app = create_app(example_site, settings, root_path="/docs")
    with serve_app(app) as runtime, serve_app(prefix_proxy(runtime.base_url, "/docs")) as front:
        yield front.base_url


def test_behind_a_path_prefix_the_widget_posts_to_the_sites_own_api(
    reader: Reader, docs_behind_proxy: str
) -> None:
    page = reader.page
    site = f"{docs_behind_proxy}/docs"
    page.goto(f"{site}/reference/cli/")
    reader.open_panel()
    reader.ask(COVERED)
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "passages"
    assert asked(reader) == [f"{site}/api/ask"]
    assert reader.asks()[0]["page"] == "/docs/reference/cli/"
    href = page.locator(".dp-cites li a").first.get_attribute("href") or ""
    assert href.startswith(f"{site}/") and "#" in href
    expect(page.locator("#dp-panel .dp-notice")).to_have_count(0)  # a runtime answered


# ---------------------------------------------------------------- boot at intent, cache


@pytest.mark.cold_pyodide
def test_pyodide_starts_booting_when_the_pointer_reaches_the_launcher(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    with page.expect_request(lambda r: r.url.endswith("/pyodide.asm.wasm"), timeout=30_000):
        page.locator(".dp-launcher").hover()
    expect(page.locator("#dp-panel")).to_be_hidden()  # not opened: only hovered
    assert any(r.url.endswith("/api/health") for r in reader.requests)
    assert asked(reader) == []  # nothing of the reader's went anywhere
    reader.open_panel()
    reader.ask(COVERED)
    assert reader.wait_answer().get_attribute("data-kind") == "passages"


@pytest.mark.cold_pyodide
def test_the_next_page_load_boots_pyodide_from_cache_storage(reader: Reader) -> None:
    page = reader.page
    page.goto("/")
    reader.open_panel()
    reader.ask(COVERED)
    reader.wait_answer()
    kept = page.evaluate(
        """async () => {
          const names = (await caches.keys()).filter((n) => n.startsWith('docpilot-pyodide-'));
          const cache = await caches.open(names[0]);
          return {names, urls: (await cache.keys()).map((r) => r.url)};
        }"""
    )
    assert len(kept["names"]) == 1
    for suffix in PYODIDE_KEPT:
        assert any(u.endswith(suffix) for u in kept["urls"]), (suffix, kept["urls"])

    reader.requests.clear()
    page.reload()  # a full page load: a new worker, a new Pyodide
    page.locator("#dp-panel").wait_for(state="visible")  # the conversation reopens
    reader.ask("Can DocPilot run without a server?")
    reader.wait_answer(1)
    loaded = [r.url for r in reader.requests]
    assert any(u.endswith("/docpilot/worker.js") for u in loaded)  # it did boot again
    assert any(u.endswith("/docpilot-lock.json") for u in loaded)
    fetched = [u for u in loaded if u.endswith(PYODIDE_KEPT)]
    assert fetched == [], f"fetched again instead of read from Cache Storage: {fetched}"


# ---------------------------------------------------------------- a page load mid-answer


@pytest.fixture
def slow_model(example_site: Path) -> Iterator[tuple[str, OpenAIChatServer]]:
    """The runtime with a scripted model whose first reply streams on and on (it never
    finishes) and whose second answers, citing the covered section."""
    unit = load_site(example_site, "/").retrieve(AskRequest(COVERED)).shown_units()[0].id
    script = [
        Fault("slow", seconds=60),
        answer_reply(markdown=f"Set `docpilot: exclude` [[{unit}]]."),
    ]
    with OpenAIChatServer(script) as llm:
        provider = ProviderSettings(
            kind="openai", base_url=llm.base_url, model="scripted-model", retries=0
        )
        settings = Settings(providers=(provider,), caps=NO_CAPS)
        with serve_app(create_app(example_site, settings)) as runtime:
            yield runtime.base_url, llm


def test_a_page_load_mid_answer_restores_the_question_with_a_retry_that_answers(
    reader: Reader, slow_model: tuple[str, OpenAIChatServer]
) -> None:
    base, llm = slow_model
    page = reader.page
    page.goto(f"{base}/reference/cli/")
    reader.open_panel()
    reader.ask(COVERED)
    # The model is streaming and the widget kept the (checked) question while it waits.
    page.wait_for_function(
        "() => JSON.parse(sessionStorage.getItem('docpilot:chat') || '{}').pending?.question",
        timeout=ANSWER_TIMEOUT_MS,
    )
    assert llm.wait_until(lambda s: bool(s.started_streams), 30), "the model was never called"

    page.reload()
    # Leaving the page closed the request, and the runtime stopped the model's stream.
    assert llm.wait_until(lambda s: bool(s.closed_by_client), 30)
    turn = page.locator(".dp-turn")
    expect(turn).to_have_count(1)
    expect(turn.locator(".dp-q")).to_have_text(COVERED)
    expect(turn.locator(".dp-error")).to_contain_text(STRINGS["interrupted"])
    turn.get_by_role("button", name="Retry").click()
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "answer"
    expect(body).to_contain_text("docpilot: exclude")
    expect(page.locator(".dp-turn")).to_have_count(1)
    assert [a["question"] for a in reader.asks()] == [COVERED, COVERED]
    # Answered, nothing is pending any more: another load shows the answer, no Retry.
    page.reload()
    expect(page.locator(".dp-turn .dp-body[data-kind='answer']")).to_have_count(1)
    expect(page.locator(".dp-turn .dp-error")).to_have_count(0)
