"""`docpilot serve` sends a static file's precompressed sibling with Content-Encoding when
the browser accepts it, the file itself otherwise, and Vary: Accept-Encoding either way."""

from __future__ import annotations

import gzip
from pathlib import Path

import brotli
from docpilot_runtime.serve.precompressed import accepted
from docpilot_runtime.serve.site_files import SiteFiles
from servers.asgi import in_process
from starlette.applications import Starlette
from starlette.routing import Mount


def test_accept_encoding_is_read_with_its_qualities() -> None:
    assert accepted("gzip, deflate, br, zstd") == {"gzip", "deflate", "br", "zstd"}
    assert accepted("br;q=0, gzip;q=0.5") == {"gzip"}
    assert accepted("*") >= {"br", "gzip"}
    assert accepted("") == set()


def test_site_files_send_the_sibling_the_browser_accepts(tmp_path: Path) -> None:
    wasm = b"\0asm" + bytes(range(256)) * 400
    (tmp_path / "core.wasm").write_bytes(wasm)
    (tmp_path / "core.wasm.gz").write_bytes(gzip.compress(wasm))
    (tmp_path / "core.wasm.br").write_bytes(brotli.compress(wasm))
    (tmp_path / "page.html").write_text("<p>plain</p>", encoding="utf-8")
    app = Starlette(routes=[Mount("/", app=SiteFiles(directory=tmp_path, html=True))])
    with in_process(app) as client:
        for accept, encoding in (("gzip, br", "br"), ("gzip", "gzip"), ("identity", None)):
            response = client.get("/core.wasm", headers={"Accept-Encoding": accept})
            assert response.status_code == 200
            assert response.headers.get("content-encoding") == encoding, accept
            assert response.headers["content-type"] == "application/wasm"
            assert response.headers["vary"] == "Accept-Encoding"
            assert response.content == wasm  # httpx decodes br and gzip
        plain = client.get("/page.html", headers={"Accept-Encoding": "gzip, br"})
        assert "content-encoding" not in plain.headers and "vary" not in plain.headers
        assert plain.text == "<p>plain</p>"
