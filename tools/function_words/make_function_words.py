"""Write ``runtime/docpilot_runtime/function_words.json`` from the ``stop-words`` package.

The composed channel's rescue rule (``docpilot_runtime.followup``) sets aside the
function words of every language before it asks which of a follow-up's words name a
subject. The lists come from the PyPI package ``stop-words`` (BSD 3-Clause; its
licence text travels inside the JSON, under ``licence``), installed only where
this script runs: the runtime and the browser read the JSON, so neither needs the
package. Re-run after upgrading it:

    .venv/bin/pip install stop-words==2025.11.4
    .venv/bin/python tools/function_words/make_function_words.py
"""

from __future__ import annotations

import json
from importlib import metadata, resources
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "runtime" / "docpilot_runtime"


def main() -> None:
    folder = resources.files("stop_words") / "stop-words"
    codes: dict[str, str] = json.loads((folder / "languages.json").read_text(encoding="utf-8"))
    languages = {}
    for code, name in sorted(codes.items()):
        text = (folder / f"{name}.txt").read_text(encoding="utf-8")
        words = {w.strip() for w in text.splitlines()}
        languages[code] = sorted(w for w in words if w)
    version = metadata.version("stop-words")
    licence = next(f for f in metadata.files("stop-words") or [] if f.name == "LICENSE")
    data = {
        "about": "Function words of many languages, set aside by the composed channel's rescue "
        "rule (docpilot_runtime.followup) before it asks which of a follow-up's words name a "
        f"subject. From the PyPI package stop-words {version} (BSD 3-Clause, its licence "
        "below), written by tools/function_words/make_function_words.py.",
        "languages": languages,
        "licence": Path(str(licence.locate())).read_text(encoding="utf-8"),
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    (OUT / "function_words.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
