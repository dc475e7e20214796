"""The reader's widget in Chromium with a real small model answering (issue 22).

example-site is served by the real runtime whose one provider is llama.cpp's server with
Qwen2.5-Coder-0.5B (`local_engine`, compact profile). Nothing asserts wording: the turn
reaches the widget piece by piece while the model works (progress first, validated text
before the final answer when the model cites inline), the final reply is one of the
grounded kinds, its citation links land on the cited sections, and no link in it leaves
the page set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browsing import Reader
from docpilot_runtime.providers import ProviderSettings
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.limits import LimitSettings
from docpilot_runtime.settings.load import Settings
from local_engine import MODEL
from servers.runtime import RunningServer, serve_app

pytestmark = pytest.mark.real_model

QUESTION = "What host and port does docpilot serve use by default?"
# When each change the widget made happened (ms since the page's start).
RECORD_TIMES = """
window.__docpilotTimes = [];
new MutationObserver((records) => {
  for (const record of records) for (const node of record.addedNodes) {
    if (node.nodeType !== 1) continue;
    const times = window.__docpilotTimes;
    if (node.matches('.dp-steps li')) times.push(['progress', performance.now()]);
    const body = record.target.closest && record.target.closest('.dp-body:not([data-kind])');
    if (body) times.push(['draft', performance.now()]);
    if (node.matches && node.matches('.dp-body[data-kind]')) times.push(['final', performance.now()]);
  }
  for (const record of records) {
    if (record.type === 'attributes' && record.target.matches('.dp-body[data-kind]'))
      window.__docpilotTimes.push(['final', performance.now()]);
  }
}).observe(document, {childList: true, subtree: true, attributes: true,
                      attributeFilter: ['data-kind']});
"""


@pytest.fixture(scope="module")
def model_server(local_model: Any, example_site: Path) -> Iterator[RunningServer]:
    provider = ProviderSettings(
        kind="openai", base_url=local_model.base_url, model=MODEL, profile="compact",
        temperature=0.0, max_tokens=160, timeout=600.0, first_token_timeout=600.0,
        idle_timeout=300.0,
    )
    caps = LimitSettings(answers_per_minute=0, answers_per_minute_per_client=0)
    with serve_app(create_app(example_site, Settings(providers=(provider,), caps=caps))) as up:
        yield up


@pytest.mark.timeout(900)  # one real turn on a shared CPU: minutes, not the default 300 s
def test_a_real_models_turn_reaches_the_widget_piece_by_piece_and_grounded(
    reader: Reader, model_server: RunningServer, example_site: Path
) -> None:
    page = reader.page
    page.add_init_script(RECORD_TIMES)
    page.goto(model_server.base_url + "/")
    reader.open_panel()
    reader.ask(QUESTION)
    turn = reader.page.locator(".dp-turn").nth(0)
    body = turn.locator(".dp-body[data-kind]")
    # The final reply, or the widget's error state (which would otherwise be waited out).
    turn.locator(".dp-body[data-kind], .dp-error").first.wait_for(timeout=600_000)
    errors = turn.locator(".dp-error")
    assert not errors.count(), f"the widget failed the turn: {errors.first.inner_text()}"

    times = page.evaluate("window.__docpilotTimes")
    final_at = min(t for kind, t in times if kind == "final")
    progress_at = [t for kind, t in times if kind == "progress"]
    # The progress lines arrived while the model was still reading the prompt: the turn
    # streamed, it was not delivered at once at the end.
    assert progress_at and min(progress_at) < final_at - 1000, times
    drafts = [t for kind, t in times if kind == "draft"]
    assert all(t <= final_at for t in drafts)

    kind = body.get_attribute("data-kind")
    assert kind in ("answer", "passages", "refusal")
    panel_links = body.locator("a[href]")
    site = model_server.base_url
    for i in range(panel_links.count()):
        href = panel_links.nth(i).get_attribute("href") or ""
        assert href.startswith(("#", "/", site)), f"a link leaves the site: {href}"
    cites = page.locator(".dp-cites li a")
    for i in range(cites.count()):
        target = cites.nth(i).get_attribute("href") or ""
        path, _, anchor = target.removeprefix(site).partition("#")
        html = (example_site / path.strip("/") / "index.html").read_text(encoding="utf-8")
        assert f'id="{anchor}"' in html, f"citation {target} lands on no anchor"
    if kind == "answer":
        assert cites.count() >= 1 and body.locator("a.dp-cite").count() >= 1
