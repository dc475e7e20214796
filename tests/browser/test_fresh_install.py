"""The fresh install's site (tests/fresh_install.py: the wheel in a new venv, a Material
site built offline with no Node) served by that venv's own `docpilot serve`: the widget
boots Pyodide from the reduced, precompressed files and answers in Chromium."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator

import httpx
import pytest
from browsing import Reader
from fresh_install import FreshSite, fresh_site
from playwright.sync_api import Page

__all__ = ["fresh_site"]


@pytest.fixture
def fresh_server(fresh_site: FreshSite) -> Iterator[str]:
    """`docpilot serve site/` from the fresh venv, on a free loopback port; yields its URL
    once uvicorn says it is listening."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(fresh_site.venv / "bin" / "docpilot"), "serve", str(fresh_site.site)]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        env=fresh_site.env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            if "Uvicorn running on" in line:
                break
        else:
            pytest.fail(f"docpilot serve exited {process.wait()}: {''.join(seen)}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.timeout(900)  # the fresh install (tests/fresh_install.py) takes minutes
def test_fresh_install_serves_precompressed_pyodide_and_the_widget_answers(
    page: Page, fresh_server: str
) -> None:
    wasm = f"{fresh_server}/docpilot/pyodide/pyodide.asm.wasm"
    packed = httpx.head(wasm, headers={"Accept-Encoding": "gzip, br"})
    assert packed.headers["content-encoding"] == "br"
    assert packed.headers["content-type"] == "application/wasm"
    assert packed.headers["vary"] == "Accept-Encoding"
    plain = httpx.head(wasm, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert int(plain.headers["content-length"]) > 2 * int(packed.headers["content-length"])

    reader = Reader(page)
    page.on("request", lambda request: reader.requests.append(request))
    page.goto(f"{fresh_server}/install/")
    reader.open_panel()
    reader.ask("How do I change the colours of the widget?")
    body = reader.wait_answer()
    assert body.get_attribute("data-kind") in ("passages", "answer")
    assert page.locator(".dp-cites li a").count() >= 1
    loaded = {r.url.removeprefix(fresh_server) for r in reader.requests}
    assert "/docpilot/pyodide/docpilot-stdlib.zip" in loaded
    assert "/docpilot/pyodide/python_stdlib.zip" not in loaded
