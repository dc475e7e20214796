"""`exclude` patterns an owner got wrong are named: a pattern that matches no page is a
warning (a `--strict` build fails on it) that says what patterns are matched against; and
a build that excludes every page leaves the embedding cache as it was, so putting the
pattern right costs no re-embedding."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgpack
from corpora import MKDOCS_ENV, SiteFactory, mkdocs_build
from docpilot_runtime.index.build import index_site
from docpilot_runtime.settings.index import IndexOptions

PAGES = {
    "index.md": "# Home\n\nThe product overview and how to install it with pip.\n",
    "guide.md": "# Guide\n\n## Errors\n\nWhen the token expires you get error E401.\n",
    "drafts/wip.md": "# Work in progress\n\nNot ready for readers.\n",
}


def cache_entries(cache: Path) -> set[bytes]:
    (path,) = cache.glob("embeddings-*.msgpack")
    return set(msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)["entries"])


def test_a_pattern_that_matches_no_page_is_named_in_a_warning(make_site: SiteFactory) -> None:
    config = make_site(PAGES, plugin={"exclude": ["drafts/*", "docs/drafts/*", "[guide.md"]})
    done = mkdocs_build(config)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 2, done.stderr
    assert "'docs/drafts/*' matches no page" in warnings[0]
    assert "'drafts/wip/'" in warnings[0] and "'drafts/wip.md'" in warnings[0], "what is matched"
    assert "'[guide.md' matches no page" in warnings[1]
    strict = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)],
        capture_output=True, text=True, env=MKDOCS_ENV, cwd=config.parent,
    )
    assert strict.returncode != 0 and "matches no page" in strict.stderr


def test_an_all_excluded_build_keeps_the_embedding_cache(make_site: SiteFactory) -> None:
    config = make_site(PAGES)
    mkdocs_build(config)
    site, cache = config.parent / "site", config.parent / "cache"
    before = cache_entries(cache)
    assert before

    nothing = index_site(site, IndexOptions(cache_dir=str(cache), exclude=("*",)))
    assert nothing.units == 0
    assert cache_entries(cache) >= before, "the excluded build dropped the cached vectors"

    again = index_site(site, IndexOptions(cache_dir=str(cache)))
    assert again.units > 0 and again.embedded == 0, "everything came from the cache"
