"""Versioned and multi-language sites as the runtime serves them: two versions deployed by
mike into one site (as its gh-pages branch lays them out: `1.0/`, `2.0/`, `versions.json`)
and a two-language mkdocs-static-i18n build served from its URL. A reader on a version's
or a language's pages gets answers from that bundle; `docpilot eval` follows the same
prefixes; each citation's URL, resolved under its bundle's prefix, is a page and anchor
of the built site."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml
from corpora import mkdocs_build
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.evaluate.questions import load_questions
from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.bundle import BundleSettings
from docpilot_runtime.settings.load import Settings
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.turn import Runtime, load_runtime
from i18n_sites import _site as i18n_site
from servers.runtime import serve_app
from servers.static_host import StaticHost
from versioned_sites import QUESTION, V1, deploy_versions, git, mike
from versioned_sites import versioned_site as versioned_site  # module fixture (mike)


def ask(runtime: Runtime, page: str) -> tuple[str, list[str], str]:
    result = asyncio.run(runtime.ask(AskRequest(question=QUESTION, page=page)))
    texts = [runtime.site_for(page).bundle.units[runtime.site_for(page).unit_rows[c.id]].text
             for c in result.citations]
    return result.bundle_hash, texts, result.kind


def resolves(site: Path, prefix: str, url: str) -> bool:
    """Whether ``url`` (as a citation spells it) under ``prefix`` names a built page that
    has the anchor: what the widget served from ``prefix`` links to."""
    path, _, anchor = url.partition("#")
    page = site / prefix.strip("/") / path.strip("/") / "index.html"
    return page.is_file() and f'id="{anchor}"' in page.read_text(encoding="utf-8")


def test_a_reader_on_a_version_gets_answers_from_that_versions_bundle(
    versioned_site: Path,
) -> None:
    assert json.loads((versioned_site / "versions.json").read_text())[0]["version"] == "2.0"
    runtime = load_runtime(versioned_site)
    described = {s.prefix: s.version for s in runtime.sites}
    assert described == {"/1.0/": "1.0", "/2.0/": "2.0"}, "mike's versions.json names them"
    old_hash = load_bundle(versioned_site / "1.0").hash
    new_hash = load_bundle(versioned_site / "2.0").hash

    bundle_hash, texts, kind = ask(runtime, "/2.0/")
    assert kind == "passages" and bundle_hash == new_hash
    assert any("Version two" in t for t in texts) and not any("Version one" in t for t in texts)
    bundle_hash, texts, _kind = ask(runtime, "/1.0/")
    assert bundle_hash == old_hash and any("Version one" in t for t in texts)

    result = asyncio.run(runtime.ask(AskRequest(question=QUESTION, page="/1.0/")))
    assert result.citations and all(
        resolves(versioned_site, "/1.0/", c.url) for c in result.citations
    )


def test_eval_follows_the_version_prefixes(versioned_site: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    rows = [{"question": QUESTION, "kind": "answerable", "page": f"/{v}/",
             "expect_pages": [f"/{v}/"]} for v in ("1.0", "2.0")]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = evaluate(evaluation_runtime(versioned_site), load_questions(questions))
    assert [o.rank for o in report.outcomes] == [1, 1], report.outcomes
    assert [o.pages[0] for o in report.outcomes] == ["/1.0/", "/2.0/"]


def test_a_two_language_site_served_from_its_url_answers_each_language_from_its_bundle(
    tmp_path: Path,
) -> None:
    mkdocs_build(i18n_site(tmp_path, "folder"))
    site = tmp_path / "site"
    root_llms = (site / "llms.txt").read_text(encoding="utf-8")
    assert root_llms.endswith("## Other languages and versions\n\n- [de](/de/llms.txt)\n")
    assert "Zwischenspeicher" in (site / "de" / "llms.txt").read_text(encoding="utf-8")
    with StaticHost() as host:
        host.publish_site(site)
        settings = Settings(bundle=BundleSettings(url=host.url()))
        runtime = load_runtime(tmp_path / "empty", settings)
    assert {(s.prefix, s.language) for s in runtime.sites} == {("/", "en"), ("/de/", "de")}
    german = asyncio.run(runtime.ask(AskRequest(
        question="Welche Python-Version wird für den Bau benötigt?", page="/de/guide/")))
    assert german.bundle_hash == load_bundle(site / "de").hash
    assert "benötigt" in german.markdown
    assert german.citations and all(resolves(site, "/de/", c.url) for c in german.citations)
    english = asyncio.run(runtime.ask(AskRequest(
        question="Which Python version is required?", page="/guide/")))
    assert english.bundle_hash == load_bundle(site).hash


def test_a_mike_build_names_its_version_in_its_folders_manifest(versioned_site: Path) -> None:
    """The plugin reads the version mike is deploying (``MIKE_DOCS_VERSION``) into the
    manifest it writes in that version's folder."""
    for version in ("1.0", "2.0"):
        manifest = json.loads((versioned_site / version / "docpilot" / "manifest.json").read_text())
        (row,) = manifest["bundles"]
        assert (row["prefix"], row["version"]) == ("/", version)
        assert (versioned_site / version / row["bundle"]).is_file()
    assert not (versioned_site / "docpilot" / "bundle.msgpack").exists()


def test_a_version_s_llms_txt_links_under_its_folder(tmp_path: Path) -> None:
    """mike's plugin sets site_url to the version's address in its on_config; DocPilot,
    listed before it, still links the version's pages under the version's folder."""
    repo = tmp_path / "repo"
    repo.mkdir()
    config = {"site_name": "Versions", "site_url": "https://docs.example.com/",
              "theme": {"name": "mkdocs"},
              "plugins": [{"docpilot": {"cache_dir": str(tmp_path / "cache")}}, "mike"]}
    (repo / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (repo / "docs").mkdir()
    (repo / "docs" / "index.md").write_text(V1, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "docs@example.com")
    git(repo, "config", "user.name", "Docs")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "docs 1.0")
    mike(repo, "deploy", "1.0")
    text = subprocess.run(["git", "-C", str(repo), "show", "gh-pages:1.0/llms.txt"],
                          check=True, capture_output=True, text=True).stdout
    links = [line.split("](", 1)[1].split(")", 1)[0] for line in text.splitlines() if "](" in line]
    assert links and all(link.startswith("https://docs.example.com/1.0/") for link in links), links


@pytest.fixture(scope="module", params=[None, "copy"], ids=["symlink", "copy"])
def aliased_versions(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                     ) -> Path:
    """1.0 and 2.0 with `latest` -> 2.0 as mike 2.x makes it by default (a symlink) and as
    a copy (the redirect alias is `versioned_site`'s)."""
    work = tmp_path_factory.mktemp("aliased")
    deploy_versions(work, request.param)
    return work / "published"


def test_a_reader_on_an_alias_gets_answers_from_the_version_it_points_at(
    aliased_versions: Path,
) -> None:
    """`docpilot serve` over a mike site: on `/latest/` pages (mike's default symlink, or
    a copy) the page is 2.0's and so is every answer, cited under `/latest/`."""
    site = aliased_versions
    new_hash = load_bundle(site / "2.0").hash
    with serve_app(create_app(site, Settings())) as running:
        page = httpx.get(f"{running.base_url}/latest/")
        assert page.status_code == 200 and "Version two" in page.text
        health = httpx.get(f"{running.base_url}/api/health").json()
        latest = [s for s in health["sites"] if s["prefix"] == "/latest/"]
        assert latest and latest[0]["version"] == "2.0" and latest[0]["bundle_hash"] == new_hash
        reply = httpx.post(f"{running.base_url}/api/ask", timeout=60,
                           json={"question": QUESTION, "page": "/latest/"})
    result = reply.json()
    assert reply.status_code == 200 and result["kind"] == "passages", result
    assert result["bundle_hash"] == new_hash
    assert "Version two" in result["markdown"] and "Version one" not in result["markdown"]
    assert result["citations"] and all(
        resolves(site, "/latest/", c["url"]) for c in result["citations"]
    )
