"""Shared fixtures: real sites built with real `mkdocs build`, once for every test
process of a session (shared_builds.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from browsing import SCREENSHOTS, is_browser_test
from corpora import EXAMPLE_SITE, MATERIAL, SiteFactory, mkdocs_build
from devset_sites import BuiltSites

# fresh_site, local_model, release_build: session fixtures of several modules, defined
# once here (a module importing one would hold a definition, and a build, of its own).
from fresh_install import fresh_site  # noqa: F401
from local_engine import local_model  # noqa: F401  (the real_model tests' engine)
from release_build import release_build  # noqa: F401
from shared_builds import SharedBuild, SharedSite, SiteBuilds, reduced_site


def _builds_root(config: pytest.Config) -> Path:
    """pytest's cache folder (kept between sessions), else the base of the temporary
    folders (shared by pytest-xdist's workers)."""
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("shared-builds"))
    return Path(config._tmp_path_factory.getbasetemp()).parent / "shared-builds"  # type: ignore[attr-defined]


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before any test, once (in pytest-xdist's controlling process, not in each worker):
    drop shared builds of another source and the last session's screenshots."""
    if not hasattr(session.config, "workerinput"):
        SiteBuilds(_builds_root(session.config)).remove_other_sources()
        shutil.rmtree(SCREENSHOTS, ignore_errors=True)


# Modules that share a long session build go to one worker, one after the other, so the
# build runs once (each xdist worker has its own session fixtures). They are the longest
# run of one worker (about four minutes), so they go first: started last, they would be
# the end of the session, one worker busy and the others done.
ONE_WORKER = {
    "tests/test_install_lines.py": "the release build",
    "tests/test_release.py": "the release build",
}


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """ONE_WORKER names every module whose tests use the release build (when they run);
    its modules' tests are moved to the front."""
    using = {
        _module(item.nodeid)
        for item in items
        if "release_build" in getattr(item, "fixturenames", ())
    }
    if using and not using <= ONE_WORKER.keys():
        raise pytest.UsageError(
            f"tests/conftest.py's ONE_WORKER misses {sorted(using - ONE_WORKER.keys())}, "
            "which use the release build"
        )
    items.sort(key=lambda item: _module(item.nodeid) not in ONE_WORKER)  # stable


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` (scripts/test.sh), with two changes: the Chromium tests are
    handed out one by one, after every other test (each worker still runs them last, as
    tests/chromium/conftest.py orders them), and the other tests by module in collection
    order (never re-sorted by size: that could send a Chromium test first). A module's
    tests on one worker set its module fixtures (runtimes, servers) up once."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesThenBrowserTests(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if is_browser_test(nodeid):
                return nodeid
            return ONE_WORKER.get(_module(nodeid), _module(nodeid))

    config.option.loadscopereorder = False
    return ModulesThenBrowserTests(config, log)


@pytest.fixture(scope="session")
def site_builds(pytestconfig: pytest.Config) -> SiteBuilds:
    return SiteBuilds(_builds_root(pytestconfig))


def write_project(
    folder: Path, pages: dict[str, str], plugin: dict[str, Any] | None, cache: str, **extra: Any
) -> Path:
    """A small MkDocs project in ``folder`` (pages: path -> Markdown); its mkdocs.yml."""
    docs = folder / "docs"
    for name, text in pages.items():
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    config = {
        "site_name": "Test site",
        "theme": {"name": "material"},
        "markdown_extensions": [
            {"toc": {"permalink": True}},
            "admonition",
            "pymdownx.superfences",
            {"pymdownx.tabbed": {"alternate_style": True}},
            {"pymdownx.highlight": {"pygments_lang_class": True}},
            "tables",
        ],
        "plugins": ["search", {"docpilot": {"cache_dir": cache, **(plugin or {})}}],
        **extra,
    }
    path = folder / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="session", autouse=True)
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user's data folder for the session: turn records a runtime keeps by default
    (`records.location`) land in a temporary folder, not in the home of whoever runs the
    tests (subprocesses inherit it)."""
    folder = tmp_path_factory.mktemp("data-home")
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(folder)
    yield folder
    if before is None:
        del os.environ["XDG_DATA_HOME"]
    else:
        os.environ["XDG_DATA_HOME"] = before


@pytest.fixture
def make_site(tmp_path: Path) -> SiteFactory:
    """Write a small MkDocs project (pages: path -> Markdown) in the test's folder and
    return its mkdocs.yml: for tests that build it themselves (and maybe edit and rebuild)."""

    def make(pages: dict[str, str], plugin: dict[str, Any] | None = None, **extra: Any) -> Path:
        return write_project(tmp_path, pages, plugin, str(tmp_path / "cache"), **extra)

    return make


@pytest.fixture(scope="module")
def small_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A three-page site (installation, caching, proxies), written and indexed without
    MkDocs (`small_site.build_small_site`), once per module."""
    from small_site import CACHE, INSTALL, PROXY, build_small_site

    root = tmp_path_factory.mktemp("small")
    build_small_site(root / "site", root / "cache", [INSTALL, CACHE, PROXY])
    return root / "site"


@pytest.fixture
def shared_site(site_builds: SiteBuilds) -> SharedSite:
    """The project `make_site` would write, built once for the session (its embedding cache
    in the build's own folder): for tests that only read the built site and build output."""

    def build(
        pages: dict[str, str], plugin: dict[str, Any] | None = None, **extra: Any
    ) -> SharedBuild:
        key = {"pages": pages, "plugin": plugin, "extra": extra}
        return site_builds.get(
            key, lambda folder: mkdocs_build(write_project(folder, pages, plugin, "cache", **extra))
        )

    return build


@pytest.fixture(scope="session")
def example_site(site_builds: SiteBuilds) -> Path:
    """example-site built with its own mkdocs.yml, once (the site in a shared folder)."""
    return site_builds.get(
        {"example-site": "mkdocs.yml"},
        lambda folder: mkdocs_build(
            EXAMPLE_SITE / "mkdocs.yml", "--site-dir", str(folder / "site")
        ),
        inputs=[EXAMPLE_SITE],
    ).site


@pytest.fixture(scope="session")
def material_site(site_builds: SiteBuilds) -> Path:
    """The Material for MkDocs corpus built once through the plugin."""
    return reduced_site(site_builds, MATERIAL)



@pytest.fixture(scope="session")
def built_sites(site_builds: SiteBuilds) -> BuiltSites:
    """Every dev-set corpus, built with plain `mkdocs build` on first use, by set name."""
    return BuiltSites(site_builds)
