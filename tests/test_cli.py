"""`docpilot ask` and `docpilot serve` through a real subprocess (`python -m
docpilot_runtime.cli`), on example-site built once per session; plus the functions the
verbs wrap, called in-process."""

from __future__ import annotations

import io
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgpack
import pytest
import yaml
from corpora import EXAMPLE_SITE
from docpilot_runtime.cli import ask_lines, format_result
from docpilot_runtime.index.site_name import site_name_from_pages
from docpilot_runtime.shared.types import Citation, PageRef, Result
from docpilot_runtime.turn import Runtime, load_runtime
from servers.processes import free_port

COVERED = "How do I exclude a page from the assistant?"
OFF_TOPIC = "What is the best recipe for sourdough bread?"
# An AWS-style key id and secret that no vendor published (fixed so a failure reproduces).
KEY_ID = "AKIA" + "Q7ZK2M4XPB9TLD3W"
SECRET = "tR8vN2qLx5Yp0Wm3Kc7Hb1Zs9Fd4Gj6Ve2Ua8Po+"
CREDENTIAL = f"aws_access_key_id={KEY_ID} aws_secret_access_key={SECRET} - why is S3 denied?"


def docpilot(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "docpilot_runtime.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ask_json(site: Path, question: str) -> dict[str, Any]:
    run = docpilot("ask", str(site), question, "--json")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1, run.stdout  # one JSON line, nothing else on stdout
    result: dict[str, Any] = json.loads(lines[0])
    return result


def page_file(site: Path, url: str) -> Path:
    """The built HTML file a site URL such as ``/reference/cli/#x`` is served from."""
    path = urlsplit(url).path.strip("/")
    return site / path / "index.html" if not path.endswith(".html") else site / path


# ---------------------------------------------------------------------- ask, one question


def test_ask_json_covered_question_is_passages_citing_existing_sections(example_site: Path) -> None:
    result = ask_json(example_site, COVERED)
    assert result["kind"] == "passages"
    assert result["citations"]
    assert 0 <= result["confidence"] <= 100
    for citation in result["citations"]:
        html = page_file(example_site, citation["url"]).read_text(encoding="utf-8")
        anchor = urlsplit(citation["url"]).fragment
        assert not anchor or f'id="{anchor}"' in html


def test_ask_json_off_topic_question_is_refused_with_closest_pages(example_site: Path) -> None:
    result = ask_json(example_site, OFF_TOPIC)
    assert result["kind"] == "refusal"
    assert 3 <= len(result["closest"]) <= 5
    for page in result["closest"]:
        assert page_file(example_site, page["url"]).is_file()


def test_ask_json_hello_is_social(example_site: Path) -> None:
    result = ask_json(example_site, "hello")
    assert result["kind"] == "social"
    assert result["confidence"] is None


def test_ask_json_pasted_key_is_credential_and_never_printed(example_site: Path) -> None:
    run = docpilot("ask", str(example_site), CREDENTIAL, "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["kind"] == "credential"
    assert result["credential_kind"]
    assert result["confidence"] is None
    for secret in (KEY_ID, SECRET, SECRET[:16]):
        assert secret not in run.stdout
        assert secret not in run.stderr


def test_ask_text_prints_markdown_citations_and_a_summary_line(example_site: Path) -> None:
    run = docpilot("ask", str(example_site), COVERED)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.rstrip("\n").splitlines()
    assert re.fullmatch(r"\(kind passages · confidence \d+ · (hybrid|lexical)\)", lines[-1])
    assert any(re.match(r"\[1\] .+ — /\S+", line) for line in lines)


def test_ask_text_refusal_lists_the_closest_pages_once(example_site: Path) -> None:
    run = docpilot("ask", str(example_site), OFF_TOPIC, "--json")
    closest = [p["url"] for p in json.loads(run.stdout)["closest"]]
    run = docpilot("ask", str(example_site), OFF_TOPIC)
    assert run.returncode == 0, run.stderr
    assert "These pages are the closest matches:" in run.stdout
    assert closest and all(run.stdout.count(f"({url})") == 1 for url in closest), run.stdout
    assert "Closest pages:" not in run.stdout, "the refusal's own list is not repeated"
    assert run.stdout.rstrip().splitlines()[-1].startswith("(kind refusal · confidence ")


def test_version_prints_the_package_version() -> None:
    from docpilot_runtime import __version__

    run = docpilot("--version")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"docpilot {__version__}"


def test_ask_with_a_page_leaves_the_shown_ranking_to_merit(example_site: Path) -> None:
    # Issue 9 (2): the reader's page joins only a model's input; `ranked` is retrieval's own.
    args = ("ask", str(example_site), "How do I configure it?", "--json")
    on_page = docpilot(*args, "--page", "/reference/cli/")
    assert on_page.returncode == 0, on_page.stderr
    plain = json.loads(docpilot(*args).stdout)
    assert json.loads(on_page.stdout)["ranked"] == plain["ranked"]


def test_ask_question_over_the_limit_exits_2_naming_the_field(example_site: Path) -> None:
    run = docpilot("ask", str(example_site), "x" * 2001, "--json")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith("docpilot: error: question")
    assert "x" * 100 not in run.stderr  # the error names the field, it does not echo it


# ---------------------------------------------------------------------- ask, JSON lines


def test_ask_batch_answers_each_line_in_order(example_site: Path) -> None:
    lines = [
        {"question": COVERED},
        {"question": "hello"},
        {"question": OFF_TOPIC, "page": "/faq/"},
    ]
    run = docpilot("ask", str(example_site), stdin="".join(json.dumps(x) + "\n" for x in lines))
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["kind"] for r in results] == ["passages", "social", "refusal"]
    assert len({r["turn_id"] for r in results}) == 3


def test_ask_batch_bad_lines_get_error_lines_and_exit_1(example_site: Path) -> None:
    stdin = "\n".join(
        [
            json.dumps({"question": "hello"}),
            "{not json",
            json.dumps({"question": 5}),
            json.dumps({"question": "hi", "history": [{"question": "a", "kind": "oracle"}]}),
            json.dumps({"question": CREDENTIAL}),
        ]
    )
    run = docpilot("ask", str(example_site), stdin=stdin + "\n")
    assert run.returncode == 1
    out = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(out) == 5
    assert out[0]["kind"] == "social"
    assert out[1]["error"]["field"] == "body" and "line 2" in out[1]["error"]["message"]
    assert out[2]["error"]["field"] == "question"
    assert out[3]["error"]["field"] == "history[0].kind"
    assert out[4]["kind"] == "credential"
    assert SECRET not in run.stdout + run.stderr and KEY_ID not in run.stdout + run.stderr


@pytest.fixture(scope="module")
def runtime(example_site: Path) -> Runtime:
    return load_runtime(example_site)


def test_ask_lines_in_process_skips_blank_lines(runtime: Runtime) -> None:
    out = io.StringIO()
    code = ask_lines(runtime, ['{"question": "thanks!"}\n', "\n", '{"question": "bye"}\n'], out)
    assert code == 0
    assert [json.loads(x)["kind"] for x in out.getvalue().splitlines()] == ["social", "social"]


def test_format_result_names_credential_kind_without_confidence() -> None:
    result = Result(
        turn_id="t", kind="credential", markdown="Rotate it.", bundle_hash="h",
        credential_kind="aws_access_key",
    )
    assert format_result(result).splitlines()[-1] == "(kind credential · aws_access_key)"


def test_format_result_lists_citations_and_closest() -> None:
    result = Result(
        turn_id="t", kind="passages", markdown="Text [1].", bundle_hash="h", confidence=70,
        retriever="hybrid", citations=[Citation(n=1, id="/a/#b", url="/a/#b", title="B")],
        closest=[PageRef(url="/c/", title="C")],
    )
    text = format_result(result)
    assert "[1] B — /a/#b" in text and "- C — /c/" in text
    assert text.splitlines()[-1] == "(kind passages · confidence 70 · hybrid)"


# ---------------------------------------------------------------------- serve


@pytest.fixture
def broken_site(example_site: Path, tmp_path: Path) -> Path:
    """A copy of example-site whose bundle is garbage."""
    site = tmp_path / "site"
    shutil.copytree(example_site, site)
    (site / "docpilot" / "bundle.msgpack").write_bytes(b"\x00garbage, not msgpack\xff" * 10)
    return site


def test_serve_with_a_bad_bundle_exits_2_naming_the_file(broken_site: Path) -> None:
    run = docpilot("serve", str(broken_site), "--port", "1")  # never gets as far as binding
    assert run.returncode == 2
    assert run.stderr.startswith("docpilot: error: ")
    assert str(broken_site / "docpilot" / "bundle.msgpack") in run.stderr


def test_ask_with_a_bad_bundle_exits_2_naming_the_file(broken_site: Path) -> None:
    run = docpilot("ask", str(broken_site), "hello")
    assert run.returncode == 2
    assert "bundle.msgpack" in run.stderr


def test_serve_with_a_bad_settings_file_exits_2_naming_it(
    example_site: Path, tmp_path: Path
) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text("[server]\nmax_body_bites = 10\n", encoding="utf-8")
    run = docpilot("serve", str(example_site), "--config", str(config))
    assert run.returncode == 2
    assert str(config) in run.stderr and "max_body_bites" in run.stderr


@pytest.mark.parametrize("verb", ["serve", "ask"])
def test_misspelt_settings_key_exits_2_naming_the_key_and_the_nearest(
    verb: str, example_site: Path, tmp_path: Path
) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text('[embedder]\nbase_urll = "http://127.0.0.1:1/v1"\n', encoding="utf-8")
    args = ["--port", "1"] if verb == "serve" else ["hello"]
    run = docpilot(verb, str(example_site), *args, "--config", str(config))
    assert run.returncode == 2
    assert run.stderr == (
        f"docpilot: error: {config} [embedder]: unknown key 'base_urll'; did you mean base_url?\n"
    )


def test_settings_value_of_the_wrong_type_exits_2_naming_the_key(
    example_site: Path, tmp_path: Path
) -> None:
    config = tmp_path / "docpilot.toml"
    config.write_text('[embedder]\ntimeout = "ten"\n', encoding="utf-8")
    run = docpilot("ask", str(example_site), "hello", "--config", str(config))
    assert run.returncode == 2
    assert "timeout must be a positive number of seconds, got 'ten'" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 1


def test_ask_with_a_bundle_of_another_format_exits_2_in_one_line(
    example_site: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    shutil.copytree(example_site, site)
    bundle = site / "docpilot" / "bundle.msgpack"
    data = msgpack.unpackb(bundle.read_bytes(), raw=False)
    data["format"] = "someone-elses-bundle"
    bundle.write_bytes(msgpack.packb(data, use_bin_type=True))
    run = docpilot("ask", str(site), "How do I exclude a page?")
    assert run.returncode == 2
    assert run.stderr.startswith(f"docpilot: error: {bundle}")
    assert "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 1


# ---------------------------------------------------------------------- index


def test_index_names_the_site_from_its_html_not_its_folder(
    example_site: Path, tmp_path: Path
) -> None:
    """example-site's pages say "Page - DocPilot"; the folder is called "site"."""
    site = tmp_path / "site"
    shutil.copytree(example_site, site)
    config = tmp_path / "docpilot.toml"
    config.write_text(
        f'[index]\nwidget = false\nembedder = "none"\ncache_dir = "{tmp_path / "cache"}"\n',
        encoding="utf-8",
    )
    run = docpilot("index", str(site), "--config", str(config))
    assert run.returncode == 0, run.stderr
    data = msgpack.unpackb((site / "docpilot" / "bundle.msgpack").read_bytes(), raw=False)
    assert data["site"]["name"] == "DocPilot"
    refusal = ask_json(site, OFF_TOPIC)
    assert refusal["kind"] == "refusal"
    assert "The DocPilot documentation" in refusal["markdown"]
    assert "site documentation" not in refusal["markdown"]


def test_docpilot_index_writes_the_plugins_bundle_byte_for_byte(
    example_site: Path, tmp_path: Path
) -> None:
    """The plugin and `docpilot index` are wrappers over one function: given the same
    built site and the same options, they write the same bundle."""
    site = tmp_path / "site"
    shutil.copytree(example_site, site)
    config = tmp_path / "docpilot.toml"
    # The one option MkDocs itself holds, given as an owner of another generator would.
    site_url = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))["site_url"]
    config.write_text(
        f'[index]\nwidget = false\ncache_dir = "{tmp_path / "cache"}"\n'
        f'site_url = "{site_url}"\n',
        encoding="utf-8",
    )
    run = docpilot("index", str(site), "--config", str(config))
    assert run.returncode == 0, run.stderr
    plugin = (example_site / "docpilot" / "bundle.msgpack").read_bytes()
    assert (site / "docpilot" / "bundle.msgpack").read_bytes() == plugin


@pytest.mark.parametrize(
    ("pages", "name"),
    [
        (['<head><meta property="og:site_name" content="Acme &amp; Co"><title>X</title>'], "Acme & Co"),
        (["<title>Home</title>", "<title>Setup - Acme</title>", "<title>API - Acme</title>"], "Acme"),
        (["<title>Setup | Acme Docs</title>"], "Acme Docs"),
        (["<title>Acme</title>"], "Acme"),
        (["<title>One</title>", "<title>Two</title>"], ""),
        (["<p>no head</p>"], ""),
    ],
)
def test_site_name_comes_from_og_site_name_or_the_title_suffix(pages: list[str], name: str) -> None:
    assert site_name_from_pages(pages) == name
    assert site_name_from_pages([p.encode() for p in pages]) == name


# ---------------------------------------------------------------------- the Python API


def test_api_ask_gives_the_cli_result(example_site: Path) -> None:
    import docpilot_runtime as dp

    ours = dp.ask(example_site, COVERED).to_dict()
    theirs = ask_json(example_site, COVERED)
    for field in ("kind", "ranked", "confidence", "citations", "bundle_hash"):
        assert ours[field] == theirs[field], field


def test_api_ask_checks_the_request_as_the_http_api_does(runtime: Runtime) -> None:
    import docpilot_runtime as dp

    with pytest.raises(dp.RequestError, match="question"):
        dp.ask(runtime, "x" * (runtime.settings.limits.max_question_chars + 1))


def test_importing_the_package_loads_no_submodule_until_a_name_is_used() -> None:
    probe = (
        "import sys, docpilot_runtime as dp\n"
        "print(sorted(m for m in sys.modules if m.startswith('docpilot_runtime')))\n"
        "dp.load_settings\n"
        "print('docpilot_runtime.settings.load' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == ["['docpilot_runtime']", "True"]


def test_every_public_name_resolves() -> None:
    import docpilot_runtime as dp

    for name in dp.__all__:
        assert getattr(dp, name) is not None, name
    with pytest.raises(AttributeError):
        _ = dp.no_such_name




@dataclass
class Served:
    """A `docpilot serve` subprocess and its base URL."""

    base_url: str
    process: subprocess.Popen[str]

    def stop(self) -> str:
        """Stop it as Ctrl-C would; returns everything it wrote to stderr (its log)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.communicate(timeout=15)[1]
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.communicate()[1]


def _wait_for_health(served: Served, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if served.process.poll() is not None:
            pytest.fail(f"docpilot serve exited early:\n{served.stop()}")
        try:
            if httpx.get(f"{served.base_url}/api/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"docpilot serve did not answer /api/health within {seconds} s")
        time.sleep(0.1)


@pytest.fixture
def served(example_site: Path) -> Iterator[Served]:
    """`docpilot serve` on a free port, once /api/health answers; stopped afterwards."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "docpilot_runtime.cli", "serve", str(example_site),
         "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    running = Served(f"http://127.0.0.1:{port}", process)
    try:
        _wait_for_health(running)
        yield running
    finally:
        running.stop()


def test_serve_answers_the_api_and_the_site(served: Served) -> None:
    with httpx.Client(base_url=served.base_url, timeout=60) as http:
        assert http.get("/").status_code == 200
        result = http.post("/api/ask", json={"question": COVERED}).json()
        assert result["kind"] == "passages"
        assert result["bundle_hash"] == http.get("/api/health").json()["bundle_hash"]
        credential = http.post("/api/ask", json={"question": CREDENTIAL}).json()
        assert credential["kind"] == "credential"
    log = served.stop()
    assert f"turn {result['turn_id']} kind=passages" in log
    assert f"turn {credential['turn_id']} kind=credential" in log
    assert "exclude a page" not in log
    assert KEY_ID not in log and SECRET not in log
