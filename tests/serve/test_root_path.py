"""`docpilot serve --root-path /docs`: the site and its API behind a reverse proxy that
publishes them under /docs/, over real HTTP (runtime and proxy on uvicorn)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from docpilot_runtime.cli import main
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.serve.root_path import RootPathError, normalise_root_path
from docpilot_runtime.serve.security_headers import API_POLICY
from docpilot_runtime.settings.load import Settings
from servers.prefix_proxy import prefix_proxy
from servers.runtime import NO_CAPS, serve_app


def test_a_root_path_is_normalised_and_a_bad_one_is_refused_by_name() -> None:
    assert normalise_root_path("") == ""
    assert normalise_root_path("/") == ""
    assert normalise_root_path("docs/") == "/docs"
    assert normalise_root_path("/team/docs") == "/team/docs"
    for bad in ("/a/../b", "/a b", "/a?x=1", "//"):
        if bad == "//":
            assert normalise_root_path(bad) == ""
            continue
        with pytest.raises(RootPathError, match="--root-path"):
            normalise_root_path(bad)


def test_the_cli_refuses_a_bad_root_path_before_serving(
    example_site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(example_site), "--root-path", "/a/../b"]) == 2
    assert "--root-path" in capsys.readouterr().err


@pytest.fixture(scope="module", params=["stripping", "passing"])
def behind_proxy(request: pytest.FixtureRequest, example_site: Path) -> Iterator[str]:
    """The runtime with root_path /docs behind a proxy that strips /docs (nginx's
    `proxy_pass http://runtime/;`) or passes it through; yields the proxy's /docs URL."""
    app = create_app(example_site, Settings(caps=NO_CAPS), root_path="/docs/")
    with serve_app(app) as runtime:
        proxy = prefix_proxy(runtime.base_url, "/docs", strip=request.param == "stripping")
        with serve_app(proxy) as front:
            yield f"{front.base_url}/docs"


def test_pages_and_the_api_answer_under_the_prefix(behind_proxy: str) -> None:
    with httpx.Client(timeout=30) as client:
        health = client.get(f"{behind_proxy}/api/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert health.headers["content-security-policy"] == API_POLICY
        page = client.get(f"{behind_proxy}/reference/cli/")
        assert page.status_code == 200 and "docpilot-config" in page.text
        assert "frame-ancestors" in page.headers["content-security-policy"]
        assert page.headers["content-security-policy"] != API_POLICY
        # A directory without its slash redirects under the prefix, not to the host root.
        moved = client.get(f"{behind_proxy}/reference/cli")
        assert moved.status_code in (307, 308)
        assert httpx.URL(moved.headers["location"]).path == "/docs/reference/cli/"
        wasm = client.get(f"{behind_proxy}/docpilot/pyodide/pyodide.asm.wasm")
        assert wasm.headers["content-type"] == "application/wasm"
        ask = client.post(
            f"{behind_proxy}/api/ask",
            json={"question": "How do I exclude a page?", "page": "/docs/reference/cli/"},
        )
        assert ask.status_code == 200 and ask.json()["kind"] in ("passages", "answer")
        missing = client.get(f"{behind_proxy}/api/nothing-here")
        assert missing.status_code == 404 and json.loads(missing.text)["error"]["field"] == "path"
