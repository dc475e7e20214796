"""What the widget's Pyodide worker calls: the credential check, and static mode.

Static mode answers with no server at all: the turn core (``retrieval``) over the
pure-Python BM25+ scorer, with no model, so a turn is the server's lexical mode
exactly (``tests/browser/test_static_assets.py`` holds the two equal over the whole dev set).

Pure Python, and neither numpy nor msgpack: static mode reads ``docpilot/static.json``,
the bundle minus its vectors as JSON (``bundle.encode_static``, written at build
time). Measured in Pyodide under Node (``tools/pyodide/measure-decode.mjs``), turning
the bytes into a searchable index takes the same time either way, within noise, whether
msgpack's Pyodide wheel decodes the whole bundle or ``json`` decodes this file; loading
that wheel costs 0.2-0.5 s more, and shipping it would need PyPI at build time: so the
browser loads Pyodide's core files and our own wheel, nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from docpilot_runtime.bundle.read import decode_static
from docpilot_runtime.bundle.schema import STATIC_NAME
from docpilot_runtime.bundle.shards import MANIFEST_NAME
from docpilot_runtime.reply.results import ask_without_model
from docpilot_runtime.retrieve.lexical import LexicalIndex
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.sharded import Need, ShardedSite, sharded_site
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.screen.credentials import carries_credential, credential_reply, screen_request
from docpilot_runtime.shared.framing import framing_for
from docpilot_runtime.shared.markdown_tree import trusted_blocks
from docpilot_runtime.shared.types import AskRequest, Limits, RequestError, parse_ask_request

_site: Site | None = None


def check(
    question: str,
    quote: str | None = None,
    history_json: str = "[]",
    page: str | None = None,
    lang: str | None = None,
) -> dict[str, Any]:
    """The credential check alone, for the widget before it sends anything anywhere.

    Takes what the widget is about to send (the history as the JSON list of its items) and
    returns ``{"credential": {kind, label, markdown, start, end, field} | None, "dropped":
    [...]}``: a hit in the question or the quote (``field`` says which) stops the turn; a
    hit in the page or a history item names it in ``dropped`` ("page", "history[2]"), and
    the widget sends the turn without it, as `credentials.screen_request` does."""
    items = json.loads(history_json)
    if not isinstance(items, list):
        raise ValueError("check: history must be a JSON list")
    screened = screen_request(AskRequest(question=question, quote=quote or None, page=page))
    dropped = list(screened.dropped)
    dropped += [
        f"history[{i}]"
        for i, item in enumerate(items)
        if carries_credential(item.values() if isinstance(item, dict) else [item])
    ]
    found = screened.credential
    if found is None:
        return {"credential": None, "dropped": dropped}
    reply = credential_reply(found, framing_for(lang))
    return {
        "credential": {
            "kind": found.kind,
            "label": found.label,
            "markdown": reply,
            "blocks": trusted_blocks(reply),
            "start": found.start,
            "end": found.end,
            "field": screened.field,
        },
        "dropped": dropped,
    }


def static_site(data: str | bytes, prefix: str = "/", where: str = STATIC_NAME) -> Site:
    """The static index as the turn core's Site, over the pure-Python scorer."""
    bundle = decode_static(data, where)
    searcher = Searcher(LexicalIndex(bundle.lexical), units=bundle.units)
    return Site(prefix=prefix, bundle=bundle, searcher=searcher)


def load_static(data: str | bytes, prefix: str = "/", where: str = STATIC_NAME) -> None:
    """Decode the static index (the text or bytes of ``docpilot/static.json``) for
    ``ask_static``. ``prefix`` is the site's URL path, for the reader's ``page``.
    Raises BundleError naming the file and the field."""
    global _site
    _site = static_site(data, prefix, where)


_sharded: ShardedSite | None = None


def load_manifest(text: str | bytes, prefix: str = "/", where: str = MANIFEST_NAME) -> None:
    """Read the sharded static index's manifest (``docpilot/static/manifest.json``) for
    ``ask_sharded``; its other files are added as turns ask for them (``add_file``)."""
    global _sharded
    _sharded = sharded_site(text, prefix, where)


def add_file(name: str, data: Any) -> None:
    """A file ``ask_sharded`` asked for: its path under ``static/`` and its bytes (a
    JavaScript Uint8Array arrives as a buffer proxy)."""
    if _sharded is None:
        raise RuntimeError("static mode: load_manifest() has not read a manifest yet")
    to_bytes = getattr(data, "to_bytes", None)
    _sharded.add(name, to_bytes() if to_bytes is not None else bytes(data))


def ask_sharded(request_json: str, max_question_chars: int | None = None) -> str:
    """``ask_static`` over the sharded index: the result as JSON, or ``{"need": [paths]}``
    when files are missing (fetch them, `add_file` each, and ask again)."""
    if _sharded is None:
        raise RuntimeError("static mode: load_manifest() has not read a manifest yet")
    site = _sharded
    try:
        request = _request(request_json, max_question_chars)
    except RequestError as exc:
        return json.dumps(exc.to_dict(), ensure_ascii=False)
    try:
        result = site.run(request, lambda: ask_without_model(site, request))
    except Need as need:
        return json.dumps({"need": list(need.names)})
    return json.dumps(result.to_dict(), ensure_ascii=False)


def _request(request_json: str, max_question_chars: int | None) -> AskRequest:
    try:
        body = json.loads(request_json)
    except (ValueError, RecursionError):
        raise RequestError("body", "is not valid JSON") from None
    limits = Limits(max_question_chars=max_question_chars) if max_question_chars else Limits()
    return parse_ask_request(body, limits)


def ask_static(request_json: str, max_question_chars: int | None = None) -> str:
    """One turn in static mode. Takes the JSON body of ``POST /api/ask`` (and the owner's
    ``max_question_chars``, the widget's option, when it is not the default); returns the
    result object as JSON, or ``{"error": {field, message, limit?}}`` for a request the
    server would refuse with 400."""
    if _site is None:
        raise RuntimeError("static mode: load_static() has not loaded an index yet")
    try:
        request = _request(request_json, max_question_chars)
    except RequestError as exc:
        return json.dumps(exc.to_dict(), ensure_ascii=False)
    return json.dumps(ask_without_model(_site, request).to_dict(), ensure_ascii=False)
