"""The fresh install's site (tests/fresh_install.py: the wheel in a new venv, a Material
site built offline with no Node) served by that venv's own `docpilot serve`: the widget
boots Pyodide from the reduced, precompressed files and answers in Chromium."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator

import httpx
import pytest
from browsing import Reader
from fresh_install import FreshSite
from playwright.sync_api import Page


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
    listening = threading.Event()
    seen: list[str] = []

    def drain() -> None:
        """Read the server's log to the end (a full pipe would stall it), and say when
        uvicorn is listening."""
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            if "Uvicorn running on" in line:
                listening.set()
        listening.set()  # it exited: the check below says so

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        listening.wait(timeout=120)
        if process.poll() is not None or not any("Uvicorn running on" in s for s in seen):
            pytest.fail(f"docpilot serve did not start: {''.join(seen)}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        reader.join(timeout=30)
        assert process.stderr is not None
        process.stderr.close()


def test_fresh_install_serves_precompressed_pyodide_and_the_widget_answers(
    page: Page, fresh_server: str
) -> None:
    wasm = f"{fresh_server}/docpilot/pyodide/pyodide.asm.wasm"
    packed = httpx.head(wasm, headers={"Accept-Encoding": "gzip, br"})
    assert packed.headers["content-encoding"] == "br"
    assert packed.headers["content-type"] == "application/wasm"
    assert "Accept-Encoding" in packed.headers["vary"]
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
