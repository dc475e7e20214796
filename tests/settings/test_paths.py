"""The one page-path normaliser: every spelling of one page gives one key, and the link
policy and the reader's-page lookup both go through it."""

from __future__ import annotations

import pytest
from docpilot_runtime.bundle.schema import Page
from docpilot_runtime.check.links import LinkPolicy
from docpilot_runtime.shared.paths import page_key, page_path


@pytest.mark.parametrize(
    "spelling",
    [
        "/guides/setup/",
        "guides/setup",
        "/guides/setup",
        "//guides//setup//",
        "/guides/setup/index.html",
        "/guides/setup/index.md",
        "/guides/setup.html",
        "/guides/setup.md",
        "/guides/./setup/",
        "/guides/other/../setup/",
        "/guides/setup/?utm=x",
        "/guides/setup/#install",
        "/guides/setup/index.html?x=1#install",
        "/guides/%73etup/",
    ],
)
def test_every_spelling_of_a_page_has_one_key(spelling: str) -> None:
    assert page_key(spelling) == "guides/setup"


def test_the_mount_prefix_is_dropped_only_where_it_leads() -> None:
    assert page_key("/docs/guides/setup/#x", "/docs/") == "guides/setup"
    assert page_key("/other/docs/guides/", "/docs/") == "other/docs/guides"
    assert page_key("/docs/guides/", "/") == "docs/guides"


def test_the_site_root_and_edge_spellings() -> None:
    assert page_key("/") == page_key("/index.html") == page_key("") == ""
    assert page_key("/../../etc/passwd") == "etc/passwd", "dot segments never climb above /"
    assert page_key("/.html") == ".html", "a bare suffix is a name, not an empty page"
    assert page_path("/a/b/?q=1#frag") == "/a/b/"


def test_the_link_policy_accepts_every_spelling_of_a_page_in_the_set() -> None:
    page = Page(url="/guides/setup/", title="Setup", ids=frozenset({"install"}))
    policy = LinkPolicy([page], allowed_external=())
    for spelling in ("guides/setup.md", "/guides/setup/index.html?x=1", "../guides/./setup"):
        assert policy.resolve(spelling) == "/guides/setup/", spelling
    assert policy.resolve("/guides/setup.html#install") == "/guides/setup/#install"
    assert policy.resolve("/guides/setup/#nowhere") is None, "an anchor the page lacks"
    assert policy.resolve("/guides/other/") is None, "a page outside the set"
