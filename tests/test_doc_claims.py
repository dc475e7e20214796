"""Sentences of the docs held true to the product, where a test is cheap: where the caches
are, what the widget says under `mkdocs serve`, what `fetch-browser-runtime` needs, and
the Dockerfile the deployment guide shows."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from corpora import EXAMPLE_SITE, ROOT
from docpilot_runtime.browser import install as static_assets
from docpilot_runtime.browser.pyodide_core import PYODIDE_VERSION
from docpilot_runtime.cli import main as cli_main
from docpilot_runtime.index.cache import default_cache_dir

sys.path.insert(0, str(ROOT / "tools"))
from local_model.install import CACHE_ENV as LOCAL_MODEL_CACHE_ENV
from local_model.install import cache_root as local_model_cache

DOCS = sorted((EXAMPLE_SITE / "docs").rglob("*.md"))
# A path ending in .cache/docpilot, with what precedes it (a home) and what follows.
_MENTION = re.compile(r"([~\w/$-]*)\.cache/docpilot((?:/[^\s`)\"'，。]*)?)")


def test_every_cache_location_the_docs_give_is_where_the_code_puts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    embeddings = default_cache_dir(tmp_path / "project").relative_to(tmp_path)
    pyodide = static_assets.cache_dir().relative_to(tmp_path)
    monkeypatch.delenv(LOCAL_MODEL_CACHE_ENV, raising=False)
    local_model = local_model_cache().relative_to(tmp_path)  # scripts/local-model.sh's
    # Under the user's cache: the three folders the code uses, or their parent.
    allowed = {
        "",
        "/",
        "/…",
        f"/{embeddings.parent.relative_to('.cache/docpilot')}/",
        f"/{pyodide.relative_to('.cache/docpilot')}/",
        f"/{local_model.relative_to('.cache/docpilot')}",
    }
    assert pyodide.name == f"pyodide-{PYODIDE_VERSION}"
    wrong = []
    for path in [ROOT / "README.md", *DOCS]:
        if path.name == "changelog.md":  # history: what earlier releases did
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"\s*cache_dir\s*[:=]", line):  # a value an owner sets on purpose
                continue
            for home, rest in _MENTION.findall(line):
                # A user's cache (the docs' ~, the container's root, the sample log's user),
                # and in it one of the code's folders or their parent.
                in_home = home in {"~/", "/root/", "/home/you/"}
                known = rest in allowed or any(rest.startswith(a) for a in allowed if len(a) > 2)
                if not (in_home and known):
                    wrong.append(f"{path.relative_to(ROOT)}:{number}: {home}.cache/docpilot{rest}")
    assert not wrong, "cache locations the code does not use:\n" + "\n".join(wrong)


def test_quick_start_quotes_what_the_widget_says_under_mkdocs_serve() -> None:
    page = (EXAMPLE_SITE / "docs" / "getting-started" / "quick-start.md").read_text(
        encoding="utf-8"
    )
    note = page[page.index('!!! note "Under `mkdocs serve`') :].split("\n\n", 1)[0]
    quoted = re.search(r'\("([^"]+)"\)', " ".join(line.strip() for line in note.splitlines()))
    assert quoted, note
    strings = json.loads((ROOT / "widget" / "i18n" / "en.json").read_text(encoding="utf-8"))
    assert quoted.group(1) == strings["static_fallback"]
    assert "connection error" not in page


def test_fetch_browser_runtime_help_says_no_npm_client_is_needed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["--help"], ["fetch-browser-runtime", "--help"]):
        with pytest.raises(SystemExit) as exited:
            cli_main(argv)
        assert exited.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "from the npm registry" in text and "no npm needed" in text, text
        assert "with npm" not in text
    reference = (EXAMPLE_SITE / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert "It needs no npm client" in reference


def test_deployment_guide_shows_the_dockerfile_in_the_repository() -> None:
    dockerfile = (EXAMPLE_SITE / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    instructions = [line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")]
    guide = (EXAMPLE_SITE / "docs" / "guides" / "deploying-the-runtime.md").read_text(
        encoding="utf-8"
    )
    shown = guide.split('```dockerfile title="deploy/Dockerfile"\n', 1)[1].split("```", 1)[0]
    assert shown.strip("\n") == "\n".join(instructions).strip("\n")
