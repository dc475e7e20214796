"""A deterministic synthetic documentation site, written directly as Material-like HTML.

Used by ``bench_build.py`` to index a site far larger than our real corpora without
running MkDocs. Page ``i`` depends only on the seed and ``i``, so the first N pages of
a 5,000-page site are the same files as an N-page site.

Shape of a page: Material's chrome (header, primary nav, table of contents, footer,
scripts) around ``<article class="md-content__inner md-typeset">`` holding an h1 with
an intro, then 3-7 h2/h3 sections (so 4-8 heading sections a page) of generated prose
(a Zipf-weighted vocabulary of ~4,000 words), lists, tables, code blocks and
admonitions; every heading carries an id and a permalink like Python-Markdown's toc.
"""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

SEED = 1729
VOCABULARY_SIZE = 4000
PAGES_PER_SECTION = 100

# Real words mixed into the generated vocabulary, near the frequent end, so the text
# reads like technical documentation and the tokenizer sees realistic compounds.
_TECH_TEXT = (
    "the a of to and in is for with on that by this be as are from it or can you an "
    "configuration server client request response token cache index build plugin theme "
    "page section search query option setting value default file directory path url "
    "version release install command error warning log user key secret api endpoint "
    "header body field schema type string number list map array object function method "
    "class module package import export deploy host port proxy timeout retry limit "
    "batch stream event handler route template render markdown html css javascript "
    "python yaml json toml database table column row record session cookie auth login "
    "permission role policy network socket thread process memory disk cpu queue worker"
)
_SYLLABLE_TEXT = (
    "ka ri to ne mo sa lu ve pi do ra ze fi no ta be co mu li se ga pe vo di ru "
    "xen tor lin dar mek sul pra vin cor bel tam rus fen gol hap jin kel nor pol "
    "quan ster trel ul vex wen yor zan"
)
_SYLLABLES = _SYLLABLE_TEXT.split()
_LANGUAGES = ("python", "yaml", "bash", "json", "toml", "javascript")


def _vocabulary(rng: random.Random) -> list[str]:
    words = list(dict.fromkeys(_TECH_TEXT.split()))
    seen = set(words)
    while len(words) < VOCABULARY_SIZE:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class _Writer:
    """Generates one page's parts from its own random stream."""

    def __init__(self, vocabulary: list[str], weights: list[float], rng: random.Random) -> None:
        self.vocabulary = vocabulary
        self.cum_weights = weights
        self.rng = rng

    def words(self, n: int) -> list[str]:
        return self.rng.choices(self.vocabulary, cum_weights=self.cum_weights, k=n)

    def identifier(self) -> str:
        parts = self.rng.choices(self.vocabulary[60:], k=self.rng.choice((1, 2, 2, 3)))
        return self.rng.choice(("_", "-", ".")).join(parts)

    def title(self) -> str:
        words = self.words(self.rng.randint(2, 4))
        return " ".join(words).capitalize()

    def sentence(self) -> str:
        words = [html.escape(w) for w in self.words(self.rng.randint(6, 22))]
        roll = self.rng.random()
        if roll < 0.25:
            words[self.rng.randrange(len(words))] = f"<code>{self.identifier()}</code>"
        elif roll < 0.35:
            i = self.rng.randrange(len(words))
            words[i] = f'<a href="../{self.identifier()}/">{words[i]}</a>'
        elif roll < 0.42:
            i = self.rng.randrange(len(words))
            words[i] = f"<strong>{words[i]}</strong>"
        text = " ".join(words)
        return text[0].upper() + text[1:] + self.rng.choice((".", ".", ".", ".", "?", "!"))

    def paragraph(self) -> str:
        return "<p>" + " ".join(self.sentence() for _ in range(self.rng.randint(2, 5))) + "</p>"

    def bullet_list(self) -> str:
        tag = self.rng.choice(("ul", "ul", "ol"))
        items = "".join(f"<li>{self.sentence()}</li>" for _ in range(self.rng.randint(2, 6)))
        return f"<{tag}>{items}</{tag}>"

    def table(self) -> str:
        cols = self.rng.randint(2, 4)
        head = "".join(f"<th>{self.words(1)[0].capitalize()}</th>" for _ in range(cols))
        rows = []
        for _ in range(self.rng.randint(2, 6)):
            cells = [f"<td><code>{self.identifier()}</code></td>"]
            cells += [f"<td>{' '.join(self.words(self.rng.randint(1, 6)))}</td>"]
            cells += [f"<td>{self.rng.randint(0, 5000)}</td>" for _ in range(cols - 2)]
            rows.append("<tr>" + "".join(cells[:cols]) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    def code_block(self) -> str:
        language = self.rng.choice(_LANGUAGES)
        lines = []
        for _ in range(self.rng.randint(3, 12)):
            name, other = self.identifier(), self.identifier()
            lines.append(
                self.rng.choice(
                    (
                        f'<span class="n">{name}</span> <span class="o">=</span> '
                        f'<span class="s2">"{other}"</span>',
                        f'<span class="nt">{name}</span><span class="p">:</span> '
                        f'<span class="l l-Scalar">{self.rng.randint(0, 999)}</span>',
                        f'<span class="k">def</span> <span class="nf">{name}</span>'
                        f'<span class="p">({other}):</span>',
                        f'    <span class="k">return</span> <span class="n">{other}</span>',
                        f'<span class="c1"># {" ".join(self.words(5))}</span>',
                    )
                )
            )
        body = "\n".join(lines)
        return (
            f'<div class="language-{language} highlight"><pre><span></span>'
            f"<code>{body}\n</code></pre></div>"
        )

    def admonition(self) -> str:
        kind = self.rng.choice(("note", "tip", "warning"))
        return (
            f'<div class="admonition {kind}"><p class="admonition-title">{kind.capitalize()}</p>'
            f"{self.paragraph()}</div>"
        )

    def section_body(self) -> str:
        parts = [self.paragraph() for _ in range(self.rng.randint(1, 3))]
        for chance, make in (
            (0.35, self.code_block),
            (0.30, self.bullet_list),
            (0.15, self.table),
            (0.10, self.admonition),
        ):
            if self.rng.random() < chance:
                parts.insert(self.rng.randint(1, len(parts)), make())
        return "\n".join(parts)


def _slug(text: str, seen: dict[str, int]) -> str:
    """Python-Markdown toc's ids: lower-case, dashes, ``_1``, ``_2`` for repeats."""
    base = re.sub(r"[^\w\s-]", "", text.lower()).strip()
    base = re.sub(r"[\s-]+", "-", base) or "section"
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _heading(level: int, title: str, anchor: str) -> str:
    return (
        f'<h{level} id="{anchor}">{html.escape(title)}'
        f'<a class="headerlink" href="#{anchor}" title="Permanent link">&para;</a></h{level}>'
    )


def page_path(index: int) -> str:
    """Site-relative path of page ``index``: ``s03/p0317/index.html``."""
    return f"s{index // PAGES_PER_SECTION:02d}/p{index:04d}/index.html"


def _page_html(index: int, vocabulary: list[str], weights: list[float]) -> str:
    writer = _Writer(vocabulary, weights, random.Random(SEED * 1_000_003 + index))
    rng = writer.rng
    title = writer.title()
    seen: dict[str, int] = {}
    body = [_heading(1, title, _slug(title, seen)), writer.section_body()]
    toc: list[str] = []
    for _ in range(rng.randint(3, 7)):
        level = 2 if not toc or rng.random() < 0.6 else 3
        heading = writer.title()
        anchor = _slug(heading, seen)
        toc.append(f'<li class="md-nav__item"><a href="#{anchor}">{html.escape(heading)}</a></li>')
        body += [_heading(level, heading, anchor), writer.section_body()]
    section = index // PAGES_PER_SECTION
    first = section * PAGES_PER_SECTION
    nav = "".join(
        f'<li class="md-nav__item"><a class="md-nav__link" href="/{page_path(i)[:-10]}">'
        f"Page {i}</a></li>"
        for i in range(first, first + 40)
    )
    return f"""<!doctype html>
<html lang="en" class="no-js">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{html.escape(title)} - Synthetic Docs</title>
<link rel="stylesheet" href="/assets/stylesheets/main.css">
</head>
<body dir="ltr">
<header class="md-header" data-md-component="header"><nav class="md-header__inner md-grid">
<a href="/" class="md-header__button md-logo">Synthetic Docs</a>
<div class="md-search" data-md-component="search"><form class="md-search__form">
<input type="text" class="md-search__input" placeholder="Search"></form></div></nav></header>
<div class="md-container" data-md-component="container"><main class="md-main">
<div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary"><nav class="md-nav md-nav--primary">
<ul class="md-nav__list">{nav}</ul></nav></div>
<div class="md-sidebar md-sidebar--secondary"><nav class="md-nav md-nav--secondary">
<ul class="md-nav__list">{"".join(toc)}</ul></nav></div>
<div class="md-content" data-md-component="content">
<article class="md-content__inner md-typeset">
{chr(10).join(body)}
<aside class="md-source-file">Last update: 2026-01-01</aside>
</article></div></div></main>
<footer class="md-footer"><div class="md-copyright">Made with Material for MkDocs</div></footer>
</div>
<script src="/assets/javascripts/bundle.js"></script>
</body>
</html>
"""


def write_synthetic_site(site_dir: Path, pages: int) -> list[Path]:
    """Write ``pages`` pages under ``site_dir``; return their paths in page order."""
    vocab_rng = random.Random(SEED)
    vocabulary = _vocabulary(vocab_rng)
    total = 0.0
    weights = []
    for rank in range(1, len(vocabulary) + 1):
        total += 1.0 / rank**1.05
        weights.append(total)
    paths = []
    for index in range(pages):
        path = site_dir / page_path(index)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_page_html(index, vocabulary, weights), encoding="utf-8")
        paths.append(path)
    return paths
