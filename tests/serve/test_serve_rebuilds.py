"""`mkdocs serve`: a rebuild after one edit tokenizes only the changed units, reuses
the last gate calibration and compresses nothing for a static server, while a `mkdocs build` of the same docs writes the bytes it
always has, warm caches or not.

The serve session runs in this process, as `mkdocs serve` does: the config reloaded for
every build, the plugin object kept (it defines ``on_startup``), one warm-up build.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import yaml
from corpora import SiteFactory, mkdocs_build
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import Bundle, bundle_path
from docpilot_runtime.index.build import LAST_BUILD_NAME
from docpilot_runtime.index.tokens import cached_tokens
from mkdocs.commands.build import build
from mkdocs.config import load_config

SERVE_URL = "http://127.0.0.1:8000/"

PAGES = {
    "index.md": "# Welcome\n\nThe product overview. It explains the widget.\n\n## Install\n\npip install it.\n",
    "guide.md": (
        "# Guide\n\nIntro to the guide.\n\n## Errors\n\nWhen the token expires, you get error "
        "E401.\n\n## Retries\n\nThe client retries three times with a backoff.\n"
    ),
    "reference/options.md": (
        "# Options\n\n## timeout\n\nSeconds before a request gives up.\n\n"
        "## retries\n\nHow many times a failed request is sent again.\n"
    ),
    "reference/proxies.md": (
        "# Proxies\n\nRoute requests through an HTTP proxy.\n\n## Authentication\n\n"
        "Put the proxy's user name and password in the proxy URL.\n"
    ),
}


def _session(config: Path, site_dir: Path, command: str) -> Callable[[], None]:
    """A build function for one `mkdocs <command>` session in this process."""

    def get_config() -> object:
        loaded = load_config(config_file=str(config), site_dir=str(site_dir))
        if command == "serve":
            loaded.site_url = SERVE_URL
        return loaded

    get_config().plugins.on_startup(command=command, dirty=False)  # type: ignore[attr-defined]
    logging.getLogger("mkdocs").setLevel(logging.ERROR)

    def rebuild() -> None:
        build(get_config(), serve_url=SERVE_URL if command == "serve" else None)  # type: ignore[arg-type]

    return rebuild


def _edit(config: Path, marker: str) -> None:
    guide = config.parent / "docs" / "guide.md"
    guide.write_text(
        guide.read_text().replace("error E401.", f"error E401 ({marker})."), encoding="utf-8"
    )


def _served(
    make_site: SiteFactory, tmp_path: Path
) -> tuple[Path, Path, Callable[[], None], Bundle, bytes]:
    """A serve session after its first build: mkdocs.yml, the site dir, the rebuild
    function, the first bundle and the last-build record it left."""
    config = make_site(PAGES)
    site = tmp_path / "serve-site"
    rebuild = _session(config, site, "serve")
    rebuild()
    record = (tmp_path / "cache" / LAST_BUILD_NAME).read_bytes()
    return config, site, rebuild, load_bundle(site), record


def test_serve_rebuild_after_one_edit_tokenizes_only_the_edited_unit(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    config, site, rebuild, first, record = _served(make_site, tmp_path)

    _edit(config, "a sentence no test tokenized before: serve-edit-7d1c")
    before = cached_tokens.cache_info().misses
    rebuild()
    edited = load_bundle(site)
    # One unit's text changed; its title and breadcrumb, and every other unit, did not.
    assert cached_tokens.cache_info().misses - before == 1
    assert any("serve-edit-7d1c" in u.text for u in edited.units)
    assert len(edited.units) == len(first.units) > 5
    # The gate is the first build's, not calibrated again...
    assert edited.gate == first.gate
    # ...so this bundle is not what `mkdocs build` would write: it is not recorded as the
    # last build (which a later `mkdocs build` of the same docs would copy back).
    assert (tmp_path / "cache" / LAST_BUILD_NAME).read_bytes() == record
    # Serve's server ignores .gz/.br siblings: static.json is not compressed again.
    assert (site / "docpilot" / "static.json").is_file()
    assert not list((site / "docpilot").glob("static.json.*"))


def test_build_after_a_serve_session_writes_the_bytes_of_a_cold_build(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    # The site's own URL is the one serve uses, and the build below writes to serve's site
    # dir: the gate serve kept matches this site, options and embedder; only the command
    # tells the build not to use it.
    config = make_site(PAGES, site_url=SERVE_URL)
    serve_site = tmp_path / "serve-site"
    rebuild = _session(config, serve_site, "serve")
    rebuild()
    _edit(config, "serve-edit-2b9e")
    rebuild()  # the gate reused, the token cache warm, the embedding cache unpruned

    # `mkdocs build` in a fresh process, with the cache the serve session left...
    mkdocs_build(config)
    after_serve = bundle_path(config.parent / "site").read_bytes()
    # ...in this process, with every in-memory cache warm (tokens, parsed pages, and a
    # gate for this site reused by serve, which a build must not use)...
    (tmp_path / "cache" / LAST_BUILD_NAME).unlink()
    _session(config, serve_site, "build")()
    warm = bundle_path(serve_site).read_bytes()
    # ...and cold: a new process and an empty cache dir.
    cold_config = tmp_path / "cold.yml"
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    settings["plugins"][1]["docpilot"]["cache_dir"] = str(tmp_path / "cold-cache")
    settings["site_dir"] = str(tmp_path / "cold-site")
    cold_config.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    mkdocs_build(cold_config)
    cold = bundle_path(tmp_path / "cold-site").read_bytes()
    assert after_serve == cold
    assert (config.parent / "site" / "docpilot" / "static.json.br").is_file()
    assert warm == cold


def test_serve_calibrates_again_when_the_site_grows_by_more_than_a_tenth(
    make_site: SiteFactory, tmp_path: Path
) -> None:
    config, site, rebuild, first, record = _served(make_site, tmp_path)

    (config.parent / "docs" / "timeouts.md").write_text(
        "# Timeouts\n\n## Connect\n\nSeconds to wait for a connection.\n\n"
        "## Read\n\nSeconds to wait for the first byte of a reply.\n",
        encoding="utf-8",
    )
    rebuild()
    assert len(load_bundle(site).units) > 1.1 * len(first.units)
    # Calibrated for the grown site: a bundle `mkdocs build` would write, so recorded.
    assert (tmp_path / "cache" / LAST_BUILD_NAME).read_bytes() != record
