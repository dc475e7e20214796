"""The widget's script, joined from its ES modules into the one file every page loads.

The widget's source is a folder of small ES modules (`widget/src/`). Owners build sites
without Node, so no bundler runs: the modules are joined here, in the order ES module
evaluation gives (depth first along the imports, from the entry), into one module with the
`import` lines and the `export` keywords of the inner modules removed. Joined, they share
one scope, so a name declared at the top level of two modules is an error, as is an import
the named module does not export, a cycle, or an import or export form other than
``import { a, b } from "./x.js";``, ``export function|class|const|let`` and ``export { ... }``.
The entry module keeps its own exports (the page-facing ones).

One module is written here rather than read: ``contract.js``, the element names and depth
the Python validator allows (`markdown_tree.ALLOWED`, `MAX_DEPTH`), so the widget draws
exactly the tree the runtime checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from docpilot_runtime.settings.keys import OptionsError
from docpilot_runtime.shared.markdown_tree import ALLOWED, MAX_DEPTH

ENTRY = "main.js"
CONTRACT = "contract.js"

_IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"\./([\w.-]+\.js)";?[ \t]*\n?', re.M)
_ANY_IMPORT = re.compile(r"^import\b.*$", re.M)
_EXPORT_LIST = re.compile(r"^export\s*\{([^}]*)\};?[ \t]*\n?", re.M)
_EXPORT_DECLARATION = re.compile(
    r"^export\s+(?=(?:async\s+)?function\b|class\b|const\b|let\b)", re.M
)
_ANY_EXPORT = re.compile(r"^export\b.*$", re.M)
_DECLARED = re.compile(
    r"^(?:export\s+)?(?:async\s+)?(?:function\*?\s*|class\s+|const\s+|let\s+|var\s+)([\w$]+)", re.M
)
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
# A template literal inside another's ${…}: rjsmin reads the inner one as code and drops
# its spaces, so joining refuses it (write the inner one as its own expression).
_NESTED_TEMPLATE = re.compile(r"\$\{[^}`\n]*`")


@dataclass(frozen=True)
class Module:
    """One source module: what it imports (name → module file), exports and declares."""

    name: str
    text: str
    imports: Mapping[str, tuple[str, ...]]
    exports: frozenset[str]
    declared: tuple[str, ...]


def contract_module() -> str:
    """contract.js: the elements and nesting depth the Python validator lets through."""
    tags = " ".join(sorted(ALLOWED - {"cite"}))
    return (
        "// Written by the build from markdown_tree.ALLOWED and MAX_DEPTH.\n"
        f'export const TAGS = new Set("{tags}".split(" "));\n'
        f"export const MAX_DEPTH = {MAX_DEPTH}; // deeper elements are dropped, their text kept\n"
    )


def _names(listing: str, where: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in listing.split(",") if part.strip())
    for name in names:
        if not _NAME.fullmatch(name):
            raise OptionsError(f"widget module {where}: '{name}' is not a plain name (no 'as')")
    return names


def parse_module(name: str, text: str) -> Module:
    """A module's imports, exports and top-level names; other import/export forms fail."""
    imports: dict[str, tuple[str, ...]] = {}
    for match in _IMPORT.finditer(text):
        target = match.group(2)
        imports[target] = imports.get(target, ()) + _names(match.group(1), name)
    stray = _ANY_IMPORT.search(_IMPORT.sub("", text))
    if stray:
        raise OptionsError(
            f"widget module {name}: unsupported import '{stray.group().strip()}' "
            '(write: import { a, b } from "./module.js";)'
        )
    exported: list[str] = []
    for match in _EXPORT_LIST.finditer(text):
        for item in match.group(1).split(","):
            words = item.split()
            if words:
                exported.append(words[-1])  # "tree as renderTree": the page sees renderTree
    rest = _EXPORT_DECLARATION.sub("", _EXPORT_LIST.sub("", text))
    stray = _ANY_EXPORT.search(rest)
    if stray:
        raise OptionsError(
            f"widget module {name}: unsupported export '{stray.group().strip()}' "
            "(write: export function|class|const|let NAME, or export { ... })"
        )
    nested = _NESTED_TEMPLATE.search(text)
    if nested:
        line = text.count("\n", 0, nested.start()) + 1
        raise OptionsError(
            f"widget module {name}, line {line}: a template literal inside another's ${{…}}, "
            "which the minifier (rjsmin) would change; make the inner one its own expression"
        )
    declared = tuple(_DECLARED.findall(text))
    exports = {m.group(1) for m in _DECLARED.finditer(text) if m.group().startswith("export")}
    return Module(name, text, imports, frozenset(exports | set(exported)), declared)


def module_order(modules: Mapping[str, Module], entry: str = ENTRY) -> list[str]:
    """The modules in ES evaluation order: each after everything it imports."""
    order: list[str] = []
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            cycle = " → ".join([*visiting[visiting.index(name) :], name])
            raise OptionsError(f"widget modules import each other in a cycle: {cycle}")
        if name not in modules:
            importer = visiting[-1] if visiting else "the build"
            raise OptionsError(f"widget module {importer} imports {name}, which does not exist")
        visiting.append(name)
        for target in modules[name].imports:
            visit(target)
        visiting.pop()
        order.append(name)

    visit(entry)
    return order


def _check(modules: Mapping[str, Module], order: list[str]) -> None:
    owner: dict[str, str] = {}
    for name in order:
        module = modules[name]
        for declared in module.declared:
            if declared in owner:
                raise OptionsError(
                    f"widget modules {owner[declared]} and {name} both declare '{declared}' at "
                    "the top level (joined into one file they share a scope): rename one"
                )
            owner[declared] = name
        for target, names in module.imports.items():
            missing = sorted(set(names) - modules[target].exports)
            if missing:
                raise OptionsError(
                    f"widget module {name} imports {missing} from {target}, which does not "
                    "export them"
                )


def join_modules(sources: Mapping[str, str], entry: str = ENTRY) -> str:
    """One ES module from ``sources`` (file name → text), reachable from ``entry``."""
    modules = {name: parse_module(name, text) for name, text in sources.items()}
    order = module_order(modules, entry)
    _check(modules, order)
    parts = []
    for name in order:
        text = _IMPORT.sub("", modules[name].text)
        if name != entry:
            text = _EXPORT_LIST.sub("", _EXPORT_DECLARATION.sub("", text))
        parts.append(f"// ---- {name}\n{text.strip()}\n")
    return "\n".join(parts)


def assemble_widget(folder: Path) -> str:
    """The widget's script from ``folder`` (its `src/`), with the generated contract.js."""
    sources = {path.name: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.js"))}
    if CONTRACT in sources:
        raise OptionsError(f"{folder / CONTRACT} must not exist: the build writes it")
    if ENTRY not in sources:
        raise OptionsError(f"the widget's entry module {folder / ENTRY} is missing")
    return join_modules({**sources, CONTRACT: contract_module()})
