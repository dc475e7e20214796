"""The Markdown contract's fixture (markdown_contract.yaml), read once for both sides: the
validator's tests (tests/check) and the widget's (tests/chromium)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from docpilot_runtime.bundle.schema import Page
from docpilot_runtime.check.validate import Source, ValidatedAnswer, validate_answer

FIXTURE = Path(__file__).with_name("markdown_contract.yaml")


@dataclass(frozen=True)
class Case:
    name: str
    markdown: str
    blocks: list[Any]
    html: str


def _load() -> tuple[list[Page], dict[str, Source], list[str], list[Case]]:
    data = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    pages = [Page(url, url, frozenset(ids)) for url, ids in data["pages"].items()]
    emitted = {cid: Source(cid, cid, cid) for cid in data["emitted"]}
    cases = [Case(c["name"], c["markdown"], c["blocks"], c["html"]) for c in data["cases"]]
    return pages, emitted, list(data["excerpt_urls"]), cases


PAGES, EMITTED, EXCERPT_URLS, CASES = _load()


def validate(markdown: str, numbered: list[str] | None = None) -> ValidatedAnswer:
    """``markdown`` through the validator, against the fixture's pages and excerpts."""
    return validate_answer(
        markdown, EMITTED, PAGES, allowed_external=EXCERPT_URLS, answer_citations=numbered or []
    )
