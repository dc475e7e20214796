"""Write the function-word lists the composed channel's rescue rule reads.

``docpilot_runtime.retrieve.followup`` sets aside the function words of every language before it
asks which of a follow-up's words name a subject. The lists come from the PyPI package
``stop-words`` (BSD 3-Clause; its licence text travels inside both files), installed
only where this script runs. The same file carries one small list the rule reads beside
them:

* ``noun_capitalising``: the function words of the languages whose spelling capitalises
  every noun (German), as the tokenizer spells them: in a follow-up written in one of
  them a capital letter mid-sentence does not mark a name.

Two files:

* ``tools/function_words/stop_words.json``: the package's lists as they are, per
  language (kept in the repository, not shipped);
* ``runtime/docpilot_runtime/function_words.json``: those words as the tokenizer spells
  them, the form the runtime and the browser compare with, so neither tokenizes ten
  thousand words on the first follow-up. ``tests/retrieve/test_conversation.py`` holds the two
  files equal under the current tokenizer: when it changes, re-run this script.

    .venv/bin/pip install -e '.[function-words]'   # stop-words 2025.11.4
    .venv/bin/python tools/function_words/make_function_words.py            # from the package
    .venv/bin/python tools/function_words/make_function_words.py --lists    # from stop_words.json
"""

from __future__ import annotations

import argparse
import json
from importlib import metadata, resources
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LISTS = HERE / "stop_words.json"
OUT = HERE.parents[1] / "runtime" / "docpilot_runtime" / "function_words.json"


def from_package() -> dict[str, Any]:
    """The package's lists, per ISO 639-1 code, with its version and licence."""
    folder = resources.files("stop_words") / "stop-words"
    codes: dict[str, str] = json.loads((folder / "languages.json").read_text(encoding="utf-8"))
    languages = {}
    for code, name in sorted(codes.items()):
        text = (folder / f"{name}.txt").read_text(encoding="utf-8")
        languages[code] = sorted({w.strip() for w in text.splitlines()} - {""})
    licence = next(f for f in metadata.files("stop-words") or [] if f.name == "LICENSE")
    return {
        "source": f"stop-words {metadata.version('stop-words')} (PyPI), BSD 3-Clause",
        "licence": Path(str(licence.locate())).read_text(encoding="utf-8"),
        "languages": languages,
    }


# Languages whose spelling capitalises every noun, so a capital mid-sentence is no sign of
# a name there (a fact of their orthography, not a list chosen on the dev sets).
NOUN_CAPITALISING = ("de",)


def terms_of(lists: dict[str, Any]) -> list[str]:
    """Every listed word as the tokenizer spells it, sorted and distinct."""
    from docpilot_runtime.retrieve.tokenize import query_terms

    words = (w for listed in lists["languages"].values() for w in listed)
    return sorted({t for w in words for t in query_terms(w)})


def write(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    path.write_text(text + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lists", action="store_true", help="re-tokenize stop_words.json")
    args = parser.parse_args()
    if args.lists:
        lists = json.loads(LISTS.read_text(encoding="utf-8"))
    else:
        lists = from_package()
        write(LISTS, lists)
    write(
        OUT,
        {
            "about": "Function words of many languages as DocPilot's tokenizer spells them, set "
            "aside by the composed channel's rescue rule (docpilot_runtime.retrieve.followup) "
            "before it asks which of a follow-up's words name a subject. "
            f"From {lists['source']} (its licence below); "
            "written by tools/function_words/make_function_words.py.",
            "licence": lists["licence"],
            "terms": terms_of(lists),
            "noun_capitalising": terms_of(
                {"languages": {c: lists["languages"][c] for c in NOUN_CAPITALISING}}
            ),
        },
    )


if __name__ == "__main__":
    main()
