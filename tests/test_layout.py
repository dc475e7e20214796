"""The package's layout rules, read from the import graph (`ast`, nothing is imported).

`docpilot_runtime` has one part per stage and side (its subpackages; the face's modules
`api`, `cli` and `turn` are parts of their own). `ALLOWED` below is the one place that says
which part may import which: a new import across parts fails here, naming the file and the
import, until the table says it is meant. The other rules:

* the browser core (the folders the browser wheel is built from, and the worker's entry
  module) imports only the standard library and itself: it runs under Pyodide, where
  there is no numpy, no httpx and no server;
* settings are plain data: `settings/` imports only the standard library, `shared/` and
  itself, so the MkDocs plugin reading its options loads no server code;
* only the face (`api`, `cli`) imports the HTTP side (`serve/`);
* no module imports itself back through others (no cycles), `TYPE_CHECKING` aside.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from corpora import ROOT
from docpilot_runtime.browser.install import BROWSER_ENTRY, BROWSER_PACKAGES

PACKAGE = ROOT / "runtime" / "docpilot_runtime"

# part -> the other parts it may import. In the order a question travels, then the
# build side and what serves them all; a part's own modules import each other freely.
ALLOWED: dict[str, set[str]] = {
    "shared": set(),
    "settings": {"shared"},
    "bundle": {"shared"},
    "screen": {"shared"},
    "retrieve": {"shared", "bundle"},
    "reply": {"shared", "bundle", "screen", "retrieve"},
    # check/support.py reads an answer's words with the search's own tokenizer and
    # function words (issue 22: the support check of answers that cite nothing inline).
    "check": {"shared", "settings", "bundle", "retrieve", "reply"},
    "providers": {"settings"},
    "answer": {"shared", "settings", "retrieve", "check", "providers"},
    "embedders": {"settings", "providers"},
    "scoring": {"bundle", "retrieve", "embedders"},
    "index": {"settings", "bundle", "retrieve", "scoring", "embedders"},
    "sites": {"settings", "bundle", "retrieve", "scoring", "embedders", "index"},
    "records": {"shared", "settings"},
    "limits": {"settings", "records"},
    "turn": {
        "shared", "settings", "retrieve", "reply", "check", "answer", "providers", "sites",
        "records", "limits",
    },
    # evaluate/model_figures.py judges a model's answers with check/support.py's rule.
    "evaluate": {"shared", "retrieve", "check", "turn"},
    "report": {"retrieve", "records", "evaluate"},
    "browser": {"shared", "settings", "bundle", "screen", "retrieve", "reply"},
    "serve": {
        "shared", "settings", "bundle", "screen", "retrieve", "answer", "providers", "index",
        "sites", "records", "limits", "turn",
    },
    "api": {"shared", "settings", "browser", "embedders", "index", "evaluate", "turn", "serve"},
    "cli": {
        "shared", "settings", "bundle", "browser", "embedders", "index", "records", "report",
        "evaluate", "turn", "serve", "api",
    },
    "__init__": set(),
}
# Imports inside a function that the browser never calls: the bundle's msgpack packs and
# unpacks the server's file (the browser reads the JSON static index).
LAZY_THIRD_PARTY = {("bundle/read.py", "msgpack"), ("bundle/write.py", "msgpack")}


@dataclass(frozen=True)
class Import:
    module: str  # the importing file, relative to the package ("serve/app.py")
    target: str  # the imported module, dotted ("docpilot_runtime.turn", "numpy")
    line: int
    type_checking: bool  # under `if TYPE_CHECKING:` (never runs)

    @property
    def part(self) -> str:
        return part_of(self.module)

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def part_of(module: str) -> str:
    """The part a file belongs to: its top folder, or its own name at the top level."""
    head, _, rest = module.partition("/")
    return head if rest else head.removesuffix(".py")


def imports_of(path: Path) -> Iterator[Import]:
    """Every import statement of a file, absolute, with whether it only type-checks."""
    module = path.relative_to(PACKAGE).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module}:{node.lineno}: imports are absolute here"
            base = node.module or ""
            names = [base]
            if base == "docpilot_runtime":  # "from docpilot_runtime import x" may be a module
                names += [f"docpilot_runtime.{a.name}" for a in node.names if a.name != "__version__"]
        for name in names:
            yield Import(module, name, node.lineno, id(node) in guarded)


def all_imports() -> list[Import]:
    return [i for p in sorted(PACKAGE.rglob("*.py")) for i in imports_of(p)]


def internal_part(target: str) -> str | None:
    """The part an import of ours lands in, None for anything else."""
    bits = target.split(".")
    if bits[0] != "docpilot_runtime" or len(bits) < 2:
        return None
    return bits[1]


def test_every_part_is_in_the_table() -> None:
    parts = {part_of(p.relative_to(PACKAGE).as_posix()) for p in PACKAGE.rglob("*.py")}
    assert parts == set(ALLOWED), (parts - set(ALLOWED), set(ALLOWED) - parts)


def test_imports_across_parts_follow_the_table() -> None:
    wrong = [
        str(i)
        for i in all_imports()
        if (target := internal_part(i.target)) is not None
        and target != i.part
        and target not in ALLOWED[i.part]
    ]
    assert not wrong, "imports the table in tests/test_layout.py does not allow:\n" + "\n".join(
        wrong
    )


def test_the_table_has_no_cycle_between_parts() -> None:
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(part: str, path: list[str]) -> None:
        if seen.get(part) == 1:
            pytest.fail("parts import each other: " + " -> ".join([*path, part]))
        if seen.get(part) == 2:
            return
        seen[part] = 1
        for other in sorted(ALLOWED[part]):
            visit(other, [*path, part])
        seen[part] = 2

    for part in ALLOWED:
        visit(part, [])


def _dotted(module: str) -> str:
    name = "docpilot_runtime." + module.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def test_no_module_imports_itself_back() -> None:
    graph: dict[str, set[str]] = {}
    known = {_dotted(p.relative_to(PACKAGE).as_posix()) for p in PACKAGE.rglob("*.py")}
    for i in all_imports():
        if i.type_checking or i.target not in known:
            continue
        graph.setdefault(_dotted(i.module), set()).add(i.target)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        if state.get(node) == 1:
            cycle = [*path[path.index(node) :], node]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if state.get(node) == 2:
            return
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(graph):
        visit(node, [])


def _browser_core_files() -> list[str]:
    files = list(BROWSER_ENTRY)
    for folder in BROWSER_PACKAGES:
        files += [p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / folder).glob("*.py")]
    return files


def test_the_browser_core_imports_only_the_standard_library_and_itself() -> None:
    core = set(BROWSER_PACKAGES)
    wrong = []
    for module in _browser_core_files():
        for i in imports_of(PACKAGE / module):
            top = i.target.split(".")[0]
            if top == "docpilot_runtime":
                target = internal_part(i.target)
                entry = i.target in ("docpilot_runtime", "docpilot_runtime.browser")
                if target is not None and target not in core and not entry:
                    wrong.append(str(i))
            elif (
                top not in sys.stdlib_module_names
                and top != "__future__"
                and (module, top) not in LAZY_THIRD_PARTY
            ):
                wrong.append(str(i))
    assert not wrong, "the browser core must run under Pyodide:\n" + "\n".join(wrong)


def test_settings_import_only_the_standard_library_shared_and_themselves() -> None:
    wrong = []
    for path in sorted((PACKAGE / "settings").glob("*.py")):
        for i in imports_of(path):
            top = i.target.split(".")[0]
            ours = internal_part(i.target) in ("settings", "shared")
            if not ours and top not in sys.stdlib_module_names and top != "__future__":
                wrong.append(str(i))
    assert not wrong, "\n".join(wrong)


def test_only_the_face_imports_the_http_side() -> None:
    wrong = [
        str(i)
        for i in all_imports()
        if internal_part(i.target) == "serve" and i.part not in ("serve", "api", "cli")
    ]
    assert not wrong, "\n".join(wrong)


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


SERVER_LIBRARIES = {"starlette", "httpx", "prometheus_client", "uvicorn"}


@pytest.mark.parametrize(
    "module", ["mkdocs_docpilot.plugin", "docpilot_runtime.settings.load"]
)
def test_the_plugin_and_the_settings_load_no_server_code(module: str) -> None:
    loaded = _loaded_after(f"import {module}")
    assert module in loaded
    assert not loaded & SERVER_LIBRARIES, loaded & SERVER_LIBRARIES
    served = {m for m in loaded if m.startswith(("docpilot_runtime.serve", "docpilot_runtime.turn"))}
    assert not served, served
