"""Where readers' questions are kept by default: in the user's data folder
(`$XDG_DATA_HOME/docpilot/sites/<site>-<hash>/`), keyed by the served site folder, never
in the folder `docpilot serve` was started from (a docs project, where they could be
committed) nor beside or inside the site (which a clean build empties, and which is
published). `docpilot records` and `docpilot report` find them with `--site`, or alone
when only one site has records."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from docpilot_runtime import cli
from docpilot_runtime.serve.app import create_app
from docpilot_runtime.settings.load import Settings
from servers.runtime import NO_CAPS, serve_app
from small_site import INSTALL, INSTALL_QUESTION, build_small_site


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DOCPILOT_DATABASE_URL", raising=False)
    monkeypatch.delenv("DOCPILOT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)  # where an owner starts `docpilot serve site/`
    return tmp_path / "data"


def serve_one_question(site: Path) -> str:
    with serve_app(create_app(site, Settings(caps=NO_CAPS))) as running:
        reply = httpx.post(f"{running.base_url}/api/ask", json={"question": INSTALL_QUESTION},
                           timeout=60)
    assert reply.status_code == 200
    turn_id: str = reply.json()["turn_id"]
    return turn_id


def exported(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert cli.main(["records", "export", *args]) == 0
    return [json.loads(line)["turn_id"] for line in capsys.readouterr().out.splitlines()]


def test_records_go_to_the_user_data_folder_keyed_by_the_site(
    data_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "project" / "site"
    site.mkdir()
    build_small_site(site, tmp_path / "cache", [INSTALL])
    turn_id = serve_one_question(site)

    project = tmp_path / "project"
    assert not (project / ".docpilot").exists(), "nothing in the folder serve started from"
    assert not list(site.rglob("*.sqlite3")), "nothing in the published site"
    (folder,) = (data_home / "docpilot" / "sites").iterdir()
    assert folder.name.startswith("site-")
    assert (folder / "records.sqlite3").is_file()
    assert (folder / "site-folder.txt").read_text(encoding="utf-8").strip() == str(site.resolve())

    assert exported(capsys, "--site", str(site)) == [turn_id]
    assert exported(capsys) == [turn_id], "the only site with records is found alone"
    out = tmp_path / "report"
    assert cli.main(["report", "--site", str(site), "--out", str(out)]) == 0
    assert (out / "report.html").is_file()


def test_with_several_sites_the_verbs_ask_which_one(
    data_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sites = []
    for name in ("site-a", "site-b"):
        site = tmp_path / name
        site.mkdir()
        build_small_site(site, tmp_path / "cache", [INSTALL])
        serve_one_question(site)
        sites.append(site)
    assert cli.main(["records", "export"]) == 2
    error = capsys.readouterr().err
    assert "--site" in error and all(str(s.resolve()) in error for s in sites)
