"""The release path: .github/workflows/release.yml builds the sdist and, from it, the wheel
with the network cut off (Pyodide from node_modules), checks both install and build a
site, and publishes on a version tag with trusted publishing."""

from __future__ import annotations

import email
import re
import subprocess
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import trove_classifiers
from corpora import ROOT
from docpilot_runtime.browser.pyodide_core import PYODIDE_VERSION, SITE_FILES
from fresh_install import check_dist
from release_build import ReleaseBuild, checkout, workflow

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGED = [
    f"docpilot_runtime/pyodide-core/{name}{suffix}"
    for name in SITE_FILES
    for suffix in ("", ".gz", ".br")
]


def _uses(job: dict[str, object]) -> list[str]:
    return [str(s["uses"]).split("@")[0] for s in job["steps"] if "uses" in s]  # type: ignore[attr-defined]


def _runs(job: dict[str, object]) -> list[str]:
    return [str(s["run"]) for s in job["steps"] if "run" in s]  # type: ignore[attr-defined]


def test_release_workflow_builds_checks_and_publishes_on_a_version_tag() -> None:
    flow = workflow()
    assert flow["on"]["push"] == {"tags": ["v*"]} and "workflow_dispatch" in flow["on"]
    # Nothing but the publish job may mint a token; the whole workflow reads only.
    assert flow["permissions"] == {"contents": "read"}
    build, check, publish = (flow["jobs"][name] for name in ("build", "check", "publish"))
    assert set(flow["jobs"]) == {"build", "check", "publish"}

    runs = _runs(build)
    npm = next(i for i, r in enumerate(runs) if r.startswith("npm ci"))
    built = next(i for i, r in enumerate(runs) if "python -m build" in r)
    assert npm < built, "Pyodide must be in node_modules before the build"
    # Neither --sdist nor --wheel: build makes the sdist, then the wheel from the sdist.
    assert re.fullmatch(r"unshare -rn python -m build --no-isolation", runs[built])
    assert any("build-system" in r and "requires" in r for r in runs[:built])
    assert any("twine check --strict dist/*" in r for r in runs[built:])
    assert _uses(build)[-1] == "actions/upload-artifact"

    assert check["needs"] == "build"
    versions = check["strategy"]["matrix"]["python-version"]
    assert versions[0] == PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert _uses(check) == ["actions/checkout", "actions/setup-python", "actions/download-artifact"]
    (checking,) = [r for r in _runs(check) if "check_dist.py" in r]
    assert checking.startswith("python scripts/check_dist.py dist/")
    assert "--tag" in checking and (ROOT / "scripts" / "check_dist.py").is_file()

    assert set(publish["needs"]) == {"build", "check"}
    assert "github.ref_type == 'tag'" in publish["if"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert _uses(publish) == ["actions/download-artifact", "pypa/gh-action-pypi-publish"]
    (upload,) = [s for s in publish["steps"] if "pypi-publish" in s["uses"]]
    assert "password" not in upload.get("with", {}), "trusted publishing needs no token"
    downloaded = {
        s["with"]["path"]
        for j in (check, publish)
        for s in j["steps"]
        if s.get("uses", "").startswith("actions/download-artifact")
    }
    uploaded = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload"))
    assert downloaded == {uploaded["with"]["path"]}


# The build job, run here: checkout, `npm ci` (real registry) and a build with the
# network cut off, then twine; about a minute, most of it brotli on the wasm.
@pytest.mark.timeout(900)
def test_release_build_takes_pyodide_from_node_modules_with_the_network_cut_off(
    release_build: ReleaseBuild,
) -> None:
    log = release_build.log
    assert f"Pyodide {PYODIDE_VERSION}: from " in log and "no network needed" in log, log
    assert "fetching" not in log
    # The Pyodide files sit in a folder no import can name, so setuptools has no package
    # to warn about (its 40-line "Package would be ignored" on every build from the source).
    assert "absent from the `packages` configuration" not in log
    # The wheel is built from the unpacked sdist, which already holds the files.
    assert re.search(
        rf"Building wheel from sdist.*Pyodide {PYODIDE_VERSION}: already prepared", log, re.S
    ), log
    with zipfile.ZipFile(release_build.wheel) as wheel:
        assert set(PACKAGED) <= set(wheel.namelist())
    with tarfile.open(release_build.sdist) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {f"runtime/{name}" for name in PACKAGED} <= names
    assert {"setup.py", "pyproject.toml", "README.md"} <= names


def test_sdist_with_no_pyodide_and_no_network_says_to_run_npm_ci(
    release_build: ReleaseBuild, tmp_path: Path
) -> None:
    tree = checkout(tmp_path / "checkout")
    assert not (tree / "node_modules").exists()
    done = subprocess.run(
        [
            "unshare",
            "-rn",
            str(release_build.python),
            "-m",
            "build",
            "--no-isolation",
            "--sdist",
            "--outdir",
            str(tmp_path / "dist"),
            str(tree),
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"},
    )
    assert done.returncode != 0
    message = done.stdout + done.stderr
    assert f"needs Pyodide {PYODIDE_VERSION}'s core files" in message, message
    assert "run `npm ci` in the source tree first" in message
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


def test_check_dist_refuses_distributions_of_another_version_than_the_tag(
    release_build: ReleaseBuild, capsys: pytest.CaptureFixture[str]
) -> None:
    version = PYPROJECT["project"]["version"]
    assert [p.name for p in check_dist.artifacts(release_build.dist, f"v{version}")] == [
        release_build.wheel.name,
        release_build.sdist.name,
    ]
    assert check_dist.main([str(release_build.dist), "--tag", "v999.0.0"]) == 1
    assert "is not version 999.0.0 (tag v999.0.0)" in capsys.readouterr().err


def test_wheel_metadata_has_the_license_urls_classifiers_and_keywords(
    release_build: ReleaseBuild,
) -> None:
    with zipfile.ZipFile(release_build.wheel) as wheel:
        (metadata_name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(wheel.read(metadata_name))
        license_text = wheel.read(metadata_name.replace("METADATA", "licenses/LICENSE")).decode()
    assert metadata["License-Expression"] == "MIT" and metadata["License-File"] == "LICENSE"
    assert license_text.startswith("MIT License") and "WITHOUT WARRANTY" in license_text
    assert license_text == (ROOT / "LICENSE").read_text(encoding="utf-8")
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert set(urls) == {"Homepage", "Repository", "Documentation", "Issues", "Changelog"}
    assert all(u.startswith(urls["Repository"]) for u in urls.values()), urls
    classifiers = metadata.get_all("Classifier")
    unknown = set(classifiers) - trove_classifiers.classifiers
    assert not unknown, f"PyPI refuses an upload with unknown classifiers: {unknown}"
    assert "Framework :: MkDocs" in classifiers and "Typing :: Typed" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers), "PEP 639: the expression only"
    # Every Python version the release workflow checks is one the package claims.
    claimed = {
        c.rsplit(" :: ", 1)[1]
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert set(workflow()["jobs"]["check"]["strategy"]["matrix"]["python-version"]) <= claimed
    assert min(claimed, key=lambda v: int(v.split(".")[1])) == metadata["Requires-Python"][2:]
    assert {"mkdocs", "mkdocs-plugin", "documentation"} <= set(metadata["Keywords"].split(","))
    with tarfile.open(release_build.sdist) as sdist:
        assert any(n.endswith("/LICENSE") for n in sdist.getnames())
