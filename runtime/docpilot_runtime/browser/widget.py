"""The reader's widget on a built site: its tags in every page, its files.

One owner for both ways a site gets the widget: the MkDocs plugin (which adds the tags
as it writes each page) and `docpilot index` (which adds them to pages already built by
another generator). Everything here is published in every page: no secrets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from posixpath import relpath
from typing import Any

import rcssmin
import rjsmin

from docpilot_runtime.browser.widget_assembly import ENTRY, assemble_widget
from docpilot_runtime.bundle.schema import Bundle
from docpilot_runtime.settings.keys import OptionsError
from docpilot_runtime.settings.widget import WidgetOptions

WIDGET_DIR = "docpilot"  # under site_dir, next to the bundle
WIDGET_SCRIPT = "docpilot.js"
_TAGS = re.compile(
    r'<script id="docpilot-config" type="application/json">.*?</script>\n'
    r'<script type="module" src="[^"]*"></script>\n',
    re.S,
)


def widget_source() -> Path:
    """The folder holding the widget's files: inside the installed package (a wheel ships
    them as `docpilot_runtime/widget/`), else the source tree's `widget/` (editable install)."""
    package = Path(__file__).resolve().parent.parent
    for folder in (package / "widget", package.parent.parent / "widget"):
        if (folder / "src" / ENTRY).is_file():
            return folder
    raise OptionsError(
        f"the widget files are missing (looked for src/{ENTRY} "
        f"in {package / 'widget'} and {package.parent.parent / 'widget'})"
    )


def widget_strings(language: str, overrides: Mapping[str, str], where: str) -> dict[str, str]:
    """The interface strings: English, then the shipped language that matches
    ``language`` ("pt-BR" tries pt-br, then pt), then the owner's overrides."""
    i18n = widget_source() / "i18n"
    strings: dict[str, str] = json.loads((i18n / "en.json").read_text(encoding="utf-8"))
    unknown = set(overrides) - set(strings)
    if unknown:
        raise OptionsError(
            f"{where}: unknown key(s) {sorted(unknown)} under 'strings' (known: {sorted(strings)})"
        )
    code = language.lower().replace("_", "-")
    for candidate in (code, code.split("-")[0]):
        shipped = i18n / f"{candidate}.json"
        if candidate and shipped.is_file():
            strings.update(json.loads(shipped.read_text(encoding="utf-8")))
            break
    return {**strings, **overrides}


def widget_config(
    options: WidgetOptions,
    actions: Iterable[Mapping[str, Any]],
    theme_language: str,
    where: str,
) -> dict[str, Any]:
    """What the widget is told on every page."""
    language = options.language or theme_language or "en"
    # Declared actions with a URL: the widget opens it; the others become DOM events.
    action_urls = {str(a["name"]): str(a["url"]) for a in actions if a.get("name") and a.get("url")}
    return {
        "endpoint": options.endpoint.strip(),
        "title": options.title,
        "placeholder": options.placeholder,
        "position": options.position,
        "suggested_questions": list(options.suggested_questions),
        "support_url": options.support_url,
        "history": options.history,
        "require_consent": options.require_consent,
        "max_question_chars": options.max_question_chars,
        "language": language,
        "strings": widget_strings(language, options.strings, where),
        "pyodide_url": options.pyodide_url,
        "search_handoff": options.search_handoff,
        "ask_about_page": options.ask_about_page,
        "copy_page": options.copy_page,
        "ai_notice": options.ai_notice,
        "actions": action_urls,
    }


def widget_tags(config: Mapping[str, Any], script_src: str) -> str:
    """The two tags that start the widget. The JSON is escaped so that no value can close
    the script element (`</script>`) or open a comment."""
    data = json.dumps(config, ensure_ascii=False, separators=(",", ":"))
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<script id="docpilot-config" type="application/json">{data}</script>\n'
        f'<script type="module" src="{script_src}"></script>\n'
    )


def script_src(page_url: str) -> str:
    """The widget script's URL relative to a page (so the site works under a sub-path)."""
    page_dir = page_url if page_url.endswith("/") else page_url.rsplit("/", 1)[0] + "/"
    return relpath(f"/{WIDGET_DIR}/{WIDGET_SCRIPT}", page_dir)


def inject(html: str, tags: str) -> str:
    """``html`` with the widget's tags before ``</body>``, replacing earlier ones, so
    indexing a site twice leaves one widget."""
    html = _TAGS.sub("", html)
    end = html.rfind("</body>")
    return html + tags if end < 0 else html[:end] + tags + html[end:]


# Minified as they are copied: every page loads them, and the build must not need Node.
_MINIFIERS: dict[str, Callable[[str], str]] = {
    "docpilot.css": lambda text: rcssmin.cssmin(text),
}


def widget_files() -> dict[str, bytes]:
    """The widget's files as `site/docpilot/` holds them (name -> bytes): the script joined
    from `src/` and minified, the stylesheet minified, the worker and strings as they are.
    The plugin hands them to MkDocs' file collection, where other plugins see them."""
    files = {WIDGET_SCRIPT: rjsmin.jsmin(assemble_widget(widget_source() / "src")).encode()}
    for path in sorted(widget_source().iterdir()):
        if not path.is_file() or path.name.startswith((".", "_")):
            continue
        minify = _MINIFIERS.get(path.name)
        data = path.read_bytes()
        files[path.name] = data if minify is None else minify(data.decode("utf-8")).encode()
    return files


def copy_widget(site_dir: Path) -> None:
    """Write the widget's files into `site/docpilot/` (`docpilot index`, or a build whose
    MkDocs cannot add generated files to its collection)."""
    target = site_dir / WIDGET_DIR
    target.mkdir(parents=True, exist_ok=True)
    for name, data in widget_files().items():
        (target / name).write_bytes(data)


def install_widget(
    site_dir: Path,
    options: WidgetOptions,
    log: Callable[[str], None] = lambda _m: None,
    bundle: Bundle | None = None,
    warn: Callable[[str], None] | None = None,
    precompress: bool = True,
    copy: bool = True,
) -> bool:
    """The widget's files plus Pyodide and our browser wheel, which its worker needs for
    the in-browser credential check (in every mode), and the static index, in every mode
    too: static mode reads it, and so does the widget when no runtime answers.
    Without Pyodide (a broken install) ``warn`` says so and the widget, unable to check
    for secrets, sends nothing; returns whether Pyodide is there. ``copy`` False: the
    widget's own files are in the site already (MkDocs wrote them from its collection)."""
    # Imported here: the plugin and `docpilot index` load this module to write tags; only an
    # install needs the browser runtime's files.
    from docpilot_runtime.browser.install import install_browser_runtime

    if copy:
        copy_widget(site_dir)
    return install_browser_runtime(
        site_dir,
        options.pyodide_url or None,
        log,
        True,
        bundle,
        **({"warn": warn} if warn else {}),
        precompress=precompress,
    )


def inject_built_site(
    site_dir: Path, page_files: Sequence[tuple[Path, str]], config: Mapping[str, Any]
) -> int:
    """Add the widget's tags to already built pages, given as (file, url); returns how
    many pages changed."""
    changed = 0
    for path, url in page_files:
        html = path.read_text(encoding="utf-8")
        updated = inject(html, widget_tags(config, script_src(url)))
        if updated != html:
            path.write_text(updated, encoding="utf-8")
            changed += 1
    return changed
