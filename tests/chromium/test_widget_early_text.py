"""Text as early as validation allows, seen in the panel: a model that cites at the end of
each paragraph (a real runtime, a scripted Anthropic-protocol model whose stream the test
holds at chosen points). Nothing of the answer shows before its first citation is
complete; from that moment the text up to it shows, before its paragraph ends, while the
model is still writing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import ANSWER_TIMEOUT_MS, Reader
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.sites.loader import load_site
from playwright.sync_api import expect
from servers.anthropic_messages import AnthropicServer, answer_reply
from servers.runtime import NO_CAPS, serve_app

QUESTION = "How do I exclude a page from the assistant?"
FIRST = (
    "To leave a page out of the assistant, list it under exclude in the plugin's options. "
    "The option takes globs, matched against URL paths and source paths alike. A page "
    "that matches is built as usual but never indexed"
)
SECOND = "Excluded pages stay published; no answer can cite them"
LAST = "Rebuild the site afterwards and read the build log, which names each page left out"


@pytest.fixture(scope="module")
def late_citer(example_site: Path) -> Iterator[tuple[str, AnthropicServer, str]]:
    """The runtime on example-site with a scripted model (Anthropic's protocol) that
    cites at the end of each paragraph; (runtime URL, model server, citation marker)."""
    unit = load_site(example_site, "/").retrieve(AskRequest(QUESTION)).shown_units()[0].id
    with AnthropicServer(chunk_chars=1) as llm:
        provider = ProviderSettings(
            kind="anthropic", base_url=llm.base_url, model="scripted-model", retries=0
        )
        settings = Settings(providers=(provider,), caps=NO_CAPS)
        with serve_app(create_app(example_site, settings)) as runtime:
            yield runtime.base_url, llm, f"[[{unit}]]"


def test_a_late_citing_model_s_text_shows_once_its_first_citation_is_complete(
    reader: Reader, late_citer: tuple[str, AnthropicServer, str]
) -> None:
    base, llm, cite = late_citer
    markdown = f"{FIRST} {cite}.\n\n{SECOND} {cite}.\n\n{LAST} {cite}.\n"
    llm.script(answer_reply(markdown=markdown, citations=[cite[2:-2]], confidence=90))
    # The model's stream waits just before its first citation is complete, then just
    # after it, before the paragraph ends (one character per event, so each wait falls
    # exactly there): what the reader sees at each point is asserted while it waits.
    before_cite = llm.hold_before(f"indexed {cite}")
    after_cite = llm.hold_before(f"indexed {cite}.\\n")  # a newline, as JSON writes it
    page = reader.page
    page.goto(f"{base}/")
    reader.open_panel()
    reader.ask(QUESTION)

    assert llm.wait_until(lambda s: len(s.held) == 1, 60), "the model never streamed"
    turn = page.locator(".dp-turn")
    expect(turn.locator(".dp-steps li").first).to_be_visible()  # progress, not silence
    expect(turn.locator(".dp-body")).not_to_contain_text("leave a page out")
    before_cite.set()

    assert llm.wait_until(lambda s: len(s.held) == 2, 60)
    # The citation is complete, the paragraph not yet: the text up to the citation shows
    # now, as a draft (which draws a citation as "[n]"; the settled answer as a linked
    # digit), not at the paragraph's end and not at the answer's.
    draft = turn.locator(".dp-body:not([data-kind])")
    expect(draft).to_contain_text(f"{FIRST} [1]", timeout=ANSWER_TIMEOUT_MS)
    expect(draft).not_to_contain_text(SECOND)
    reader.screenshot("early-text-while-the-model-writes")
    after_cite.set()

    body = reader.wait_answer()
    assert body.get_attribute("data-kind") == "answer"
    expect(body).to_contain_text(f"{SECOND} 1.")
    expect(body).to_contain_text(f"{LAST} 1.")
    # Every draft the panel ever drew began with the first paragraph and its citation:
    # nothing was shown before it was validated.
    drafts = [text for kind, text in page.evaluate("window.__docpilotSeen") if kind == "draft"]
    shown = [text for text in drafts if text.strip()]
    assert shown and all(text.startswith(f"{FIRST} [1]") for text in shown), shown
