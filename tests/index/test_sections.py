"""Reading built HTML into sections and units: what is kept, what is left out, how long
sections are cut, and how bad pages are reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from docpilot_runtime.index.build import BuildError, index_site
from docpilot_runtime.index.html_sections import PageError, parse_page
from docpilot_runtime.index.units import page_units
from docpilot_runtime.settings.embedder import EmbedderSpec
from docpilot_runtime.settings.index import IndexOptions

MATERIAL_LIKE = """<!doctype html><html><head><title>Setup - Site</title></head><body>
<header class="md-header"><nav>Home Guide Search</nav></header>
<nav class="md-nav">Navigation entries</nav>
<main><div><article class="md-content__inner md-typeset">
<h1 id="setup">Setup<a class="headerlink" href="#setup">&para;</a></h1>
<p>Install the <code>docpilot</code> package.</p>
<div data-search-exclude><p>Hidden from search</p></div>
<h2 id="options">Options<a class="headerlink" href="#options">&para;</a></h2>
<div class="admonition warning"><p class="admonition-title">Careful</p><p>Keys stay in env vars.</p></div>
<div class="tabbed-set tabbed-alternate"><input id="__tabbed_1_1" type="radio">
<div class="tabbed-labels"><label for="__tabbed_1_1">pip</label><label for="__tabbed_1_2">uv</label></div>
<div class="tabbed-content"><div class="tabbed-block"><div class="language-bash highlight"><pre><code>pip install x
</code></pre></div></div><div class="tabbed-block"><p>Use uv add.</p></div></div></div>
<table><thead><tr><th>key</th><th>default</th></tr></thead><tbody><tr><td>timeout</td><td>30</td></tr></tbody></table>
<ul><li>first item</li><li>second item</li></ul>
<script>alert(1)</script>
</article></div></main>
<footer class="md-footer">Made with love</footer></body></html>"""


def test_content_is_kept_readable_and_chrome_left_out() -> None:
    page = parse_page(MATERIAL_LIKE.encode(), "setup.html")
    assert page.title == "Setup"
    assert [(s.anchor, s.title) for s in page.sections] == [
        ("setup", "Setup"),
        ("options", "Options"),
    ]
    text = "\n\n".join(b.text for b in page.sections[1].blocks)
    assert "Careful:" in text and "Keys stay in env vars." in text
    assert "pip:\n\n```bash\npip install x\n```" in text
    assert "uv:\n\nUse uv add." in text
    assert "| key | default |\n| --- | --- |\n| timeout | 30 |" in text
    assert "- first item" in text and "- second item" in text
    everything = "\n".join(b.text for s in page.sections for b in s.blocks)
    for chrome in ("Navigation entries", "Made with love", "Hidden from search", "alert", "¶"):
        assert chrome not in everything
    assert "__tabbed_1_1" not in page.ids and {"setup", "options"} <= set(page.ids)


def test_inline_code_stays_code_in_unit_text() -> None:
    html = (
        "<main><h1 id='t'>The <code>exclude</code> option</h1>"
        "<p>Set <code>exclude</code> to <code>a`b</code>, or <a href='#t'><code>x|y</code></a>;"
        " a lone ` stays a character.</p>"
        "<ul><li>Use <code>docs/*</code>\nhere</li></ul>"
        "<table><tr><th>key</th></tr><tr><td><code>cors|origins</code></td></tr></table>"
        "<div class='admonition'><p class='admonition-title'>Mind <code>max_steps</code></p></div>"
        "</main>"
    )
    (section,) = parse_page(html.encode(), "code.html").sections
    assert section.title == "The exclude option"  # a title is a label, plain text
    assert [b.text for b in section.blocks] == [
        "Set `exclude` to ``a`b``, or `x|y`; a lone \\` stays a character.",
        "- Use `docs/*` here",
        "| key |\n| --- |\n| `cors\\|origins` |",
        "Mind `max_steps`:",
    ]


def test_long_section_splits_at_paragraphs_never_inside_code() -> None:
    code = "\n".join(f"line_{i} = {i}" for i in range(40))
    paragraphs = "".join(f"<p>{'word ' * 60}number {i}.</p>" for i in range(12))
    html = f"<main><h1 id='t'>T</h1>{paragraphs}<pre><code>{code}</code></pre>{paragraphs}</main>"
    units = page_units(parse_page(html, "t.html"), "/t/", 0, max_chars=1000)
    assert len(units) > 3
    assert [u.id for u in units[:3]] == ["/t/#t", "/t/#t~2", "/t/#t~3"]
    assert all(u.url == "/t/#t" for u in units)
    assert all(len(u.text) <= 1000 for u in units)
    for unit in units:
        assert unit.text.count("```") % 2 == 0, "a code fence was cut open"
    joined = "".join(u.text for u in units)
    assert all(f"line_{i} = {i}" in joined for i in range(40))


def test_code_block_longer_than_the_cap_is_cut_at_lines_and_refenced() -> None:
    code = "\n".join(f"value_{i} = compute({i})" for i in range(400))
    html = f"<main><h1 id='c'>Only code</h1><pre><code class='language-python'>{code}</code></pre></main>"
    units = page_units(parse_page(html, "c.html"), "/c/", 0, max_chars=800)
    assert len(units) > 5
    for unit in units:
        assert unit.text.startswith("```python\n") and unit.text.endswith("\n```")
        assert len(unit.text) <= 800


def test_page_that_is_not_utf8_names_the_page() -> None:
    with pytest.raises(PageError, match=r"broken\.html: not valid UTF-8"):
        parse_page(b"<p>caf\xe9</p>", "broken.html")


def test_not_utf8_page_fails_the_build_naming_it(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_bytes(b"<main><h1 id='a'>A</h1><p>ok</p></main>")
    (tmp_path / "latin1.html").write_bytes(b"<main><h1 id='b'>B</h1><p>caf\xe9</p></main>")
    with pytest.raises(BuildError, match=r"latin1\.html: not valid UTF-8"):
        index_site(tmp_path, IndexOptions(embedder=EmbedderSpec(name="none")))
    assert not (tmp_path / "docpilot" / "bundle.msgpack").exists()


def test_empty_page_is_a_note_not_a_warning_and_is_kept_in_the_page_set(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_bytes(b"<main><h1 id='a'>A</h1><p>ok</p></main>")
    (tmp_path / "empty.html").write_bytes(b"")
    warnings: list[str] = []
    notes: list[str] = []
    report = index_site(
        tmp_path,
        IndexOptions(embedder=EmbedderSpec(name="none"), cache_dir=str(tmp_path / "cache")),
        warn=warnings.append,
        note=notes.append,
    )
    assert any("empty.html: empty page" in n for n in notes)
    assert warnings == []
    assert report.units == 1 and report.pages == 2


def test_heading_with_no_text_takes_the_parent_title_and_is_noted() -> None:
    html = "<main><h1 id='p'>Page</h1><h2 id='opts'>Options</h2><p>a</p><h3 id='_1'></h3><p>b</p></main>"
    notes: list[str] = []
    parsed = parse_page(html, "p.html")
    units = page_units(parsed, "/p/", 0, note=notes.append, where="docs/p.md")
    assert units[-1].url == "/p/#_1" and units[-1].title == "Options"
    assert notes and "#_1" in notes[0] and notes[0].startswith("docs/p.md: ")


def test_one_megabyte_page_is_indexed_in_capped_units(tmp_path: Path) -> None:
    paragraph = "<p>" + "The quick brown fox jumps over the lazy dog. " * 40 + "</p>"
    body = "".join(f"<h2 id='s{i}'>Section {i}</h2>" + paragraph * 12 for i in range(50))
    html = f"<main><h1 id='big'>Big</h1>{body}</main>"
    assert len(html) > 1_000_000
    (tmp_path / "index.html").write_text(html)
    report = index_site(
        tmp_path, IndexOptions(embedder=EmbedderSpec(name="none"), max_section_chars=6000)
    )
    assert report.units >= 150


def test_headings_without_ids_fall_back_to_the_last_real_anchor() -> None:
    html = "<main><h1 id='top'>Top</h1><p>a</p><h2>No id here</h2><p>b</p></main>"
    units = page_units(parse_page(html, "x.html"), "/x/", 0)
    assert [u.id for u in units] == ["/x/#top", "/x/#top~2"]
    assert units[1].title == "No id here"
