"""A real `mkdocs serve` of a site with the plugin: the widget asks `/api/health` whether
a runtime is there on every page load, and MkDocs' dev server has none; the build under
`serve` writes a small health file there, so the answer is a 200 that is not the
runtime's JSON (the widget reads it as "no runtime", as before) and the dev server's log
shows no 404 for it. `mkdocs build` writes no such file into a published site."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from corpora import MKDOCS_ENV, SiteFactory, mkdocs_build
from servers.processes import free_port

DEADLINE = 180.0  # seconds for the first build and the server to listen, on a loaded machine
PAGES = {"index.md": "# Home\n\nHow to install the package with pip.\n"}


@contextlib.contextmanager
def mkdocs_serve(config: Path, log: Path) -> Iterator[str]:
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "-f", str(config), "-a", f"127.0.0.1:{port}"],
            env=MKDOCS_ENV, cwd=config.parent, stdout=out, stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + DEADLINE
            while True:  # until it has built and listens (or has died)
                assert process.poll() is None, log.read_text()
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{base}/docpilot/static.json", timeout=5).status_code == 200:
                        break
                assert time.monotonic() < deadline, "mkdocs serve never answered"
                time.sleep(0.2)  # polling the server, with a deadline
            yield base
        finally:
            process.terminate()
            process.wait(30)


def test_the_widget_s_health_probe_gets_no_404_under_mkdocs_serve(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    config = make_site(PAGES)
    log = tmp_path / "serve.log"
    with mkdocs_serve(config, log) as base:
        page = httpx.get(f"{base}/")
        probe = httpx.get(f"{base}/api/health", headers={"Accept": "application/json"})
    assert page.status_code == 200
    assert probe.status_code == 200, log.read_text()
    assert "json" not in probe.headers.get("content-type", ""), "not the runtime's JSON"
    # The dev server logs each request that is not a 200 as '"GET /path HTTP/1.1" code 404'
    # (a bare "404" could be part of its port number).
    assert " code 404" not in log.read_text()

    mkdocs_build(config)
    assert not (config.parent / "site" / "api").exists(), "nothing of the kind is published"
