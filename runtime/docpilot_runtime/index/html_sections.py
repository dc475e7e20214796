"""Read a built HTML page into heading sections of readable text.

We index the HTML the renderer wrote, not the Markdown, so every anchor we store is
one the page really carries (``id`` attributes as written, duplicates and all) and
the indexer works for any generator that writes heading ids (MkDocs, Zensical,
MkDocs 2.0, hand-written HTML).

Text is rendered as light Markdown so excerpts stay readable: code blocks fenced
(and treated as one block, never cut), inline code as code spans (a literal backtick
in prose escaped, so a reader of the text pairs them right), tables as pipe rows,
list items with dashes, admonition and tab titles on their own line. Headings stay
plain text: a section's title is a label. Navigation, headers,
footers, permalink symbols, scripts and anything marked ``data-search-exclude``
are left out.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

# Elements whose whole subtree is chrome, not content.
_DROP_TAGS = {
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "form",
    "button",
    "input",
    "select",
    "textarea",
    "svg",
    "iframe",
    "object",
    "dialog",
}
_DROP_CLASSES = {
    "headerlink",  # the permalink symbol (Python-Markdown toc)
    "md-source-file",  # Material's "last update" footer
    "md-content__button",  # Material's edit / view source buttons
    "md-clipboard",
    "md-annotation__index",
    "linenos",  # line numbers beside highlighted code
    "docpilot-widget",
    # Material's blog: a post's excerpt on the blog index, archive and category pages.
    # The post's own page carries the same text, and that is where a citation belongs.
    "md-post--excerpt",
}
_BLOCK_TAGS = {
    "address",
    "article",
    "aside",
    "blockquote",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "thead",
    "tfoot",
    "tr",
    "ul",
    "center",
    *HEADING_TAGS,
}
_CONTENT_ROOTS = (
    "//article[contains(concat(' ', normalize-space(@class), ' '), ' md-content__inner ')]",
    "//*[@role='main']",
    "//main",
    "//article",
    "//body",
)
_SPACE = re.compile(r"[ \t\r\f\v\u00a0]+")
_NEWLINES = re.compile(r"\s*\n\s*")
_NOINDEX = "noindex"
_PARSER = lxml.html.HTMLParser(encoding="utf-8")


@dataclass
class Block:
    """One paragraph-like piece of a section; ``code`` blocks are never split. ``links``:
    its text is all link text to other pages (an entry of a list of pages)."""

    text: str
    code: bool = False
    links: bool = False


@dataclass
class Section:
    """The content under one heading, up to the next heading of any level."""

    level: int  # 0 for text before the first heading
    anchor: str | None  # the id the renderer wrote on the heading, if any
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class ParsedPage:
    title: str
    ids: list[str]  # every id in the page content, document order, first occurrence
    sections: list[Section]
    noindex: bool  # the page carries <meta name="docpilot" content="noindex">
    redirect: bool  # a meta-refresh stub, not a page


class PageError(ValueError):
    """A page that cannot be read; the message names the problem."""


def _classes(el: etree._Element) -> set[str]:
    return set((el.get("class") or "").split())


def _has_heading(el: etree._Element) -> bool:
    return any(isinstance(d.tag, str) and d.tag in HEADING_TAGS for d in el.iterdescendants())


def _drop_chrome(root: etree._Element) -> None:
    doomed = []
    for el in root.iter():
        if not isinstance(el.tag, str) or (
            el.tag in _DROP_TAGS
            or (el.tag in ("header", "footer") and not _has_heading(el))
            or el.get("data-search-exclude") is not None
            or el.get("data-docpilot-exclude") is not None
            or el.get("hidden") is not None
            or _classes(el) & _DROP_CLASSES
        ):  # comments, processing instructions
            doomed.append(el)
    for el in doomed:
        if el.getparent() is not None:
            el.drop_tree()  # keeps the tail text


def _collapse(text: str) -> str:
    return _SPACE.sub(" ", _NEWLINES.sub(" ", text)).strip()


_NOT_WORDS = re.compile(r"[\W_]+")


def _only_links(el: etree._Element) -> bool:
    """Whether every word of ``el`` is the text of a link to another page (not an anchor
    on this one): an entry of a list of pages, which says nothing of its own."""
    hrefs = [(a, (a.get("href") or "").strip()) for a in el.iter("a")]
    linked = [a for a, href in hrefs if href and not href.startswith("#")]
    if not linked:
        return False
    own = "".join(el.itertext())
    for a in linked:
        own = own.replace("".join(a.itertext()), " ", 1)
    return not _NOT_WORDS.sub("", own)


def _plain(el: etree._Element) -> str:
    """An element's text on one line, as a label (a heading's title)."""
    return _collapse("".join(el.itertext()))


def _code_span(code: str) -> str:
    code = _collapse(code)
    if not code:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if code[0] == "`" or code[-1] == "`" else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def _prose(text: str | None) -> str:
    return (text or "").replace("`", "\\`")


def _inline_parts(el: etree._Element, out: list[str]) -> None:
    """The text under ``el`` with its <code> elements as code spans; backticks in the
    rest escaped."""
    out.append(_prose(el.text))
    for child in el:
        _inline_child(child, out)
        out.append(_prose(child.tail))


def _inline_child(child: etree._Element, out: list[str]) -> None:
    if child.tag == "code":
        out.append(_code_span("".join(child.itertext())))
    elif isinstance(child.tag, str):
        _inline_parts(child, out)


def _inline(el: etree._Element) -> str:
    """An element's inline content on one line, inline code kept as code spans."""
    parts: list[str] = []
    _inline_parts(el, parts)
    return _collapse("".join(parts))


def _code_language(pre: etree._Element) -> str:
    for el in (pre, *pre.iterancestors()):
        for cls in _classes(el):
            if cls.startswith("language-"):
                return cls[len("language-") :]
        if el.tag == "div" and "highlight" in _classes(el):
            break
    code = pre.find("code")
    if code is not None:
        for cls in _classes(code):
            if cls.startswith("language-"):
                return cls[len("language-") :]
    return ""


def _fence(code: str, language: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{code.rstrip()}\n{ticks}"


def _table(table: etree._Element) -> str:
    rows = []
    for tr in table.iter("tr"):
        cells = [_inline(c).replace("|", "\\|") for c in tr if c.tag in ("td", "th")]
        if cells:
            rows.append("| " + " | ".join(cells) + " |")
            if len(rows) == 1:  # a separator row makes the excerpt a Markdown table
                rows.append("|" + " --- |" * len(cells))
    return "\n".join(rows)


class _Walker:
    """Walks the content tree in document order, cutting it at headings."""

    def __init__(self) -> None:
        self.sections: list[Section] = [Section(level=0, anchor=None, title="")]

    def emit(self, text: str, code: bool = False, links: bool = False) -> None:
        text = text if code else text.strip()
        if text:
            self.sections[-1].blocks.append(Block(text=text, code=code, links=links))

    def heading(self, el: etree._Element, level: int) -> None:
        self.sections.append(Section(level=level, anchor=el.get("id"), title=_plain(el)))

    def walk(self, el: etree._Element, prefix: str = "") -> None:
        tag = el.tag
        if tag in HEADING_TAGS:
            self.heading(el, HEADING_TAGS[tag])
            return
        if tag == "pre":
            code = "".join(el.itertext())
            if code.strip():
                self.emit(_fence(code, _code_language(el)), code=True)
            return
        if tag == "table":
            self.emit(_table(el))
            return
        classes = _classes(el)
        if "tabbed-set" in classes:
            self.tabs(el)
            return
        if "admonition-title" in classes or tag == "summary":
            self.emit(_inline(el) + ":")
            return
        if tag == "li":
            prefix = "- "
        elif tag == "dt":
            prefix = ""
        elif tag == "dd":
            prefix = ": "
        self.mixed(el, prefix)

    def mixed(self, el: etree._Element, prefix: str) -> None:
        """Emit an element whose children may mix inline text and blocks."""
        has_blocks = any(isinstance(c.tag, str) and c.tag in _BLOCK_TAGS for c in el)
        if not has_blocks:
            self.emit(prefix + _inline(el), links=_only_links(el))
            return
        inline: list[str] = [_prose(el.text)]

        def flush() -> None:
            nonlocal prefix
            text = _collapse("".join(inline))
            if text:
                self.emit(prefix + text)
                prefix = ""
            inline.clear()

        for child in el:
            if isinstance(child.tag, str) and child.tag in _BLOCK_TAGS:
                flush()
                self.walk(child)
            else:
                _inline_child(child, inline)
            inline.append(_prose(child.tail))
        flush()

    def tabs(self, el: etree._Element) -> None:
        """Content tabs: each tab's label on its own line, then its content."""
        labels = [_plain(lab) for lab in el.iter("label")]
        blocks = [
            b
            for b in el.iter("div")
            if "tabbed-block" in _classes(b) or "tabbed-content" in _classes(b)
        ]
        # Alternate style: .tabbed-content wraps .tabbed-block children; keep the blocks.
        if any("tabbed-block" in _classes(b) for b in blocks):
            blocks = [b for b in blocks if "tabbed-block" in _classes(b)]
        for i, block in enumerate(blocks):
            if i < len(labels) and labels[i]:
                self.emit(labels[i] + ":")
            self.mixed(block, "")


def _page_title(doc: etree._Element, sections: list[Section]) -> str:
    for section in sections:
        if section.level == 1 and section.title:
            return section.title
    titles = doc.xpath("//title")
    if titles:
        return _plain(titles[0])
    return ""


# Pages parsed in this process, by content hash: under `mkdocs serve` one edit rebuilds
# every page, but only the edited one's HTML changes, so the rest are not parsed again.
# Parsed pages are never mutated after parsing. Bounded so a long session cannot grow it.
_PARSED: dict[bytes, ParsedPage] = {}
_PARSED_MAX = 20_000


def parse_page(html: bytes | str, where: str) -> ParsedPage:
    """Parse one built page. ``where`` names the page in error messages."""
    raw = html.encode("utf-8") if isinstance(html, str) else html
    key = hashlib.sha256(raw).digest()
    cached = _PARSED.get(key)
    if cached is not None:
        return cached
    parsed = _parse_page(raw, where)
    if len(_PARSED) >= _PARSED_MAX:
        del _PARSED[next(iter(_PARSED))]
    _PARSED[key] = parsed
    return parsed


def _parse_page(raw: bytes, where: str) -> ParsedPage:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PageError(
            f"{where}: not valid UTF-8 (byte {exc.start}); re-save the page as UTF-8"
        ) from None
    if not text.strip():
        return ParsedPage(title="", ids=[], sections=[], noindex=False, redirect=False)
    try:
        # Bytes with a declared encoding parse faster than str in lxml.
        doc = lxml.html.document_fromstring(raw, parser=_PARSER)
    except (etree.ParserError, ValueError) as exc:
        raise PageError(f"{where}: cannot be parsed as HTML ({exc})") from None

    noindex = redirect = False
    for meta in doc.iter("meta"):
        name = (meta.get("name") or "").lower()
        content = (meta.get("content") or "").lower()
        if name == "docpilot" and _NOINDEX in content:
            noindex = True
        if (meta.get("http-equiv") or "").lower() == "refresh" and "url=" in content:
            redirect = True

    root = None
    for xpath in _CONTENT_ROOTS:
        found = doc.xpath(xpath)
        if found:
            root = found[0]
            break
    walker = _Walker()
    ids: list[str] = []
    if root is not None:
        # Anchors a link could target: those in the content, minus the theme's own
        # widget ids ("__tabbed_1_1", "__codelineno-0-1"), which on big sites would
        # otherwise repeat the whole navigation's ids on every page.
        ids = [str(i) for i in dict.fromkeys(root.xpath(".//@id")) if not str(i).startswith("__")]
        _drop_chrome(root)
        walker.mixed(root, "")
    sections = [s for s in walker.sections if s.blocks or s.level > 0]
    return ParsedPage(
        title=_page_title(doc, sections),
        ids=ids,
        sections=sections,
        noindex=noindex,
        redirect=redirect,
    )
