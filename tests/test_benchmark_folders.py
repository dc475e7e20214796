"""`benchmarks/run --quick` runs the smokes side by side, so each script writes only in a
folder of its own under benchmarks/out/: a build empties its site folder, and a script
serving that folder to Chromium at the time loses its files (two CI runs failed so)."""

from __future__ import annotations

import ast
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _out_folder(tree: ast.Module) -> str | None:
    """``<name>`` of a module-level ``OUT = HERE / "out" / "<name>"``."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["OUT"]
            and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.right, ast.Constant)
        ):
            return str(node.value.right.value)
    return None


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.BinOp):
        node = node.left
    return node.id if isinstance(node, ast.Name) else None


def test_every_script_builds_the_example_site_in_its_own_out_folder() -> None:
    owners: dict[str, str] = {}
    builds = 0
    for script in sorted(BENCHMARKS.glob("bench_*.py")):
        tree = ast.parse(script.read_text(encoding="utf-8"))
        out = _out_folder(tree)
        if out is not None:
            assert out not in owners, f"{script.name} and {owners[out]} both write out/{out}"
            owners[out] = script.name
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "build_example":
                builds += 1
                where = f"{script.name}:{call.lineno}"
                assert call.args, f"{where}: build_example() needs the script's own folder"
                assert out is not None and _root_name(call.args[0]) == "OUT", (
                    f"{where}: build_example({ast.unparse(call.args[0])}) is not under "
                    "the script's own OUT"
                )
    assert builds >= 3, builds  # bench_browser, bench_download, bench_wait
