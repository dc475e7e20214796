"""What the widget's Pyodide worker calls: the credential check, and static mode.

Static mode answers with no server at all. A turn runs the server's stages 1-3 in
lexical mode: the credential check, social openers, BM25+ over the bundle's lexical
block with the same signals and the same calibrated lexical gate, then `passages` (the
best excerpts, cited) or a `refusal` with the closest pages. The result object is the
server's `Result.to_dict()`, field for field (`tests/test_static_assets.py` holds the
two equal on a real site).

Pure Python, and neither numpy nor msgpack: static mode reads `docpilot/static.json`,
the part of the bundle it needs, written next to the bundle at build time
(`static_index_json`, called by `static_assets.install_browser_runtime`). Measured in
Pyodide under Node (`tools/pyodide/measure-decode.mjs`), turning the bytes into a
searchable index takes the same time either way, within noise: 3-5 ms for example-site
(256 units), 15-25 ms for the Material corpus (1,564 units), whether msgpack's Pyodide
wheel decodes the whole bundle or `json` decodes this file. Loading that wheel costs
0.2-0.5 s more, and shipping it would need PyPI at build time: so the browser loads
Pyodide's core files and our own wheel, nothing else.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import stages
from .credentials import credential_reply, find_credential
from .gate import Signals, confidence, default_params, gate_score
from .lexical import LexicalIndex
from .markdown_tree import trusted_blocks
from .tokenize import query_terms
from .types import (
    AskRequest,
    Limits,
    PageRef,
    RequestError,
    Result,
    parse_ask_request,
)

STATIC_FORMAT = "docpilot-static"
STATIC_VERSION = 1
STATIC_NAME = "static.json"  # beside bundle.msgpack, in <site_dir>/docpilot/
_BINARY_BLOCKS = ("terms", "offsets", "docs", "tfs", "lengths")


class StaticIndexError(ValueError):
    """A static index that cannot be used; the message names the file and the field."""


# --- The static index: written at build time, read in the browser -----------------------


def static_index(bundle: Mapping[str, Any], bundle_hash: str) -> dict[str, Any]:
    """The part of a decoded bundle that static mode reads, as plain JSON values.

    ``bundle_hash`` is the sha256 of the bundle's bytes, so results name the same
    bundle as the server's would. Binary lexical blocks travel as base64."""
    lexical = {
        key: base64.b64encode(value).decode("ascii") if key in _BINARY_BLOCKS else value
        for key, value in bundle["lexical"].items()
    }
    gate = bundle.get("gate") or {}
    return {
        "format": STATIC_FORMAT,
        "version": STATIC_VERSION,
        "bundle_hash": bundle_hash,
        "bundle_version": bundle.get("version"),
        "site": {"name": (bundle.get("site") or {}).get("name") or ""},
        "pages": [{"url": p["url"], "title": p["title"]} for p in bundle["pages"]],
        "units": [
            {
                "id": u["id"],
                "url": u["url"],
                "title": u["title"],
                "text": u["text"],
                "page": u["page"],
            }
            for u in bundle["units"]
        ],
        "lexical": lexical,
        "gate": {"lexical": gate["lexical"]} if isinstance(gate.get("lexical"), dict) else {},
    }


def static_index_json(bundle: Mapping[str, Any], bundle_hash: str) -> bytes:
    """``static_index`` as UTF-8 JSON bytes; equal bundles give equal bytes."""
    text = json.dumps(
        static_index(bundle, bundle_hash), ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )
    return text.encode("utf-8")


def _field(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise StaticIndexError(
            f"{where}: field {key!r} should be {kind.__name__}, found {type(value).__name__}"
        )
    return value


# --- The engine: the server's lexical mode, over the static index ------------------------


@dataclass(frozen=True)
class StaticUnit:
    id: str
    url: str
    title: str
    text: str
    page: int


@dataclass
class _Ranking:
    order: list[int]
    signals: Signals
    lexical: list[tuple[int, float]]


@dataclass
class _Retrieval:
    ranking: _Ranking
    passed: bool
    confidence: int
    rescued: bool
    page_first: list[int] = field(default_factory=list)

    def ordered(self) -> list[int]:
        return stages.with_page_first(self.page_first, self.ranking.order)


class StaticSite:
    """One site's static index, decoded once, answering in lexical mode."""

    def __init__(self, data: Mapping[str, Any], where: str, prefix: str = "/") -> None:
        if data.get("format") != STATIC_FORMAT:
            raise StaticIndexError(
                f"{where}: field 'format' should be {STATIC_FORMAT!r}, found "
                f"{data.get('format')!r}; static mode reads docpilot/{STATIC_NAME}"
            )
        if data.get("version") != STATIC_VERSION:
            raise StaticIndexError(
                f"{where}: field 'version' is {data.get('version')!r}, this runtime reads "
                f"version {STATIC_VERSION}; rebuild the site with the same DocPilot version"
            )
        self.bundle_hash = str(_field(data, "bundle_hash", str, where))
        self.name = str(_field(data, "site", dict, where).get("name") or "this site")
        self.pages = [
            PageRef(url=str(p["url"]), title=str(p["title"]))
            for p in _field(data, "pages", list, where)
        ]
        self.units = [
            StaticUnit(
                id=str(u["id"]),
                url=str(u["url"]),
                title=str(u["title"]),
                text=str(u["text"]),
                page=int(u["page"]),
            )
            for u in _field(data, "units", list, where)
        ]
        block = dict(_field(data, "lexical", dict, where))
        for key in _BINARY_BLOCKS:
            block[key] = base64.b64decode(block[key])
        self.index = LexicalIndex(block)
        gate = _field(data, "gate", dict, where).get("lexical")
        self.gate = gate if isinstance(gate, dict) else default_params("lexical")
        self.prefix = prefix if prefix.endswith("/") else prefix + "/"
        self.page_units: dict[str, list[int]] = {}
        for i, unit in enumerate(self.units):
            self.page_units.setdefault(self.pages[unit.page].url, []).append(i)

    def search(self, text: str) -> _Ranking:
        terms = query_terms(text)
        hits = self.index.search(terms, stages.CHANNEL_DEPTH)
        strength, lexical_margin = stages.lexical_signals(self.index, terms, hits)
        signals = Signals(lexical_strength=strength, lexical_margin=lexical_margin)
        return _Ranking(order=[u for u, _ in hits[: stages.POOL]], signals=signals, lexical=hits)

    def judge(self, ranking: _Ranking) -> tuple[bool, int]:
        score = gate_score(ranking.signals, self.gate)
        threshold = float(self.gate["threshold"])
        return score >= threshold, confidence(score, threshold)

    def retrieve(self, request: AskRequest) -> _Retrieval:
        ranking = self.search(request.question)
        passed, conf = self.judge(ranking)
        rescued = False
        composed = stages.composed_question(request.history, request.question)
        if composed is not None:
            composed_ranking = self.search(composed)
            c_passed, c_conf = self.judge(composed_ranking)
            if c_passed and not passed:
                ranking, passed, conf, rescued = composed_ranking, True, c_conf, True
        page_first = (
            stages.page_first(
                request.page, self.prefix, self.page_units, ranking.order, ranking.lexical
            )
            if request.page
            else []
        )
        return _Retrieval(ranking, passed, conf, rescued, page_first)

    def ask(self, request: AskRequest) -> Result:
        """One turn in lexical mode: the server's stages 1-3, then passages or refusal."""
        base: dict[str, Any] = {"turn_id": uuid.uuid4().hex, "bundle_hash": self.bundle_hash}
        opening = stages.opening_result(request, self.name, None, base)
        if opening is not None:
            return opening
        retrieval = self.retrieve(request)
        ordered = retrieval.ordered()
        common: dict[str, Any] = {
            **base,
            "confidence": retrieval.confidence,
            "retriever": "lexical",
            "rescued": retrieval.rescued,
            "ranked": stages.ranked_ids(ordered, retrieval.ranking.lexical, self.units),
        }
        if not retrieval.passed:
            closest = stages.closest_pages(ordered, self.units, self.pages)
            return stages.refusal_result(self.name, closest, common)
        units = [self.units[u] for u in ordered[: stages.ANSWER_UNITS]]
        return stages.passages_result(request.question, units, common)


# --- The worker's entry points -----------------------------------------------------------

_site: StaticSite | None = None


def check(question: str) -> dict[str, Any]:
    """The credential check alone, for the widget before it sends anything anywhere:
    ``{"credential": {kind, label, markdown, start, end}}`` or ``{"credential": None}``."""
    found = find_credential(question)
    if found is None:
        return {"credential": None}
    return {
        "credential": {
            "kind": found.kind,
            "label": found.label,
            "markdown": credential_reply(found),
            "blocks": trusted_blocks(credential_reply(found)),
            "start": found.start,
            "end": found.end,
        }
    }


def load_static(data: str | bytes, prefix: str = "/", where: str = STATIC_NAME) -> None:
    """Decode the static index (the text or bytes of ``docpilot/static.json``) for
    ``ask_static``. ``prefix`` is the site's URL path, for the reader's ``page``."""
    global _site
    try:
        decoded = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise StaticIndexError(
            f"{where}: not a static index ({exc.__class__.__name__}); static mode reads "
            f"docpilot/{STATIC_NAME}, not the msgpack bundle"
        ) from None
    if not isinstance(decoded, dict):
        raise StaticIndexError(f"{where}: expected a JSON object at the top level")
    _site = StaticSite(decoded, where, prefix)


def ask_static(request_json: str) -> str:
    """One turn in static mode. Takes the JSON body of ``POST /api/ask``; returns the
    result object as JSON, or ``{"error": {field, message, limit?}}`` for a request the
    server would refuse with 400."""
    if _site is None:
        raise RuntimeError("static mode: load_static() has not loaded an index yet")
    try:
        try:
            body = json.loads(request_json)
        except (ValueError, RecursionError):
            raise RequestError("body", "is not valid JSON") from None
        request = parse_ask_request(body, Limits())
    except RequestError as exc:
        return json.dumps(exc.to_dict(), ensure_ascii=False)
    return json.dumps(_site.ask(request).to_dict(), ensure_ascii=False)
