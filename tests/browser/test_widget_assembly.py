"""The widget's ES modules joined into the one script a page loads, without Node."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docpilot_runtime.browser.widget import WIDGET_DIR, copy_widget
from docpilot_runtime.browser.widget_assembly import (
    CONTRACT,
    assemble_widget,
    contract_module,
    join_modules,
)
from docpilot_runtime.settings.keys import OptionsError
from docpilot_runtime.shared.markdown_tree import ALLOWED, MAX_DEPTH

SOURCE = Path(__file__).resolve().parents[2] / "widget" / "src"


def test_modules_are_joined_after_what_they_import_with_only_the_entrys_exports() -> None:
    joined = join_modules(
        {
            "main.js": 'import { greet } from "./greet.js";\ngreet();\nexport { greet as hello };\n',
            "greet.js": (
                'import { NAME,\n  PUNCT } from "./name.js";\n'
                "export function greet() { return NAME + PUNCT; }\n"
            ),
            "name.js": 'export const NAME = "x";\nexport let PUNCT = "!";\nexport { NAME as N };\n',
            "unused.js": "export const NEVER = 1;\n",
        }
    )
    order = re.findall(r"^// ---- (\S+)$", joined, re.M)
    assert order == ["name.js", "greet.js", "main.js"]
    assert not re.search(r"^import\b", joined, re.M)
    assert re.findall(r"^export\b.*$", joined, re.M) == ["export { greet as hello };"]
    assert 'const NAME = "x";' in joined and "function greet()" in joined
    assert "NEVER" not in joined


def test_a_name_declared_at_the_top_of_two_modules_is_refused_naming_both() -> None:
    sources = {
        "main.js": 'import { a } from "./a.js";\nconst helper = 1;\na(helper);\n',
        "a.js": "function helper() {}\nexport function a() { helper(); }\n",
    }
    with pytest.raises(OptionsError, match=r"a\.js and main\.js both declare 'helper'"):
        join_modules(sources)


def test_importing_a_name_the_module_does_not_export_is_refused() -> None:
    sources = {"main.js": 'import { b } from "./a.js";\nb();\n', "a.js": "function b() {}\n"}
    with pytest.raises(OptionsError, match=r"main\.js imports \['b'\] from a\.js"):
        join_modules(sources)


def test_an_import_cycle_is_refused_naming_it() -> None:
    sources = {
        "main.js": 'import { a } from "./a.js";\n',
        "a.js": 'import { b } from "./b.js";\nexport const a = 1;\n',
        "b.js": 'import { a } from "./a.js";\nexport const b = 2;\n',
    }
    with pytest.raises(OptionsError, match=r"cycle: a\.js → b\.js → a\.js"):
        join_modules(sources)


def test_a_missing_module_is_named_with_its_importer() -> None:
    with pytest.raises(OptionsError, match=r"main\.js imports gone\.js, which does not exist"):
        join_modules({"main.js": 'import { x } from "./gone.js";\n'})


@pytest.mark.parametrize(
    "line",
    [
        'import { a as b } from "./a.js";',
        'import a from "./a.js";',
        'import * as all from "./a.js";',
        'import "./a.js";',
        "export default 1;",
        'export * from "./a.js";',
    ],
)
def test_import_and_export_forms_that_joining_cannot_keep_are_refused(line: str) -> None:
    sources = {"main.js": f"{line}\n", "a.js": "export const a = 1;\n"}
    with pytest.raises(OptionsError, match=r"widget module main\.js"):
        join_modules(sources)


def test_a_template_literal_inside_another_is_refused_since_the_minifier_would_change_it() -> None:
    line = 'export const label = (n) => `a${n ? ` (${n})` : ""}`;'
    sources = {"main.js": f"// first\n{line}\n"}
    with pytest.raises(OptionsError, match=r"main\.js, line 2: a template literal inside"):
        join_modules(sources)


def test_the_contract_holds_the_validators_elements_and_depth() -> None:
    text = contract_module()
    tags = re.search(r'new Set\("([^"]*)"\.split', text)
    depth = re.search(r"MAX_DEPTH = (\d+);", text)
    assert tags is not None and depth is not None
    assert set(tags.group(1).split(" ")) == ALLOWED - {"cite"}  # citations are drawn apart
    assert int(depth.group(1)) == MAX_DEPTH


def test_the_widget_source_declares_no_contract_of_its_own() -> None:
    assert not (SOURCE / CONTRACT).exists()
    for path in SOURCE.glob("*.js"):
        assert not re.search(
            r"^(export )?const (TAGS|MAX_DEPTH)\b", path.read_text("utf-8"), re.M
        ), f"{path.name} declares the element list itself: it comes from markdown_tree"


def test_the_widget_joins_into_one_module_that_exports_only_the_renderer() -> None:
    joined = assemble_widget(SOURCE)
    names = re.findall(r"^// ---- (\S+)$", joined, re.M)
    assert set(names) == {p.name for p in SOURCE.glob("*.js")} | {CONTRACT}
    assert names[0] == CONTRACT and names[-1] == "main.js"
    assert re.findall(r"^export\b.*$", joined, re.M) == ["export { tree as renderTree };"]


def test_the_built_site_gets_one_minified_script_beside_the_worker(tmp_path: Path) -> None:
    copy_widget(tmp_path)
    folder = tmp_path / WIDGET_DIR
    built = sorted(p.name for p in folder.iterdir())
    assert built == ["docpilot.css", "docpilot.js", "worker.js"]
    script = (folder / "docpilot.js").read_text("utf-8")
    assert len(script) < 0.8 * len(assemble_widget(SOURCE)), "not minified"
    assert script.rstrip().endswith("export{tree as renderTree};")
