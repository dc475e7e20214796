"""Stages 4-6: the primed model call, the tool loop, validation, and the answer ladder.

The gate's excerpts go into the first message, so most turns need one call. Each step's
prompt is the previous step's prompt plus the new results at the end (observations are
appended, never rewritten), which keeps a provider's prefix cache valid across steps.
The answer streams to the reader through the validator: citation markers are checked
and renumbered and links checked as the tokens arrive, and nothing is shown before the
first valid citation. When a provider times out, fails, sends malformed output or never
calls `answer`, the next one is asked; when none answers, the caller settles the turn
as `passages`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from docpilot_runtime.answer.actions import validate_actions
from docpilot_runtime.answer.prompt import PLATFORM_RULES, first_message, site_profile
from docpilot_runtime.answer.spend import SpendCapReached, SpendGate, complete_within
from docpilot_runtime.answer.tools import TurnTools
from docpilot_runtime.check.markdown_parse import Hooks, parse, to_tree
from docpilot_runtime.check.validate import Piece, StreamValidator, validate_answer
from docpilot_runtime.providers import Message, Provider, ProviderError, ToolCall, Usage
from docpilot_runtime.providers.pricing import cost_micro_usd
from docpilot_runtime.retrieve.site import Retrieval
from docpilot_runtime.settings.answer import AnswerSettings
from docpilot_runtime.shared.framing import ENGLISH, Framing
from docpilot_runtime.shared.markdown_tree import text_of
from docpilot_runtime.shared.types import Citation

log = logging.getLogger("docpilot.answer")

Progress = Callable[[str, dict[str, Any]], Awaitable[None]]
PRIMED_UNITS = 6
SUMMARY_CHARS = 600
LAST_STEP_NOTE = "\n\n(This was the last tool step: call the answer tool now.)"


class NoAnswer(Exception):
    """The provider finished without a usable `answer` call."""


@dataclass
class Answer:
    """What a provider's validated `answer` call contributes to the result."""

    markdown: str
    blocks: list[Any]
    citations: list[Citation]
    summary: str
    model_confidence: int | None
    actions: list[dict[str, Any]]
    tentative: bool
    usage: dict[str, Any]
    dropped_citations: list[str] = field(default_factory=list)


class MarkdownField:
    """Pulls the `markdown` string out of the answer call's argument JSON as it streams,
    so the answer text can be validated and shown before the call is complete. Each
    character is decoded once (linear in the answer's length)."""

    def __init__(self) -> None:
        self.raw = ""
        self.start: int | None = None
        self.pos = 0  # where in raw the next undecoded character of the string is
        self.closed = False

    def feed(self, chunk: str) -> str:
        self.raw += chunk
        if self.closed:
            return ""
        if self.start is None:
            key = self.raw.find('"markdown"')
            if key < 0:
                return ""
            colon = self.raw.find(":", key + 10)
            quote = self.raw.find('"', colon + 1) if colon >= 0 else -1
            if quote < 0:
                return ""
            self.start = self.pos = quote + 1
        end = self._complete(self.pos)
        piece, self.pos = self.raw[self.pos : end], end
        try:
            return str(json.loads('"' + piece + '"'))
        except ValueError:
            return ""

    def _complete(self, i: int) -> int:
        """The end of the string's complete characters from ``i`` (an escape is taken
        whole, a surrogate pair's halves together); sets `closed` at the closing quote."""
        body = self.raw
        end = i
        while i < len(body):
            c = body[i]
            if c == "\\":
                need = 6 if body[i + 1 : i + 2] == "u" else 2
                if i + need > len(body):
                    break
                if need == 6 and "\\ud800" <= body[i : i + 6].lower() <= "\\udbff":
                    if i + 12 > len(body):
                        break  # a high surrogate waits for its low half
                    i += 6
                i += need
                end = i
                continue
            if c == '"':
                self.closed = True
                break
            i += 1
            end = i
        return end


def plain_summary(value: Any) -> str:
    """The model's summary as plain text: its CommonMark reading without any markup,
    links, images or HTML (a tag is text, then its angle brackets go), one line,
    at most SUMMARY_CHARS characters."""
    if not isinstance(value, str):
        return ""
    hooks = Hooks(text=lambda run: [run], code=lambda code: code, link=lambda _h, _a: None)
    flat = text_of(to_tree(parse(value[: SUMMARY_CHARS * 4]), hooks))
    flat = _bounded_line(flat.replace("<", " ").replace(">", " "), SUMMARY_CHARS)
    return flat


def _bounded_line(value: str, limit: int) -> str:
    """One line of printable text within ``limit`` characters (control, format and
    private-use characters removed, whitespace collapsed)."""
    kept = "".join(
        ch if not unicodedata.category(ch).startswith("C") else " " for ch in value[: limit * 4]
    )
    kept = re.sub(r"\s+", " ", kept).strip()
    return kept if len(kept) <= limit else kept[: limit - 1].rstrip() + "…"


def _fill(template: str, slot: str, text: str) -> str:
    """``template`` with ``slot`` replaced by ``text`` once (a brace in the text stays)."""
    before, _, after = template.partition(slot)
    return before + text + after


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(min(max(value, 0), 100))


@dataclass(frozen=True)
class AnswerJob:
    """What every provider on the ladder is asked: the turn's retrieval and words, where
    validated text and progress go, and the limits that bound the answer."""

    retrieval: Retrieval
    question: str
    memory: str
    page: str | None
    settings: AnswerSettings
    http: httpx.AsyncClient | None
    emit_delta: Callable[[Piece], Awaitable[None]]
    progress: Progress
    framing: Framing = ENGLISH
    spend: SpendGate | None = None  # each call holds its estimate of the day's spend


class ProviderRun:
    """One provider's attempt at the turn."""

    def __init__(self, provider: Provider, job: AnswerJob) -> None:
        self.provider = provider
        self.framing = job.framing
        self.retrieval = job.retrieval
        self.site = job.retrieval.site
        self.settings = job.settings
        self.tools = TurnTools(self.site, job.http)
        self.emit_delta = job.emit_delta
        self.progress = job.progress
        self.spend = job.spend
        actions = [str(a.get("name")) for a in self.site.bundle.actions]
        self.system = [PLATFORM_RULES, site_profile(self.site.name, actions)]
        rows = self.retrieval.model_order()[:PRIMED_UNITS]
        excerpts = self.tools.excerpts(rows)
        first = first_message(job.question, excerpts, job.memory, job.page)
        self.messages: list[Message] = [Message(role="user", content=first)]
        self.usage = Usage()
        self.cost = 0
        self.steps = 0

    async def run(self) -> Answer:
        specs = self.tools.specs()
        for step in range(self.settings.max_steps):
            self.steps = step + 1
            stream = StreamValidator(
                self.tools.emitted,
                self.site.bundle.pages,
                self.settings.max_answer_chars,
                self.tools.external_urls,
            )
            field_ = MarkdownField()

            async def on_delta(
                kind: str,
                text: str,
                stream: StreamValidator = stream,
                field_: MarkdownField = field_,
            ) -> None:
                if kind == "tool:answer":
                    # Off the event loop: other requests are served while it validates.
                    shown = await asyncio.to_thread(stream.feed, field_.feed(text))
                    if shown is not None:
                        await self.emit_delta(shown)

            reply = await complete_within(
                self.spend, self.provider, self.system, self.messages, specs, on_delta
            )
            self.usage = self.usage + reply.usage
            self.cost += cost_micro_usd(self.provider.model, reply.usage)  # per call: tiers
            answers = [c for c in reply.tool_calls if c.name == "answer"]
            if answers:
                rest = await asyncio.to_thread(stream.finish)
                if rest is not None:
                    await self.emit_delta(rest)
                return await asyncio.to_thread(self._finish, answers[0], stream)
            if not reply.tool_calls:
                raise NoAnswer("the model replied without calling answer")
            self.messages.append(reply.to_message())  # keeps the vendor's blocks verbatim
            last = step == self.settings.max_steps - 2  # the next call is the final one
            for i, call in enumerate(reply.tool_calls):
                await self._announce(call)
                observation = await self.tools.run(call)
                if last and i == len(reply.tool_calls) - 1:
                    observation += LAST_STEP_NOTE
                self.messages.append(
                    Message(role="tool", content=observation, tool_call_id=call.id)
                )
        raise NoAnswer(f"no answer within {self.settings.max_steps} steps")

    async def _announce(self, call: ToolCall) -> None:
        args = call.arguments or {}
        # Built by us from the site's own words: no text the model wrote (its search query
        # could repeat an injected page), and a tool the site does not declare is never named.
        words = self.framing
        if call.name == "search_docs":
            message = words.searching
        elif call.name in ("fetch_section", "expand_section"):
            row = self.site.unit_rows.get(str(args.get("id", "")))
            if row is None:
                message = words.searching
            else:
                message = _fill(words.reading, "{title}", self.site.bundle.units[row].title)
        elif call.name == "list_pages":
            message = words.listing
        elif call.name in self.tools.site_tools:
            message = _fill(words.site_tool, "{tool}", _bounded_line(call.name, 40))
        else:
            message = words.tool
        await self.progress("tools", {"message": message})

    def usage_record(self) -> dict[str, Any]:
        return {
            "provider": self.provider.kind,
            "model": self.provider.model,
            "steps": self.steps,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cache_read_tokens": self.usage.cache_read_tokens,
            "cache_write_tokens": self.usage.cache_write_tokens,
            "cost_micro_usd": self.cost,
        }

    def _finish(self, call: ToolCall, stream: StreamValidator) -> Answer:
        args = call.arguments
        if args is None or not isinstance(args.get("markdown"), str):
            raise NoAnswer("the answer call carried no markdown")
        listed = args.get("citations")
        listed_ids = [c for c in listed if isinstance(c, str)] if isinstance(listed, list) else []
        if stream.cited:  # [[ID]] markers: the streamed reading is the answer
            validated = stream.result(listed_ids)
        else:
            # No [[ID]] marker: [n] markers name the n-th listed id, checked exactly like
            # [[ID]] markers (the stream could not know the list before the call ended).
            validated = validate_answer(
                args["markdown"],
                self.tools.emitted,
                self.site.bundle.pages,
                self.settings.max_answer_chars,
                self.tools.external_urls,
                listed_ids,
            )
        confidence = _int_or_none(args.get("confidence"))
        return Answer(
            markdown=validated.markdown,
            blocks=validated.blocks,
            citations=validated.citations,
            summary=plain_summary(args.get("summary")),
            model_confidence=confidence,
            actions=validate_actions(args.get("actions"), self.site.bundle.actions),
            tentative=confidence is not None and confidence < self.settings.tentative_below,
            usage=self.usage_record(),
            dropped_citations=validated.dropped_citations,
        )


async def ask_providers(providers: Sequence[Provider], job: AnswerJob) -> Answer | None:
    """The answer ladder: each provider in order until one answers; None if none did,
    or if `settings.turn_deadline` passed first (the provider being asked is abandoned)."""
    loop = asyncio.get_running_loop()
    settings = job.settings
    deadline = loop.time() + settings.turn_deadline
    for provider in providers:
        run = ProviderRun(provider, job)
        try:
            async with asyncio.timeout_at(deadline):
                return await run.run()
        except TimeoutError:
            log.warning(
                "provider %s:%s still answering at the turn deadline (%gs, turn_deadline); "
                "settling as passages",
                provider.kind,
                provider.model,
                settings.turn_deadline,
            )
            return None
        except SpendCapReached:
            return None  # no provider may be called: the caller settles as passages
        except (ProviderError, NoAnswer, httpx.HTTPError) as exc:
            log.warning(
                "provider %s:%s gave no answer (%s); next on the ladder",
                provider.kind,
                provider.model,
                exc.__class__.__name__,
            )
            await job.progress("answer", {"message": job.framing.another_model})
    return None
