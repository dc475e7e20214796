"""One provider's attempt at a turn: the primed call, the tool loop, and reading the answer.

The gate's excerpts go into the first message, so most turns need one call. Each step's
prompt is the previous step's prompt plus the new results at the end (observations are
appended, never rewritten), which keeps a provider's prefix cache valid across steps.

A reply is read the way real models write (`replies`): the `answer` call, or the same
call written as text, or a JSON answer, or prose. Its text is validated on the stream
(`stream`); an answer that cites nothing inline is checked against the excerpts
(`check.support`) and shown, tentative and whole, only when they hold its content. A
prompt too long for the model's context is tried once more with half the excerpts.
"""

from __future__ import annotations

import asyncio
import logging
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from docpilot_runtime.answer.actions import validate_actions
from docpilot_runtime.answer.job import Answer, AnswerJob, NoAnswer, Uncited
from docpilot_runtime.answer.profiles import (
    Profile,
    compact_first_message,
    complete_sentences,
    excerpt_window,
)
from docpilot_runtime.answer.prompt import first_message
from docpilot_runtime.answer.replies import (
    declines,
    degenerate,
    json_answer,
    only_declines,
    text_tool_calls,
)
from docpilot_runtime.answer.spend import complete_within
from docpilot_runtime.answer.stream import ReplyStream
from docpilot_runtime.answer.tools import TurnTools
from docpilot_runtime.check.markdown_parse import Hooks, parse, to_tree
from docpilot_runtime.check.support import Excerpt as SupportExcerpt
from docpilot_runtime.check.support import attach, reattach, verify
from docpilot_runtime.check.validate import StreamValidator, ValidatedAnswer, validate_answer
from docpilot_runtime.providers import Message, ModelReply, Provider, ProviderError, ToolCall, Usage
from docpilot_runtime.providers.messages import STOP_MAX_TOKENS
from docpilot_runtime.providers.pricing import cost_micro_usd
from docpilot_runtime.shared.markdown_tree import text_of

log = logging.getLogger("docpilot.answer")

SUMMARY_CHARS = 600
LAST_STEP_NOTE = "\n\n(This was the last tool step: call the answer tool now.)"


class ProviderRun:
    """One provider's attempt at the turn."""

    def __init__(self, provider: Provider, job: AnswerJob) -> None:
        self.provider = provider
        self.job = job
        self.framing = job.framing
        self.retrieval = job.retrieval
        self.site = job.retrieval.site
        self.settings = job.settings
        self.profile = Profile(provider.settings)
        actions = [str(a.get("name")) for a in self.site.bundle.actions]
        self.system = self.profile.system(self.site.name, actions)
        self.usage = Usage()
        self.cost = 0
        self.steps = 0
        self.excerpt_count = provider.settings.excerpt_count
        self._prime(self.excerpt_count)

    def _prime(self, count: int) -> None:
        """The first message with the best ``count`` excerpts (emitted afresh)."""
        self.excerpt_count = count
        self.tools = TurnTools(self.site, self.job.http)
        rows = self.retrieval.model_order()[:count]
        job = self.job
        if self.profile.compact:
            shown = []
            for row in rows:
                unit = self.site.bundle.units[row]
                window = excerpt_window(unit.text, job.question)
                title, text, _ = self.tools.emit(row, window)
                shown.append((title, text))
            self.numbered = [self.site.bundle.units[row].id for row in rows]
            first = compact_first_message(job.question, shown, job.earlier)
        else:
            self.numbered = []
            first = first_message(job.question, self.tools.excerpts(rows), job.memory, job.page)
        self.messages: list[Message] = [Message(role="user", content=first)]

    async def run(self) -> Answer:
        retried = False
        while True:
            try:
                return await self._steps()
            except ProviderError as exc:
                self._account(exc.usage)
                if exc.context_overflow and not retried and self.excerpt_count > 1:
                    retried = True
                    fewer = self.excerpt_count // 2
                    log.warning(
                        "provider %s: the prompt does not fit the model's context; trying "
                        "once more with %d excerpts instead of %d",
                        self.provider.name, fewer, self.excerpt_count,
                    )
                    self._prime(fewer)
                    continue
                raise

    def _account(self, usage: Usage) -> None:
        self.usage = self.usage + usage
        self.cost += cost_micro_usd(self.provider.model, usage)  # per call: price tiers

    def _validator(self, numbered: Sequence[str] = ()) -> StreamValidator:
        return StreamValidator(
            self.tools.emitted,
            self.site.bundle.pages,
            self.settings.max_answer_chars,
            self.tools.external_urls,
            numbered,
        )

    async def _steps(self) -> Answer:
        specs = self.tools.specs()
        for number in range(self.settings.max_steps):
            self.steps += 1
            last = number == self.settings.max_steps - 1
            step = self.profile.step(specs, number, last)
            stream = ReplyStream(
                self._validator(self.numbered if self.profile.compact else ()),
                self._validator(self.numbered) if self.profile.streams_prose else None,
                self.job.emit_delta,
                self.profile.json_key,
                self._grounded_so_far if self.profile.compact else None,
            )
            reply = await complete_within(
                self.job.spend, self.provider, self.system, self.messages, step.tools,
                stream.on_delta, None, step.options,
            )
            self._account(reply.usage)
            log.debug(
                "provider %s replied (%s, %d tool calls): %r",
                self.provider.name, reply.stop_reason, len(reply.tool_calls), reply.text[:4000],
            )
            cut = reply.stop_reason == STOP_MAX_TOKENS
            if cut:
                log.warning(
                    "provider %s: the reply was cut at max_tokens (%d; finish_reason "
                    "length, %d output tokens)",
                    self.provider.name, self.provider.settings.max_tokens,
                    reply.usage.output_tokens,
                )
            calls, prose = self._calls(reply, {spec.name for spec in step.tools})
            answers = [c for c in calls if c.name == "answer"]
            if answers:
                await stream.finish("call")
                return await asyncio.to_thread(self._from_call, answers[0], stream, cut)
            if calls:
                final = number == self.settings.max_steps - 2  # the next call is the last
                await self._run_tools(reply, calls, prose, final)
                continue
            wrapped = json_answer(reply.text)
            if wrapped is not None:
                await stream.finish("call")
                return await asyncio.to_thread(self._from_json, wrapped, stream)
            if reply.text.strip():
                await stream.finish("prose")
                return await asyncio.to_thread(self._from_prose, reply.text, stream, cut)
            raise NoAnswer("the reply was cut at max_tokens" if cut else "the reply was empty")
        raise NoAnswer(f"no answer within {self.settings.max_steps} steps (max_steps)")

    def _calls(self, reply: ModelReply, names: set[str]) -> tuple[list[ToolCall], str]:
        """The reply's tool calls (its own, or those it wrote as text) and its prose."""
        if reply.tool_calls:
            return list(reply.tool_calls), reply.text
        found = text_tool_calls(reply.text, names | {"answer"})
        if found.calls:
            log.info(
                "provider %s wrote %d tool call(s) as text: %s",
                self.provider.name, len(found.calls), ", ".join(c.name for c in found.calls),
            )
        return list(found.calls), found.rest

    async def _run_tools(
        self, reply: ModelReply, calls: list[ToolCall], prose: str, last: bool
    ) -> None:
        if reply.tool_calls:
            self.messages.append(reply.to_message())  # keeps the vendor's blocks verbatim
        else:  # calls written as text: replayed as the calls they meant
            self.messages.append(Message(role="assistant", content=prose, tool_calls=tuple(calls)))
        for i, call in enumerate(calls):
            await self._announce(call)
            observation = await self.tools.run(call)
            if last and i == len(calls) - 1:
                observation += LAST_STEP_NOTE
            self.messages.append(Message(role="tool", content=observation, tool_call_id=call.id))

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
        await self.job.progress("tools", {"message": message})

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

    # -- reading the answer

    def _from_call(self, call: ToolCall, stream: ReplyStream, cut: bool) -> Answer:
        args = call.arguments
        if args is None:
            raise NoAnswer(
                "the answer call was cut at max_tokens (its arguments are not complete JSON)"
                if cut
                else "the answer call's arguments are not valid JSON"
            )
        if not isinstance(args.get("markdown"), str):
            raise NoAnswer("the answer call carried no markdown")
        listed = args.get("citations")
        listed_ids = [c for c in listed if isinstance(c, str)] if isinstance(listed, list) else []
        confidence = _int_or_none(args.get("confidence"))
        if stream.call_stream.cited and stream.owner != "prose":
            validated = stream.call_stream.result(listed_ids)
        else:
            # [n] markers name the n-th listed id (or the n-th numbered excerpt), checked
            # exactly like [[ID]] markers (the stream could not know the list before).
            validated = self._validate(args["markdown"], listed_ids or self.numbered)
        answer = self._settle(args["markdown"], validated, listed_ids, confidence)
        answer.summary = plain_summary(args.get("summary"))
        answer.actions = validate_actions(args.get("actions"), self.site.bundle.actions)
        return answer

    def _from_json(self, data: dict[str, Any], stream: ReplyStream) -> Answer:
        text = data.get("answer", data.get("markdown"))
        assert isinstance(text, str)  # json_answer checked it
        sources = data.get("sources", data.get("cited", data.get("citations")))
        listed: list[str] = []
        for item in sources if isinstance(sources, list) else []:
            if isinstance(item, str):
                listed.append(item)
            elif isinstance(item, int) and 1 <= item <= len(self.numbered):
                listed.append(self.numbered[item - 1])
        if stream.call_stream.cited:
            validated = stream.call_stream.result()
        else:
            validated = self._validate(text, self.numbered)
        return self._settle(text, validated, listed, None)

    def _from_prose(self, text: str, stream: ReplyStream, cut: bool) -> Answer:
        if cut:
            text = complete_sentences(text)
            if not text:
                raise NoAnswer("the reply was cut at max_tokens before its first sentence ended")
        prose = stream.prose_stream
        if prose is not None and prose.cited and not cut:
            validated = prose.result()
        else:
            validated = self._validate(text, self.numbered)
        answer = self._settle(text, validated, [], None)
        answer.tentative = answer.tentative or cut
        return answer

    def _validate(self, text: str, numbered: Sequence[str]) -> ValidatedAnswer:
        return validate_answer(
            text,
            self.tools.emitted,
            self.site.bundle.pages,
            self.settings.max_answer_chars,
            self.tools.external_urls,
            numbered,
        )

    def _settle(
        self, raw: str, validated: ValidatedAnswer, listed: list[str], confidence: int | None
    ) -> Answer:
        """The answer from validated text: refused when it is degenerate or a decline, or
        when it cites nothing and the support check finds no excerpt holding it."""
        rules = "\n".join(self.system)
        problem = degenerate(raw, rules)
        if problem:
            raise NoAnswer(f"the answer was not usable: {problem}")
        if only_declines(raw):
            raise Uncited("the model said the excerpts do not answer it", confidence)
        cited_by = "markers"
        if not validated.citations:
            if declines(raw):
                raise Uncited("the model said the excerpts do not answer it", confidence)
            validated = self._attached(validated, listed, confidence)
            cited_by = "check"
        elif self.profile.compact:
            # A small model cites whatever it writes: each of its claims must be held by an
            # excerpt (its own cited one first), and is cited to the one that holds it.
            cited = {c.n: c.id for c in validated.citations}
            verified = verify(validated.markdown, cited, self._shown(), self.job.question)
            if verified.markdown is None:
                raise Uncited(f"a cited claim is in no excerpt ({verified.why})", confidence)
            checked = self._validate(verified.markdown, ())
            if not checked.citations:
                raise Uncited("no citation survived the check", confidence)
            checked.dropped_citations = validated.dropped_citations
            checked.delinked = validated.delinked
            validated = checked
            cited_by = "markers, re-attached" if verified.moved else "markers"
        else:
            mended = self._reattached(validated)
            if mended is not None:
                validated, cited_by = mended, "markers, re-attached"
        tentative = cited_by == "check" or (
            confidence is not None and confidence < self.settings.tentative_below
        )
        return Answer(
            markdown=validated.markdown,
            blocks=validated.blocks,
            citations=validated.citations,
            summary="",
            model_confidence=confidence,
            actions=[],
            tentative=tentative,
            usage=self.usage_record(),
            dropped_citations=validated.dropped_citations,
            delinked=validated.delinked,
            cited_by=cited_by,
        )

    def _shown(self) -> list[SupportExcerpt]:
        return self._excerpts(list(self.tools.shown))

    def _grounded_so_far(self, text: str) -> bool:
        """Whether the complete sentences streamed so far pass `verify` (the compact
        profile's stream is held until they do: they would not be shown at the end)."""
        done = complete_sentences(text)
        if not done:
            return True
        cited = dict(enumerate(self.numbered, start=1))
        return verify(done, cited, self._shown(), self.job.question).markdown is not None

    def _excerpts(self, ids: Sequence[str]) -> list[SupportExcerpt]:
        shown = self.tools.shown
        return [SupportExcerpt(cid, shown[cid]) for cid in ids if cid in shown]

    def _reattached(self, validated: ValidatedAnswer) -> ValidatedAnswer | None:
        """The cited answer with each claim whose cited excerpt does not hold it cited to
        the excerpt that does (None when there was nothing to mend)."""
        cited = {c.n: c.id for c in validated.citations}
        mended = reattach(validated.markdown, cited, self._shown(), self.job.question)
        if mended is None:
            return None
        checked = self._validate(mended, ())
        if not checked.citations:
            return None
        checked.dropped_citations = validated.dropped_citations
        checked.delinked = validated.delinked
        return checked

    def _attached(
        self, validated: ValidatedAnswer, listed: list[str], confidence: int | None
    ) -> ValidatedAnswer:
        """The uncited answer with the excerpts that hold its content cited, checked
        against the ids it listed (all this turn showed when it listed none valid)."""
        shown = self.tools.shown
        candidates = [cid for cid in dict.fromkeys(listed) if cid in shown] or list(shown)
        attached = attach(validated.markdown, self._excerpts(candidates), self.job.question)
        if attached.markdown is None:
            why = attached.unsupported[0].why if attached.unsupported else "it claims nothing"
            raise Uncited(
                f"no citation, and the excerpts do not hold its content ({why})", confidence
            )
        checked = self._validate(attached.markdown, ())
        if not checked.citations:
            raise Uncited("no citation survived the check", confidence)
        return checked


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
