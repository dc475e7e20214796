"""The shapes that cross the runtime's edges, named once: requests, results, events.

Pure Python (dataclasses only), shared by the server, the CLI and the browser core.
The result object is the contract in DESIGN.md: `docpilot ask --json`, the JSON body of
`POST /api/ask` and the SSE `answer` event all carry exactly `Result.to_dict()`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from docpilot_runtime.shared.framing import LANG_TAG, MAX_LANG_CHARS

Kind = Literal["answer", "refusal", "passages", "social", "credential"]
Retriever = Literal["hybrid", "lexical"]
# Why a turn that would have gone to a model settled without a model's answer: as
# `passages` (the day's spend reached, every provider failed, the turn deadline passed),
# or as a `refusal` after a model answered with nothing citable.
FallbackReason = Literal["spend_cap", "models_failed", "turn_deadline", "uncited"]
HISTORY_KINDS = ("answer", "refusal", "passages", "social", "credential")
# Kinds of an earlier turn that answered: they anchor a follow-up and its memory.
COMPLETED_KINDS = ("answer", "passages")


@dataclass(frozen=True)
class Citation:
    n: int
    id: str
    url: str  # "" for a site tool's reply: it has no page
    title: str
    page_title: str = ""  # the cited section's page ("" for a site tool's reply)
    excerpt: str = ""  # the section's opening words, a preview (EXCERPT_CHARS at most)


@dataclass(frozen=True)
class PageRef:
    url: str
    title: str


@dataclass(frozen=True)
class TurnBasis:
    """What every result of a turn carries: its id and bundle from the start, the
    retrieval's verdict (stage 3) once there is one (an opening ends the turn before)."""

    turn_id: str
    bundle_hash: str
    confidence: int | None = None
    retriever: Retriever | None = None
    rescued: bool = False
    ranked: tuple[str, ...] = ()


@dataclass
class Result:
    turn_id: str
    kind: Kind
    markdown: str
    bundle_hash: str
    citations: list[Citation] = field(default_factory=list)
    closest: list[PageRef] = field(default_factory=list)
    tentative: bool = False
    confidence: int | None = None
    model_confidence: int | None = None
    retriever: Retriever | None = None
    rescued: bool = False
    ranked: list[str] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    credential_kind: str | None = None
    usage: dict[str, Any] | None = None
    fallback_reason: FallbackReason | None = None
    # What stage 6 did to a model's answer: "cited_by" ("markers": the model cited
    # inline; "check": the support check attached the excerpts holding its content),
    # "ids_stripped" (cited ids this turn never handed out), "links_delinked".
    checks: dict[str, Any] | None = None
    # The element tree the widget draws (markdown_tree); texts we or the owner wrote get
    # theirs from `trusted_blocks` when the builder gave none.
    blocks: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.blocks and self.markdown:
            from docpilot_runtime.shared.markdown_tree import trusted_blocks

            self.blocks = trusted_blocks(self.markdown)

    @classmethod
    def of(
        cls,
        kind: Kind,
        markdown: str,
        basis: TurnBasis,
        *,
        blocks: list[Any] | None = None,
        citations: list[Citation] | None = None,
        closest: list[PageRef] | None = None,
        tentative: bool = False,
        model_confidence: int | None = None,
        actions: list[dict[str, Any]] | None = None,
        summary: str = "",
        credential_kind: str | None = None,
        usage: dict[str, Any] | None = None,
        checks: dict[str, Any] | None = None,
    ) -> Result:
        """A turn's result: the basis's fields, then what this kind adds."""
        return cls(
            turn_id=basis.turn_id,
            kind=kind,
            markdown=markdown,
            bundle_hash=basis.bundle_hash,
            citations=citations or [],
            closest=closest or [],
            tentative=tentative,
            confidence=basis.confidence,
            model_confidence=model_confidence,
            retriever=basis.retriever,
            rescued=basis.rescued,
            ranked=list(basis.ranked),
            actions=actions or [],
            summary=summary,
            credential_kind=credential_kind,
            usage=usage,
            checks=checks,
            blocks=blocks or [],
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def public_dict(self, include_usage: bool) -> dict[str, Any]:
        """The result as anonymous HTTP callers get it: `usage` (provider, model, cost)
        only when the owner publishes it; records keep the full `to_dict()`."""
        data = self.to_dict()
        if not include_usage:
            data["usage"] = None
        return data


@dataclass(frozen=True)
class HistoryItem:
    """What the client kept of an earlier turn; the server validates and clamps it."""

    question: str
    kind: str
    markdown: str = ""
    summary: str | None = None
    rescued: bool = False
    quote: str | None = None


@dataclass(frozen=True)
class AskRequest:
    question: str
    history: tuple[HistoryItem, ...] = ()
    page: str | None = None
    quote: str | None = None
    consent: bool = False  # the reader accepted records (owners may require it)
    lang: str | None = None  # the page's language (BCP 47): the runtime's own words follow it


@dataclass(frozen=True)
class Limits:
    max_question_chars: int = 2000
    max_body_bytes: int = 65536
    max_history_items: int = 20
    max_history_chars: int = 20000  # per item's markdown; clamped further by memory rules
    max_quote_chars: int = 2000


class RequestError(ValueError):
    """A request the runtime refuses, naming the field and, where one applies, the limit."""

    def __init__(self, field: str, message: str, limit: int | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.limit = limit

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"field": self.field, "message": self.message}
        if self.limit is not None:
            error["limit"] = self.limit
        return {"error": error}


class OversizedNumber:
    """What the JSON decoder makes of an integer literal too long to convert: Python
    refuses (and would spend quadratic time) past a few thousand digits, so the value
    is kept as a marker and the field check names the field instead of a 500."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


MAX_INT_DIGITS = 100


def decode_int(literal: str) -> int | OversizedNumber:
    """`json.loads(parse_int=...)`: an int, or a marker past `MAX_INT_DIGITS` digits."""
    if len(literal.lstrip("-")) > MAX_INT_DIGITS:
        return OversizedNumber(len(literal))
    return int(literal)


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, OversizedNumber):
        return f"a {value.digits}-digit number"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else type(value).__name__


def check_text(value: str, where: str) -> str:
    """A decoded string that can be encoded again: JSON's ``\\ud800`` escapes decode to
    lone surrogates, which no UTF-8 log, model request or response can carry."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RequestError(
            where, f"has a lone surrogate (U+{ord(value[exc.start]):04X}) at character {exc.start}"
        ) from None
    return value


def _string(body: dict[str, Any], key: str, where: str, limit: int, required: bool) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise RequestError(where + key, "is required")
        return None
    if not isinstance(value, str):
        raise RequestError(where + key, f"must be a string, got {json_type(value)}")
    if len(value) > limit:
        raise RequestError(where + key, f"is {len(value)} characters, over the limit", limit)
    return check_text(value, where + key)


def _field_name(key: str) -> str:
    """An unknown key as an error may name it: bounded and encodable (it is echoed)."""
    text = key.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    return text if len(text) <= 64 else text[:64] + "..."


def parse_ask_request(body: Any, limits: Limits) -> AskRequest:
    """Check a decoded JSON body (or a `docpilot ask` JSON line) into an AskRequest."""
    if not isinstance(body, dict):
        raise RequestError("body", "must be a JSON object")
    unknown = set(body) - {"question", "history", "page", "quote", "consent", "lang"}
    if unknown:
        raise RequestError(_field_name(sorted(unknown)[0]), "is not a known field")
    question = _string(body, "question", "", limits.max_question_chars, required=True)
    assert question is not None
    if not question.strip():
        raise RequestError("question", "is empty")
    page = _string(body, "page", "", 2048, required=False)
    consent = body.get("consent")
    consent = False if consent is None else consent  # null counts as absent
    if not isinstance(consent, bool):
        raise RequestError("consent", "must be true or false")
    quote = _string(body, "quote", "", limits.max_quote_chars, required=False)
    lang = _string(body, "lang", "", MAX_LANG_CHARS, required=False)
    if lang and not LANG_TAG.fullmatch(lang):  # "" counts as absent
        raise RequestError("lang", 'must be a language tag such as "ja" or "pt-BR"')
    raw_history = body.get("history")
    raw_history = [] if raw_history is None else raw_history
    if not isinstance(raw_history, list):
        raise RequestError("history", f"must be a list, got {json_type(raw_history)}")
    if len(raw_history) > limits.max_history_items:
        raise RequestError(
            "history", f"has {len(raw_history)} items, over the limit", limits.max_history_items
        )
    history = []
    for i, item in enumerate(raw_history):
        where = f"history[{i}]."
        if not isinstance(item, dict):
            raise RequestError(f"history[{i}]", "must be an object")
        extra = set(item) - {"question", "kind", "markdown", "summary", "rescued", "quote"}
        if extra:
            raise RequestError(where + _field_name(sorted(extra)[0]), "is not a known field")
        kind = _string(item, "kind", where, 20, required=True)
        if kind not in HISTORY_KINDS:
            raise RequestError(where + "kind", f"must be one of {', '.join(HISTORY_KINDS)}")
        rescued = item.get("rescued", False)
        if not isinstance(rescued, bool):
            raise RequestError(where + "rescued", "must be true or false")
        history.append(
            HistoryItem(
                question=_string(item, "question", where, limits.max_question_chars, True) or "",
                kind=kind,
                markdown=_string(item, "markdown", where, limits.max_history_chars, False) or "",
                summary=_string(item, "summary", where, 2000, False),
                rescued=rescued,
                quote=_string(item, "quote", where, limits.max_quote_chars, False),
            )
        )
    return AskRequest(
        question=question,
        history=tuple(history),
        page=page,
        quote=quote,
        consent=consent,
        lang=lang or None,
    )
