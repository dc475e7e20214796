"""`llms.txt` and `llms-full.txt`: the site as coding agents read it, from the bundle's units.

Both files are written from the bundle just written (the same units, anchors and
exclusions the assistant answers from), so an agent reading them and a reader asking
the widget see the same site. `llms.txt` follows the llms.txt convention: an H1 title,
a blockquote summary, then H2 sections holding Markdown link lists (one item per page,
its headings nested under it). `llms-full.txt` holds every unit's text under its
breadcrumb and section URL. Pages appear in nav order when the generator told us the
nav, else in URL order; a page with no unit (excluded, or empty) is left out.

A file someone else wrote (a docs file, or another plugin such as mkdocs-llmstxt) is
left alone: we only overwrite a file whose hash we recorded when we wrote it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import BUNDLE_DIR, Bundle, UnitRecord
from docpilot_runtime.bundle.write import write_atomic
from docpilot_runtime.settings.index import IndexOptions

log = logging.getLogger("docpilot.index")

LLMS_TXT = "llms.txt"
LLMS_FULL_TXT = "llms-full.txt"
RECORD_NAME = "llms-files.json"  # under site/docpilot/: hashes of the files we wrote
SUMMARY_CHARS = 300
TOP_PAGES = "Pages"  # the H2 for pages at the top of the nav, outside any section
OTHER_PAGES = "Other pages"  # the H2 for pages the nav does not list (or no nav at all)
# Characters a Markdown link destination may carry as they are; others are %-escaped.
_URL_SAFE = "/#:?=&%~-._!$'*+,;@"

NavEntry = tuple[str, str]  # (nav section title, page url), in nav order


@dataclass(frozen=True)
class AgentFiles:
    """The two files' text, before they are written."""

    llms_txt: str
    llms_full_txt: str


def site_link(url: str, site_url: str) -> str:
    """A unit or page url as a link: absolute under ``site_url`` when known, else as is."""
    url = quote(url, safe=_URL_SAFE)
    if not site_url:
        return url
    return site_url.rstrip("/") + "/" + url.lstrip("/")


def _label(text: str) -> str:
    """Link text on one line, with the brackets that would end it escaped."""
    flat = " ".join(text.split())
    return flat.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _summary(units: Sequence[UnitRecord], home: int | None, site_name: str) -> str:
    """The home page's first paragraph of prose, cut at a sentence end near SUMMARY_CHARS."""
    for unit in units:
        if unit.page != home:
            continue
        for block in unit.text.split("\n\n"):
            if block.startswith(("```", "|", "- ", "#")):
                continue
            text = " ".join(block.split())
            if len(text) > SUMMARY_CHARS:
                cut = text.rfind(". ", 0, SUMMARY_CHARS)
                text = text[: cut + 1] if cut > 0 else text[:SUMMARY_CHARS].rstrip() + "…"
            return text
    return f"The documentation of {site_name}."


def _page_order(bundle: Bundle, nav: Sequence[NavEntry]) -> list[tuple[str, int]]:
    """(section title, page index) for every page that has units: nav order first, then
    the pages the nav does not list, in URL order."""
    with_units = {u.page for u in bundle.units}
    by_url = {p.url: i for i, p in enumerate(bundle.pages) if i in with_units}
    ordered: list[tuple[str, int]] = []
    seen: set[int] = set()
    for section, url in nav:
        index = by_url.get(url)
        if index is not None and index not in seen:
            ordered.append((section or TOP_PAGES, index))
            seen.add(index)
    rest = sorted((i for i in by_url.values() if i not in seen), key=lambda i: bundle.pages[i].url)
    ordered.extend((OTHER_PAGES, i) for i in rest)
    return ordered


def render_agent_files(
    bundle: Bundle, site_name: str, site_url: str, nav: Sequence[NavEntry]
) -> AgentFiles:
    """Both files' text for one bundle; the same bundle and nav give the same text."""
    name = site_name or bundle.site_name
    pages = bundle.pages
    units_of: dict[int, list[UnitRecord]] = {}
    for unit in bundle.units:
        units_of.setdefault(unit.page, []).append(unit)
    home = next((i for i, p in enumerate(pages) if p.url == "/"), None)
    summary = _summary(bundle.units, home, name)
    order = _page_order(bundle, nav)

    head = [f"# {name}", "", f"> {summary}", ""]
    outline = [
        *head,
        f"Every page and section of this site, linked. The full text of every section is in "
        f"[{LLMS_FULL_TXT}]({site_link('/' + LLMS_FULL_TXT, site_url)}).",
    ]
    current: str | None = None
    for section, index in order:
        if section != current:
            outline += ["", f"## {section}", ""]
            current = section
        page = pages[index]
        outline.append(f"- [{_label(page.title or page.url)}]({site_link(page.url, site_url)})")
        listed: set[str] = set()
        for unit in units_of[index]:
            if not unit.breadcrumb or unit.url in listed:  # the page's own title section
                continue
            listed.add(unit.url)
            outline.append(f"  - [{_label(unit.title)}]({site_link(unit.url, site_url)})")

    full = list(head)
    for _section, index in order:
        previous = ""
        for unit in units_of[index]:
            if unit.url == previous:  # the next part of a long section: same heading
                full += [unit.text, ""]
                continue
            previous = unit.url
            trail = " > ".join(p for p in (*unit.breadcrumb, unit.title) if p)
            full += [f"## {trail}", "", f"Source: {site_link(unit.url, site_url)}", ""]
            full += [unit.text, ""]
    return AgentFiles("\n".join(outline) + "\n", "\n".join(full).rstrip("\n") + "\n")


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def page_markdown_path(url: str) -> str | None:
    """Where a page's Markdown copy goes, beside its HTML: ``/a/`` -> ``a/index.md``."""
    if url.endswith("/"):
        return url.lstrip("/") + "index.md"
    if url.endswith(".html"):
        return url.lstrip("/")[: -len(".html")] + ".md"
    return None


def render_page_markdown(bundle: Bundle, page: int) -> str:
    """One page as clean Markdown from its units: its title, then each section under a
    heading one level below its parents (the units' text is Markdown already)."""
    title = bundle.pages[page].title or bundle.pages[page].url
    out = [f"# {title}", ""]
    previous = ""
    for unit in bundle.units:
        if unit.page != page:
            continue
        if unit.breadcrumb and unit.url != previous:
            out += [f"{'#' * min(len(unit.breadcrumb) + 1, 6)} {unit.title}", ""]
        previous = unit.url
        out += [unit.text, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def write_agent_files(
    site_dir: str | Path,
    options: IndexOptions,
    nav: Sequence[NavEntry] = (),
    warn: Callable[[str], None] | None = None,
) -> list[Path]:
    """Write ``llms.txt`` and ``llms-full.txt`` beside the site's bundle (option
    ``llms_txt``) and each indexed page's ``index.md`` (option ``markdown_pages``);
    returns the files written. A file we did not write ourselves is left alone, with
    one info line; a file that cannot be written is a warning, since the bundle itself
    is already in place."""
    if not (options.llms_txt or options.markdown_pages):
        return []
    site = Path(site_dir)
    bundle = load_bundle(site)
    wanted: list[tuple[str, str]] = []
    if options.llms_txt:
        files = render_agent_files(bundle, options.site_name, options.site_url, nav)
        wanted += [(LLMS_TXT, files.llms_txt), (LLMS_FULL_TXT, files.llms_full_txt)]
    if options.markdown_pages:
        for index in sorted({u.page for u in bundle.units}):
            rel = page_markdown_path(bundle.pages[index].url)
            if rel is not None:
                wanted.append((rel, render_page_markdown(bundle, index)))
    record_path = site / BUNDLE_DIR / RECORD_NAME
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    record = record if isinstance(record, dict) else {}
    written: list[Path] = []
    for name, text in wanted:
        target = site / name
        found = _sha256(target)
        if found is not None and record.get(name) != found:
            log.info(
                "DocPilot: %s was written by something else (a docs file or another "
                "plugin); left as it is",
                target,
            )
            continue
        payload = text.encode("utf-8")
        digest = hashlib.sha256(payload).hexdigest()
        try:
            if found != digest:
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(target, payload)
        except OSError as exc:
            (warn or log.warning)(f"cannot write {target} ({exc.strerror}); it is left out")
            continue
        record[name] = digest
        written.append(target)
    if written:
        body = json.dumps(record, sort_keys=True, indent=1) + "\n"
        with contextlib.suppress(OSError):  # then the next build treats the files as foreign
            write_atomic(record_path, body.encode("utf-8"))
    return written
