"""The browser runtime: static mode answers exactly like the server's lexical mode, and
the build installs Pyodide, our wheel and lock file, and the static index, offline."""

from __future__ import annotations

import ast
import asyncio
import base64
import gzip
import hashlib
import http.server
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import brotli
import pytest
import yaml
from corpora import EXAMPLE_SITE, ROOT
from docpilot_runtime.browser import install as static_assets
from docpilot_runtime.browser import pyodide_core
from docpilot_runtime.browser import worker as browser
from docpilot_runtime.browser.install import (
    BROWSER_PACKAGES,
    LOCK_NAME,
    PYODIDE_DIR_ENV,
    PYODIDE_FILES,
    PYODIDE_LOCK_INFO,
    PYODIDE_VERSION,
    SITE_FILES,
    BrowserRuntimeError,
    PyodideSource,
    browser_lock,
    browser_sources,
    browser_wheel,
    fetch_browser_runtime,
    find_pyodide,
    install_browser_runtime,
    write_static_index,
)
from docpilot_runtime.browser.pyodide_core import STDLIB_MODULES, STDLIB_NAME
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import BundleError, bundle_path
from docpilot_runtime.bundle.write import encode_static
from docpilot_runtime.cli import main as cli_main
from docpilot_runtime.shared.types import Limits, parse_ask_request
from docpilot_runtime.turn import load_runtime

T = TypeVar("T")

# Covered, off-topic, social, credential, identifiers, CJK, and follow-ups that the
# composed channel may rescue; some on a page, so the page's units come first.
REQUESTS: list[dict[str, Any]] = [
    {"question": "How do I exclude a page from the assistant?"},
    {"question": "How should I prune an apple tree in late winter?"},
    {"question": "What is the best recipe for sourdough bread?"},
    {"question": "max_section_chars default"},
    {"question": "快速入门 安装"},
    {"question": "SSE events"},
    {"question": "How does the refusal gate decide?"},
    {"question": "Which embedders can I choose from?"},
    {"question": "hello"},
    {"question": "thanks, bye!"},
    {"question": "my key is sk-proj-Tq8vX2mLp9RzW4nB7kYc1HdF5jGs3AeU6oIy0tVb, why 401?"},
    {"question": "what does this mean?", "quote": "token ghp_R7x2Lq9Vz4Mw8Kc1Tb6Hn3Pd5Fy0Gs2Ja8Ue"},
    {"question": "How do I exclude a page from the assistant?", "page": "/guides/static-sites/"},
    {"question": "widget", "page": "/guides/customising-the-widget/#anything?x=1"},
    {
        "question": "and what is the threshold then?",
        "history": [{"question": "How does the refusal gate decide?", "kind": "passages"}],
    },
    {
        "question": "and is it the same in lexical mode?",
        "history": [
            {"question": "How does the refusal gate decide?", "kind": "passages"},
            {"question": "and what is the threshold then?", "kind": "passages", "rescued": True},
        ],
    },
    {
        "question": "and which one for Chinese then?",
        "history": [{"question": "Which embedders can I choose from?", "kind": "refusal"}],
    },
    {
        "question": "is it mandatory?",
        "history": [{"question": "How do I configure the Anthropic provider?", "kind": "answer"}],
    },
    {
        "question": "is it the default?",
        "history": [
            {"question": "max_section_chars default", "kind": "passages"},
            {"question": "does it cost anything?", "kind": "passages", "rescued": True},
        ],
    },
    {
        "question": "is it the default?",
        "history": [{"question": "max_section_chars default", "kind": "refusal"}],
    },
]


@pytest.fixture(scope="module")
def lexical_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """example-site built by `mkdocs build` with `embedder: none`."""
    work = tmp_path_factory.mktemp("static")
    config = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(EXAMPLE_SITE / "docs")
    config["site_dir"] = str(work / "site")
    config["plugins"] = [
        "search",
        {"docpilot": {"embedder": "none", "cache_dir": str(work / "cache")}},
    ]
    path = work / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    # Not conftest's mkdocs_build: `from conftest import` may find tests/chromium/conftest.py.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    command = [sys.executable, "-m", "mkdocs", "build", "-f", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)
    assert done.returncode == 0, f"mkdocs build failed:\n{done.stdout}\n{done.stderr}"
    return work / "site"


@pytest.fixture(scope="module")
def static_text(lexical_site: Path) -> str:
    return write_static_index(lexical_site).read_text(encoding="utf-8")


def _in_own_thread(run: Callable[[], T]) -> T:
    """``run()`` in a fresh thread: pytest-playwright's session keeps an event loop
    running in the main thread once a browser test has run, and asyncio.run refuses it."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result(timeout=240)


def _without_turn_id(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "turn_id"}


def _devset_requests() -> list[dict[str, Any]]:
    """Every dev-set question, alone, after its history question, and on a page."""
    lines = (ROOT / "benchmarks" / "devset" / "example-site.jsonl").read_text(encoding="utf-8")
    bodies: list[dict[str, Any]] = []
    for i, line in enumerate(lines.splitlines()):
        case = json.loads(line)
        body: dict[str, Any] = {"question": case["question"]}
        if case.get("history_question"):
            body["history"] = [{"question": case["history_question"], "kind": "passages"}]
        if case.get("pages") and i % 3 == 0:
            body["page"] = "/" + case["pages"][0]
        bodies.append(body)
    # The conversation kinds (follow-ups after covered and refused turns) of the new sets.
    for half in sorted((ROOT / "benchmarks" / "devsets" / "example-site").glob("*.jsonl")):
        for line in half.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            body = {"question": case["question"], "history": case.get("history", [])}
            if case.get("page"):
                body["page"] = "/" + case["page"].lstrip("/")
            bodies.append(body)
    return bodies


def test_static_mode_answers_exactly_like_the_server_in_lexical_mode(
    lexical_site: Path, static_text: str
) -> None:
    runtime = load_runtime(lexical_site)
    assert runtime.site_for(None).mode == "lexical"
    browser.load_static(static_text)
    kinds, rescued = set(), 0
    bodies = [*REQUESTS, *_devset_requests()]
    assert len(bodies) > 100
    for body in bodies:
        request = parse_ask_request(body, Limits())
        expected = _in_own_thread(lambda r=request: asyncio.run(runtime.ask(r))).to_dict()
        got = json.loads(browser.ask_static(json.dumps(body)))
        assert len(got["turn_id"]) == 32
        assert _without_turn_id(got) == _without_turn_id(json.loads(json.dumps(expected))), body
        kinds.add(got["kind"])
        rescued += got["rescued"]
    assert kinds == {"passages", "refusal", "social", "credential"}
    assert rescued >= 1, "the composed channel rescued no follow-up: the test lost its point"


def test_static_results_carry_the_bundle_hash_and_the_lexical_retriever(
    lexical_site: Path, static_text: str
) -> None:
    browser.load_static(static_text)
    result = json.loads(browser.ask_static(json.dumps(REQUESTS[0])))
    assert (
        result["bundle_hash"] == hashlib.sha256(bundle_path(lexical_site).read_bytes()).hexdigest()
    )
    assert result["retriever"] == "lexical"
    assert 0 <= result["confidence"] <= 100
    assert len(result["ranked"]) >= 10


def test_static_mode_strips_the_site_prefix_from_the_readers_page(static_text: str) -> None:
    browser.load_static(static_text, prefix="/docs/")
    on_page = json.loads(
        browser.ask_static(json.dumps({"question": "widget", "page": "/docs/guides/static-sites/"}))
    )
    assert all(c["url"].startswith("/guides/static-sites/") for c in on_page["citations"][:2])


def test_static_mode_refuses_bad_requests_like_the_server(static_text: str) -> None:
    browser.load_static(static_text)
    assert json.loads(browser.ask_static('{"question": ""}')) == {
        "error": {"field": "question", "message": "is empty"}
    }
    assert json.loads(browser.ask_static("not json"))["error"]["field"] == "body"
    too_long = json.loads(browser.ask_static(json.dumps({"question": "x" * 2001})))
    assert too_long["error"]["limit"] == 2000
    # The owner's limit, as the widget passes it on, holds instead of the default.
    owners = json.loads(browser.ask_static(json.dumps({"question": "x" * 2001}), 3000))
    assert "error" not in owners
    assert json.loads(browser.ask_static(json.dumps({"question": "x" * 3001}), 3000))["error"][
        "limit"
    ] == 3000
    unknown = json.loads(browser.ask_static(json.dumps({"question": "hi", "stream": True})))
    assert unknown["error"]["field"] == "stream"


def test_load_static_names_the_file_when_given_the_msgpack_bundle(lexical_site: Path) -> None:
    with pytest.raises(BundleError, match=r"bundle\.msgpack.*static\.json"):
        browser.load_static(bundle_path(lexical_site).read_bytes(), where="bundle.msgpack")
    with pytest.raises(BundleError, match="'format'"):
        browser.load_static('{"format": "docpilot-bundle"}')


def test_credential_check_reports_kind_label_reply_and_span() -> None:
    question = "export OPENAI_API_KEY=sk-proj-Tq8vX2mLp9RzW4nB7kYc1HdF5jGs3AeU6oIy0tVb"
    found = browser.check(question)["credential"]
    assert found is not None
    assert found["kind"] == "openai_api_key"
    assert question[found["start"] : found["end"]].startswith("sk-proj-")
    assert "revoke or rotate" in found["markdown"]
    assert "sk-proj-" not in found["markdown"]
    assert browser.check("How do I set OPENAI_API_KEY?") == {"credential": None, "dropped": []}


def test_static_index_is_deterministic_and_holds_only_what_static_mode_reads(
    lexical_site: Path, static_text: str
) -> None:
    bundle = load_bundle(lexical_site)
    again = encode_static(bundle)
    assert again == static_text.encode("utf-8")
    data = json.loads(static_text)
    assert len(data["units"]["id"]) == len(bundle.units) and len(data["pages"]) == len(bundle.pages)
    assert data["bundle_hash"] == bundle.hash
    assert data["vectors"] is None and data["embedder"] is None and "hybrid" not in data["gate"]
    decoded = browser.static_site(static_text).bundle
    assert decoded.units == bundle.units and decoded.lexical == bundle.lexical
    assert decoded.gate.lexical == bundle.gate.lexical


# --- Installing the runtime into site/ -----------------------------------------------------


def fake_pyodide(directory: Path, version: str = PYODIDE_VERSION) -> Path:
    """A directory that looks like Pyodide's npm package to the installer (not a working
    one): its stdlib zip holds one module the browser core needs and one it does not."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in PYODIDE_FILES:
        (directory / name).write_bytes(f"{name} of {version}\n".encode() * 50)
    (directory / "pyodide.mjs").write_text(f'var Y="{version}";\n', encoding="utf-8")
    with zipfile.ZipFile(directory / "python_stdlib.zip", "w") as stdlib:
        stdlib.writestr("json/__init__.py", "# json\n")
        stdlib.writestr("unittest/__init__.py", "# unittest\n")
    return directory


def site_files() -> list[str]:
    return [f"{name}{suffix}" for name in SITE_FILES for suffix in ("", ".gz", ".br")]


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Pyodide anywhere: an empty cache dir, no env var, no package copy, no
    node_modules above the current directory or above the package."""
    monkeypatch.delenv(PYODIDE_DIR_ENV, raising=False)
    monkeypatch.setattr(static_assets, "PACKAGE_DIR", tmp_path / "installed" / "docpilot_runtime")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "project" / "docs"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path


@pytest.fixture
def site(tmp_path: Path, lexical_site: Path) -> Path:
    target = tmp_path / "site" / "docpilot"
    target.mkdir(parents=True)
    target.joinpath("bundle.msgpack").write_bytes(bundle_path(lexical_site).read_bytes())
    return tmp_path / "site"


def test_without_pyodide_the_build_warns_once_and_installs_the_rest(
    isolated: Path, site: Path
) -> None:
    with pytest.raises(BrowserRuntimeError) as caught:
        find_pyodide()
    message = str(caught.value)
    assert PYODIDE_DIR_ENV in message
    assert f"npm install pyodide@{PYODIDE_VERSION}" in message
    assert "docpilot fetch-browser-runtime" in message
    assert str(isolated / "xdg" / "docpilot" / f"pyodide-{PYODIDE_VERSION}") in message
    warnings: list[str] = []
    assert install_browser_runtime(site, warn=warnings.append) is False
    assert len(warnings) == 1
    assert warnings[0].startswith("docpilot: the widget's in-browser check is unavailable")
    assert "docpilot fetch-browser-runtime" in warnings[0]
    names = {p.name for p in (site / "docpilot" / "pyodide").iterdir()}
    assert names == {browser_wheel()[0], LOCK_NAME, f"{LOCK_NAME}.gz", f"{LOCK_NAME}.br"}
    assert (site / "docpilot" / "static.json").is_file()


def test_sources_are_tried_env_var_then_package_then_node_modules_upward_then_cache(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = fake_pyodide(isolated / "xdg" / "docpilot" / f"pyodide-{PYODIDE_VERSION}")
    assert find_pyodide() == PyodideSource(cached, "cache")
    old = fake_pyodide(isolated / "project" / "node_modules" / "pyodide", version="0.27.0")
    assert find_pyodide().origin == "cache", "another version in node_modules is skipped"
    fake_pyodide(old)
    assert find_pyodide().path == old and find_pyodide().origin == "node_modules"
    packaged = static_assets.PACKAGE_DIR.joinpath(*static_assets.PACKAGED)
    pyodide_core.prepare(old, packaged)
    assert find_pyodide() == PyodideSource(packaged, "package", prepared=True)
    explicit = fake_pyodide(isolated / "explicit")
    monkeypatch.setenv(PYODIDE_DIR_ENV, str(explicit))
    assert find_pyodide().path == explicit
    (explicit / "pyodide.asm.wasm").unlink()
    with pytest.raises(
        BrowserRuntimeError, match=rf"{PYODIDE_DIR_ENV}: .* lacks pyodide\.asm\.wasm"
    ):
        find_pyodide()


def test_install_writes_reduced_precompressed_core_wheel_lock_and_index_then_changes_nothing(
    isolated: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    core = fake_pyodide(isolated / "core")
    monkeypatch.setenv(PYODIDE_DIR_ENV, str(core))
    messages: list[str] = []
    assert install_browser_runtime(site, log=messages.append) is True
    target = site / "docpilot" / "pyodide"
    wheel_name, wheel = browser_wheel()
    locks = [LOCK_NAME, f"{LOCK_NAME}.gz", f"{LOCK_NAME}.br"]
    assert sorted(p.name for p in target.iterdir()) == sorted([*site_files(), wheel_name, *locks])
    wasm = (core / "pyodide.asm.wasm").read_bytes()
    assert (target / "pyodide.asm.wasm").read_bytes() == wasm
    assert gzip.decompress((target / "pyodide.asm.wasm.gz").read_bytes()) == wasm
    assert brotli.decompress((target / "pyodide.asm.wasm.br").read_bytes()) == wasm
    with zipfile.ZipFile(target / STDLIB_NAME) as stdlib:
        assert stdlib.namelist() == ["json/__init__.py"]  # unittest is not imported
    assert (target / wheel_name).read_bytes() == wheel
    lock = json.loads((target / LOCK_NAME).read_text(encoding="utf-8"))
    assert lock == browser_lock(wheel_name, wheel)
    static = (site / "docpilot" / "static.json").read_bytes()
    assert brotli.decompress((site / "docpilot" / "static.json.br").read_bytes()) == static
    assert "16 of 16 files updated" in messages[-1]

    before = {p.name: p.stat().st_mtime_ns for p in (site / "docpilot").rglob("*") if p.is_file()}
    install_browser_runtime(site, log=messages.append)
    after = {p.name: p.stat().st_mtime_ns for p in (site / "docpilot").rglob("*") if p.is_file()}
    assert after == before
    assert "0 of 16 files updated" in messages[-1]


def test_without_precompression_no_text_file_keeps_a_compressed_sibling(
    isolated: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mkdocs serve` installs without compressing the widget's text files (its server
    ignores .gz/.br siblings); siblings a previous install left would be stale, so go."""
    monkeypatch.setenv(PYODIDE_DIR_ENV, str(fake_pyodide(isolated / "core")))
    install_browser_runtime(site)
    assert (site / "docpilot" / "static.json.br").exists()
    install_browser_runtime(site, precompress=False)
    names = {p.name for p in (site / "docpilot").iterdir() if p.is_file()}
    assert "static.json" in names
    assert not {n for n in names if n.endswith((".gz", ".br"))}


def test_with_a_pyodide_url_no_pyodide_file_is_copied_and_old_ones_go(
    isolated: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PYODIDE_DIR_ENV, str(fake_pyodide(isolated / "core")))
    install_browser_runtime(site, static_mode=False)
    assert not (site / "docpilot" / "static.json").exists()
    monkeypatch.delenv(PYODIDE_DIR_ENV)
    install_browser_runtime(site, pyodide_url="https://pyodide.example/v314/")
    names = {p.name for p in (site / "docpilot" / "pyodide").iterdir()}
    assert names == {browser_wheel()[0], LOCK_NAME, f"{LOCK_NAME}.gz", f"{LOCK_NAME}.br"}


def test_the_reduced_stdlib_holds_what_the_browser_core_imports() -> None:
    """Every standard-library module the browser core imports is in the reduced zip
    (the trace in tools/pyodide/trace-stdlib.mjs also covers Pyodide's own)."""
    needed = set()
    for name, source in browser_sources().items():
        if name.endswith(".py"):
            needed |= {n for n in _top_level_imports(source) if n in sys.stdlib_module_names}
    # Extension modules (math, binascii, ...) are built into Pyodide, not in the zip.
    needed = {n for n in needed if (importlib.util.find_spec(n).origin or "").endswith(".py")}
    assert "json" in needed and needed <= STDLIB_MODULES, needed - STDLIB_MODULES


def _top_level_imports(source: bytes) -> set[str]:
    """The top-level names a module imports at load time (imports inside a function, such
    as the bundle's msgpack, never run in the browser)."""
    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found


def test_browser_wheel_holds_what_static_mode_imports() -> None:
    script = (
        "import sys\nimport docpilot_runtime.browser.worker\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('docpilot_runtime')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    imported = {m.replace(".", "/") for m in done.stdout.split()}
    _, wheel = browser_wheel()
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        shipped = {
            n.removesuffix("/__init__.py").removesuffix(".py")
            for n in archive.namelist()
            if n.endswith(".py")
        }
    assert imported <= shipped, imported - shipped
    assert not any(n.startswith(("docpilot_runtime/check", "docpilot_runtime/answer")) for n in shipped)


def test_browser_wheel_is_reproducible_and_holds_only_the_browser_core() -> None:
    name, wheel = browser_wheel()
    assert browser_wheel() == (name, wheel)
    assert name.startswith("docpilot_browser-0.1.0+") and name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        files = {
            n.removeprefix("docpilot_runtime/")
            for n in archive.namelist()
            if not n.startswith("docpilot_browser-")
        }
        record = archive.read(next(n for n in archive.namelist() if n.endswith("RECORD")))
    assert files == set(browser_sources())
    folders = {f.split("/")[0] for f in files if "/" in f}
    assert folders == {*BROWSER_PACKAGES, "browser"}
    assert {"screen/credential_rules.json", "screen/social_phrases.json",
            "retrieve/function_words.json"} <= files
    # + METADATA and WHEEL
    assert record.count(b"sha256=") == len(files) + 2


def test_pinned_pyodide_matches_package_json_and_the_npm_package() -> None:
    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    assert package["devDependencies"]["pyodide"] == PYODIDE_VERSION
    installed = ROOT / "node_modules" / "pyodide"
    assert installed.is_dir(), "run `npm ci` (scripts/test.sh does)"
    assert json.loads((installed / "package.json").read_text())["version"] == PYODIDE_VERSION
    lock = json.loads((installed / "pyodide-lock.json").read_text(encoding="utf-8"))
    assert lock["info"] == PYODIDE_LOCK_INFO
    assert find_pyodide(ROOT).origin in ("package", "node_modules", PYODIDE_DIR_ENV)


def test_under_pyodide_the_worker_imports_only_modules_the_reduced_stdlib_holds(
    lexical_site: Path, static_text: str
) -> None:
    """tools/pyodide/trace-stdlib.mjs boots Pyodide in Node with its full stdlib as the
    worker does (our lock file and wheel), runs the check and static answers, and lists
    the stdlib modules loaded: all must be in the reduced zip. Then the same steps with
    the reduced zip itself (stdLibURL) must succeed."""
    docpilot = lexical_site / "docpilot"
    assert static_text and (docpilot / "pyodide" / STDLIB_NAME).is_file()
    trace = ["node", str(ROOT / "tools" / "pyodide" / "trace-stdlib.mjs"), str(docpilot)]
    full = subprocess.run(trace, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert full.returncode == 0, full.stderr[-2000:]
    loaded = set(full.stdout.split()) - {"_frozen_importlib", "_frozen_importlib_external"}
    assert {"json", "pyodide", "re"} <= loaded
    assert loaded <= STDLIB_MODULES, f"add to pyodide_core._TRACED: {loaded - STDLIB_MODULES}"
    reduced = [*trace, str(docpilot / "pyodide" / STDLIB_NAME)]
    done = subprocess.run(reduced, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert set(done.stdout.split()) - {"_frozen_importlib", "_frozen_importlib_external"} == loaded


class Registry(http.server.ThreadingHTTPServer):
    """An npm registry on loopback, speaking the registry's JSON: one package version."""

    files: ClassVar[dict[str, bytes]] = {}


class RegistryHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = self.server.files.get(self.path)  # type: ignore[attr-defined]
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def registry(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    """``publish(version, tarball, integrity=None)`` puts a pyodide version in a loopback
    registry named by NPM_CONFIG_REGISTRY, as npm's config would."""
    server = Registry(("127.0.0.1", 0), RegistryHandler)
    server.files = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}/"
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", base)

    def publish(version: str, tarball: bytes, integrity: str | None = None) -> str:
        digest = base64.b64encode(hashlib.sha512(tarball).digest()).decode()
        path = f"/pyodide/-/pyodide-{version}.tgz"
        server.files[path] = tarball
        dist = {"tarball": base + path[1:], "integrity": integrity or f"sha512-{digest}"}
        server.files[f"/pyodide/{version}"] = json.dumps({"dist": dist}).encode()
        return base

    yield publish
    server.shutdown()
    server.server_close()


def _tarball(source: Path) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path in source.iterdir():
            tar.add(path, arcname=f"package/{path.name}")
    return out.getvalue()


def test_fetch_takes_the_tarball_over_http_checks_integrity_then_install_uses_it(
    isolated: Path, site: Path, registry: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(isolated / "nothing"))  # no npm client
    package = fake_pyodide(isolated / "package", version="0.29.1")
    (package / "package.json").write_text('{"name": "pyodide"}', encoding="utf-8")
    registry("0.29.1", _tarball(package))
    dest = isolated / "fetched"
    assert fetch_browser_runtime(dest, version="0.29.1") == dest
    assert sorted(p.name for p in dest.iterdir()) == sorted([*PYODIDE_FILES, "package.json"])
    assert (dest / "pyodide.asm.wasm").read_bytes() == (package / "pyodide.asm.wasm").read_bytes()

    registry("0.29.2", _tarball(package), integrity="sha512-" + "A" * 86 + "==")
    with pytest.raises(BrowserRuntimeError, match="differs from the registry's integrity"):
        fetch_browser_runtime(isolated / "bad", version="0.29.2")
    # The pinned version is also checked against our own pinned sha256.
    registry(PYODIDE_VERSION, _tarball(fake_pyodide(isolated / "forged")))
    with pytest.raises(BrowserRuntimeError, match="sha256 differs from the pinned"):
        fetch_browser_runtime(isolated / "forged-dest")


def test_fetch_command_without_a_registry_says_what_to_do(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(isolated / "nothing"))
    monkeypatch.setenv("HOME", str(isolated / "home"))
    for key in ("NPM_CONFIG_REGISTRY", "npm_config_registry", "NPM_CONFIG_USERCONFIG"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NPM_CONFIG_GLOBALCONFIG", str(isolated / "no-npmrc"))
    monkeypatch.setattr(pyodide_core, "GLOBAL_NPMRC", (isolated / "no-etc-npmrc",))
    assert cli_main(["fetch-browser-runtime", "--dest", str(isolated / "d")]) == 2
    err = capsys.readouterr().err
    assert "no npm registry is configured" in err and "NPM_CONFIG_REGISTRY" in err


# --- The worker in Chromium ----------------------------------------------------------------

HARNESS = """<!doctype html><title>worker</title><script type="module">
const worker = new Worker(new URL("docpilot/worker.js", location.href), {type: "module"});
const waiting = new Map();
let next = 0;
worker.onmessage = ({data}) => { waiting.get(data.id)(data); waiting.delete(data.id); };
window.send = (message) => new Promise((done) => {
  const id = ++next; waiting.set(id, done); worker.postMessage({...message, id});
});
</script>"""


def _drive_worker(base: str, messages: list[dict[str, Any]]) -> tuple[list[Any], list[str]]:
    """Post ``messages`` to the worker from a page at ``base``; (replies, requested paths)."""
    from browsing import CHROMIUM
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = chromium.new_page()
            page.on("request", lambda r: requested.append(r.url.removeprefix(base)))
            page.goto(base + "harness.html")
            page.wait_for_function("typeof window.send === 'function'")
            replies = []
            for m in messages:
                if m["type"] == "reload":  # the driver's own: a full page load, a new worker
                    page.reload()
                    page.wait_for_function("typeof window.send === 'function'")
                    requested.append("(reloaded)")
                    continue
                replies.append(page.evaluate("(m) => send(m)", m))
        finally:
            chromium.close()
    return replies, requested


@contextmanager
def _served_site(lexical_site: Path, tmp_path: Path) -> Iterator[str]:
    """The built site under /docs-site/ of a plain static server (no compression, as
    `python -m http.server`), with the harness page; yields its base URL."""
    import functools
    import http.server
    import shutil
    import threading

    root = tmp_path / "served"
    site = root / "docs-site"  # served under a sub-path, as on a project's GitHub Pages
    shutil.copytree(lexical_site, site)
    install_browser_runtime(site)
    shutil.copy(ROOT / "widget" / "worker.js", site / "docpilot" / "worker.js")
    (site / "harness.html").write_text(HARNESS, encoding="utf-8")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/docs-site/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_a_full_page_load_restores_python_from_the_snapshot_the_first_boot_kept(
    lexical_site: Path, tmp_path: Path
) -> None:
    question = {"type": "check", "question": REQUESTS[10]["question"]}
    covered = {"question": REQUESTS[0]["question"], "page": "/docs-site/guides/static-sites/"}
    messages: list[dict[str, Any]] = [
        {"type": "boot"}, question, {"type": "ask", "request": covered},
        {"type": "reload"},
        {"type": "boot"}, question, {"type": "ask", "request": covered},
    ]
    with _served_site(lexical_site, tmp_path) as base:
        replies, requested = _in_own_thread(lambda: _drive_worker(base, messages))
    first, found, answered, again, found_again, answered_again = replies
    assert all(r["ok"] for r in replies), replies
    assert first["result"]["snapshot"] is False
    assert again["result"]["snapshot"] is True, "the second page load started Python anew"
    assert found_again["result"] == found["result"]
    assert found["result"]["credential"]["kind"] == "openai_api_key"
    assert _without_turn_id(answered_again["result"]) == _without_turn_id(answered["result"])
    # The second load fetched none of Pyodide's large files or our wheel: Cache Storage.
    after = requested[requested.index("(reloaded)") :]
    kept = [p for p in after if p.endswith((".wasm", ".wasm.gz", ".zip", ".zip.gz", ".whl"))]
    assert kept == [], kept


@pytest.mark.browser
def test_worker_speaks_the_widget_protocol_in_chromium(
    lexical_site: Path, static_text: str, tmp_path: Path
) -> None:
    covered = {"question": REQUESTS[0]["question"], "page": "/docs-site/guides/static-sites/"}
    messages: list[dict[str, Any]] = [
        {"type": "check", "question": REQUESTS[10]["question"]},
        {"type": "boot"},
        {"type": "check", "question": "How do I set OPENAI_API_KEY?"},
        {"type": "ask", "request": covered},  # loads the sharded index beside it first
        {"type": "load", "bundleUrl": "/docs-site/docpilot/static.json"},
        {"type": "ask", "request": {"question": ""}},
        {"type": "load", "bundleUrl": "/docs-site/docpilot/bundle.msgpack"},
        {"type": "launch"},
    ]
    with _served_site(lexical_site, tmp_path) as base:
        replies, requested = _in_own_thread(lambda: _drive_worker(base, messages))

    assert [r["id"] for r in replies] == list(range(1, len(messages) + 1))
    found, booted, clean, answered, loaded, refused, wrong_file, unknown = replies
    assert found["ok"] and found["result"]["credential"]["kind"] == "openai_api_key"
    assert booted["ok"] and booted["result"]["version"] == PYODIDE_VERSION
    assert booted["result"]["bootMs"] > 0
    assert clean == {"id": 3, "ok": True, "result": {"credential": None, "dropped": []}}
    browser.load_static(static_text, prefix="/docs-site/")
    expected = json.loads(browser.ask_static(json.dumps(covered)))
    assert answered["ok"] and _without_turn_id(answered["result"]) == _without_turn_id(expected)
    assert loaded["ok"] and loaded["result"]["loadMs"] >= 0
    assert refused == {"id": 6, "ok": False, "error": "question: is empty"}
    assert not wrong_file["ok"] and "static.json" in wrong_file["error"]
    assert not unknown["ok"] and '"launch"' in unknown["error"]
    # Everything came from the site itself: the worker, Pyodide, our wheel, the index.
    assert all(not path.startswith("http") for path in requested), requested
    # The first question read the sharded index (its manifest, then some of its files).
    assert {
        "docpilot/worker.js",
        "docpilot/static/manifest.json",
        "docpilot/static.json",
    } <= set(requested)
    assert any(p.startswith("docpilot/static/t/") for p in requested), requested
    # A plain static server compresses nothing: the worker took the build's .gz copies of
    # Pyodide's large files and decompressed them itself.
    big = ("pyodide.asm.wasm", "docpilot-stdlib.zip", "pyodide.asm.mjs")
    assert {f"docpilot/pyodide/{name}.gz" for name in big} <= set(requested), requested
    assert not {f"docpilot/pyodide/{name}" for name in big} & set(requested), requested
