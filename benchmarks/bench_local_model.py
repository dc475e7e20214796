"""How real small local models answer DocPilot-style questions, per prompt profile.

    .venv/bin/python benchmarks/bench_local_model.py --site /tmp/site          # the table
    .venv/bin/python benchmarks/bench_local_model.py --speed                   # tokens/s
    .venv/bin/python benchmarks/bench_local_model.py --smoke                   # CI smoke

The model runs in llama.cpp's own server (scripts/local-model.sh; installed from the
registry into the cache). Questions come from the TUNE half of example-site's dev set
only (answerable, near_miss, unrelated); the excerpts are the ones DocPilot's retrieval
ranks first for each question (`docpilot ask --json`'s `ranked`), whatever the gate
decides, so every question reaches the model. Profiles:

- ``primed``: what DocPilot sends today (prompt.py's rules and first message, six
  excerpts, the five tool schemas, tool_choice auto, no temperature: the server's 0.8).
- ``compact``: the question, three excerpts numbered [1]..[3], two lines of instruction,
  no tools, temperature 0.
- ``schema``: compact, with output constrained by a JSON schema
  ``{"answer": str, "cited": [int], "covered": bool}`` (response_format json_schema).
- ``decide``: compact + schema, ``covered`` first and ``cited`` limited to 1..3.
- ``plain``: the excerpts, then the question, then one line: answer from the excerpts or
  say the documentation does not cover it. No citing asked for.
- ``free``: plain without the way out (always answers).

Every answer is also checked the way a validator could attach sources the model did not
mark: the excerpt holding the largest share of the answer's content terms, attached when
that share is at least SUPPORT (``attribute``); an answer to an uncovered question that
passes this check would be shown.

Scoring (answerable): *correct* = the reply answers and cites at least one excerpt from
a gold page (``expect_pages``); *wrong* = it cites only excerpts from other pages;
*uncited* = an answer with no usable marker; *refused* = it says not covered. Uncovered
questions (near_miss, unrelated): *declined* = it says not covered. *echo/loop* = most of
the reply is copied from the prompt, or it repeats itself, or it ran out of tokens.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from common import tree_state

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))
from local_model.control import start, stop  # noqa: E402

TUNE = HERE / "devsets" / "example-site" / "tune.jsonl"
UNCOVERED = ("near_miss", "unrelated")
NOT_COVERED = "NOT COVERED"
EXCERPT_CHARS = 700  # per excerpt in the compact profiles

COMPACT_SYSTEM = (
    "Answer the question using only the numbered excerpts. After each sentence, cite the "
    "excerpt it comes from as [1], [2] or [3].\n"
    f"If the excerpts do not answer the question, reply only: {NOT_COVERED}"
)
PLAIN_INSTRUCTION = (
    "Answer the question in one to three sentences, using only the excerpts above. If they "
    "do not contain the answer, say that the documentation does not cover it."
)
FREE_INSTRUCTION = "Answer the question in one to three sentences, using only the excerpts above."
SUPPORT = 0.6  # share of the answer's terms an excerpt must hold for the answer to lean on it
SCHEMA_SYSTEM = (
    "Answer the question using only the numbered excerpts, citing them as [1], [2] or [3] "
    "in the answer. List the numbers you cited. Set covered to false, with an empty "
    "answer, if the excerpts do not answer the question."
)


@dataclass(frozen=True)
class Unit:
    id: str
    url: str
    title: str
    text: str

    @property
    def page(self) -> str:
        return self.url.split("#", 1)[0].strip("/") + "/" if self.url.strip("/#") else ""


@dataclass(frozen=True)
class Question:
    text: str
    kind: str
    gold: tuple[str, ...]
    units: tuple[Unit, ...]  # ranked, best first
    gate: str  # what DocPilot's gate did without a model: passages or refusal


@dataclass
class Reply:
    text: str = ""
    finish: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    first_token: float | None = None
    total: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""


# --- questions and their excerpts ------------------------------------------------------


def load_questions(site: Path, path: Path, answerable: int, uncovered: int,
                   skip: tuple[int, int] = (0, 0)) -> list[Question]:
    """N answerable and N uncovered tune questions of each kind (file order, after
    skipping the first ``skip`` of each), with the units DocPilot's retrieval ranks."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    first = skip[0]
    chosen = [r for r in rows if r["kind"] == "answerable"][first : first + answerable]
    for kind in UNCOVERED:
        chosen += [r for r in rows if r["kind"] == kind][skip[1] : skip[1] + uncovered]
    lines = "".join(json.dumps({"question": r["question"]}) + "\n" for r in chosen)
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "docpilot"), "ask", "--json", str(site)],
        input=lines, capture_output=True, text=True, check=True,
    )
    results = [json.loads(line) for line in done.stdout.splitlines()]
    sys.path.insert(0, str(ROOT / "runtime"))
    from docpilot_runtime.bundle.read import load_bundle

    bundle = load_bundle(site)
    by_id = {u.id: u for u in bundle.units}
    out = []
    for row, result in zip(chosen, results, strict=True):
        units = tuple(
            Unit(u.id, u.url, " > ".join((*u.breadcrumb, u.title)), u.text)
            for u in (by_id[i] for i in result["ranked"][:6] if i in by_id)
        )
        out.append(Question(row["question"], row["kind"], tuple(row.get("expect_pages", ())),
                            units, result["kind"]))
    return out


# --- the profiles -----------------------------------------------------------------------


def numbered(units: tuple[Unit, ...]) -> str:
    return "\n\n".join(
        f"[{n}] {u.title}\n{u.text[:EXCERPT_CHARS]}" for n, u in enumerate(units[:3], start=1)
    )


def compact_body(q: Question, system: str) -> dict[str, Any]:
    user = f"Question: {q.text}\n\nExcerpts:\n\n{numbered(q.units)}"
    return {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": 0,
        "seed": 1,
    }


def answer_schema(covered_first: bool) -> dict[str, Any]:
    cited: dict[str, Any] = {"type": "array", "items": {"type": "integer"}, "maxItems": 3}
    if covered_first:
        cited["items"] = {"type": "integer", "enum": [1, 2, 3]}
    props: dict[str, Any] = {"answer": {"type": "string"}, "cited": cited,
                             "covered": {"type": "boolean"}}
    order = ["covered", "answer", "cited"] if covered_first else ["answer", "cited", "covered"]
    return {"type": "object", "properties": {k: props[k] for k in order}, "required": order,
            "additionalProperties": False}


def body_for(profile: str, q: Question) -> dict[str, Any]:
    if profile == "compact":
        return compact_body(q, COMPACT_SYSTEM)
    if profile in ("schema", "decide"):
        body = compact_body(q, SCHEMA_SYSTEM)
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": answer_schema(profile == "decide")},
        }
        return body
    if profile in ("plain", "free"):  # no citing duty: the validator attributes (`attribute`)
        rule = PLAIN_INSTRUCTION if profile == "plain" else FREE_INSTRUCTION
        user = f"Excerpts:\n\n{numbered(q.units)}\n\nQuestion: {q.text}\n\n{rule}"
        return {"messages": [{"role": "user", "content": user}], "temperature": 0, "seed": 1}
    if profile == "primed":
        return primed_body(q)
    raise ValueError(f"unknown profile {profile!r}")


def primed_body(q: Question) -> dict[str, Any]:
    """What the runtime's ProviderRun sends for a first step (answer/, prompt.py, tools.py)."""
    sys.path.insert(0, str(ROOT / "runtime"))
    from docpilot_runtime.answer.prompt import (
        PLATFORM_RULES,
        Excerpt,
        first_message,
        render_excerpt,
        site_profile,
    )
    from docpilot_runtime.answer.tools import _REQUIRED, BUILTIN_TOOLS, _schema

    excerpts = "\n".join(
        render_excerpt(Excerpt(u.id, u.title, u.url, u.text), False) for u in q.units[:6]
    )
    system = PLATFORM_RULES + "\n\n" + site_profile("DocPilot", [])
    tools = [
        {"type": "function", "function": {"name": n, "description": d,
                                          "parameters": _schema(p, _REQUIRED[n])}}
        for n, (d, p) in BUILTIN_TOOLS.items()
    ]
    return {
        "messages": [{"role": "system", "content": system},
                     {"role": "user", "content": first_message(q.text, excerpts)}],
        "tools": tools,
        "tool_choice": "auto",
    }


# --- one streamed call ------------------------------------------------------------------


def sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])


def call(client: httpx.Client, base_url: str, body: dict[str, Any], max_tokens: int) -> Reply:
    body = {**body, "stream": True, "stream_options": {"include_usage": True},
            "max_tokens": max_tokens}
    reply = Reply()
    began = time.monotonic()
    calls: dict[int, dict[str, Any]] = {}
    with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
        if response.status_code != 200:
            reply.error = f"HTTP {response.status_code}: {response.read()[:200]!r}"
            return reply
        for event in sse_events(response):
            if event.get("usage"):
                reply.prompt_tokens = event["usage"]["prompt_tokens"]
                reply.completion_tokens = event["usage"]["completion_tokens"]
            for choice in event.get("choices", []):
                delta = choice.get("delta", {})
                piece = delta.get("content") or ""
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(tc.get("index", 0), {"name": "", "arguments": ""})
                    fn = tc.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["arguments"] += fn.get("arguments") or ""
                    piece = piece or "\0"
                if piece and reply.first_token is None:
                    reply.first_token = time.monotonic() - began
                reply.text += piece.replace("\0", "")
                reply.finish = choice.get("finish_reason") or reply.finish
    reply.total = time.monotonic() - began
    reply.tool_calls = list(calls.values())
    return reply


# --- reading a reply --------------------------------------------------------------------

MARKER_FORMS = {
    "[n]": re.compile(r"(?<!\[)\[(\d)\](?!\])"),
    "[n, m]": re.compile(r"\[(\d(?:\s*,\s*\d)+)\]"),
    "[[n]]": re.compile(r"\[\[(\d)\]\]"),
    "[Excerpt n]": re.compile(r"\[(?:excerpt|source)\s*(\d)\]", re.I),
    "(n)": re.compile(r"\((\d)\)"),
    "[[ID]]": re.compile(r"\[\[(/[^\]\s]*)\]\]"),
}


def markers(text: str) -> tuple[set[int], set[str], Counter[str]]:
    """Cited excerpt numbers, cited unit ids and the marker forms seen."""
    numbers: set[int] = set()
    ids: set[str] = set()
    forms: Counter[str] = Counter()
    for form, pattern in MARKER_FORMS.items():
        for found in pattern.findall(text):
            forms[form] += 1
            if form == "[[ID]]":
                ids.add(found)
            else:
                numbers.update(int(n) for n in re.findall(r"\d", found))
    return numbers, ids, forms


def strip_markers(text: str) -> str:
    for pattern in MARKER_FORMS.values():
        text = pattern.sub(" ", text)
    return text


_STOP = frozenset(
    "the and for are but not you your with this that from can how what when where which will "
    "does into its has have was were been use used using all any each per one two also only "
    "then than them they their there here about after before more most such same other may "
    "should would could must just like need needs set sets get gets documentation excerpt "
    "excerpts answer question"
    .replace("  ", " ")
    .split(" ")
)
_TERM = re.compile(r"[a-z0-9_][a-z0-9_./-]*[a-z0-9_]|\d|[\u3040-\u9fff]", re.I)


def terms(text: str) -> set[str]:
    """Content terms: words of 3+ characters outside a stop list, numbers, and CJK
    characters as overlapping pairs (so a Chinese answer can be matched too)."""
    found = [t.lower() for t in _TERM.findall(text)]
    words = {t for t in found if (len(t) >= 3 or t.isdigit()) and t not in _STOP
             and not "\u3040" <= t[0] <= "\u9fff"}
    cjk = "".join(t for t in found if "\u3040" <= t[0] <= "\u9fff")
    return words | {cjk[i : i + 2] for i in range(len(cjk) - 1)}


def attribute(answer: str, question: str, shown: tuple[Unit, ...]) -> tuple[Unit | None, float]:
    """The excerpt holding the largest share of the answer's own terms (those not already
    in the question: restating the question proves nothing), and that share: the check a
    validator could run to attach (or refuse) sources the model did not mark."""
    mine = terms(strip_markers(answer)) - terms(question)
    if len(mine) < 2 or not shown:
        return None, 0.0
    scored = [(len(mine & terms(u.title + " " + u.text)) / len(mine), u) for u in shown]
    share_, unit = max(scored, key=lambda pair: pair[0])
    return unit, share_


def copied_share(reply: str, prompt: str) -> float:
    """The share of the reply made of spans of 40+ characters copied from the prompt."""
    if not reply.strip():
        return 0.0
    matcher = difflib.SequenceMatcher(None, reply, prompt, autojunk=False)
    copied = sum(b.size for b in matcher.get_matching_blocks() if b.size >= 40)
    return copied / len(reply)


def repeats(text: str) -> bool:
    words = text.split()
    grams = Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))
    return bool(grams) and grams.most_common(1)[0][1] >= 4


_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)


def text_call(reply: Reply) -> dict[str, Any] | None:
    """A call written as (fenced) JSON text, ``{"name": ..., "arguments": ...}`` (also with
    the doubled outer braces the 1.5B model writes, ``{{"name": ...}}``)."""
    texts = [*_FENCED.findall(reply.text), reply.text.strip()]
    texts += [t[1:-1] if t.endswith("}}") else t[1:] for t in texts if t.startswith("{{")]
    for text in texts:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            return data
    return None


def answer_call(reply: Reply) -> dict[str, Any] | None:
    """The `answer` call's arguments: parsed by the server, or written as (fenced) JSON text."""
    for tc in reply.tool_calls:
        if tc["name"] == "answer":
            try:
                args = json.loads(tc["arguments"])
                return args if isinstance(args, dict) else None
            except ValueError:
                return None
    data = text_call(reply)
    if data is not None and data["name"] == "answer":
        args = data.get("arguments")
        return args if isinstance(args, dict) else None
    cut = _CUT_ANSWER.search(reply.text)  # a call cut at max_tokens: its markdown so far
    if cut:
        try:
            return {"markdown": json.loads(f'"{cut.group(1).rstrip(chr(92))}"')}
        except ValueError:
            return None
    return None


_CUT_ANSWER = re.compile(r'"name":\s*"answer".*?"markdown":\s*"((?:[^"\\]|\\.)*)', re.S)


@dataclass
class Outcome:
    label: str  # correct | wrong | uncited | refused | declined | answered | failed
    echo_loop: bool
    forms: Counter[str]
    shape: str  # tool call | text-json call | prose | json
    contradicts: bool = False  # JSON says covered: false yet carries an answer
    attributed: str = ""  # gold | other | unsupported | "" (refused or empty)


def says_not_covered(text: str) -> bool:
    """The reply declines: NOT COVERED (or "does not cover") with little else beside it
    (stray [n] markers around a NOT COVERED still count as declining)."""
    low = text.lower()
    if not any(p in low for p in (NOT_COVERED.lower(), "does not cover", "do not cover")):
        return False
    residue = re.sub(r"\[[^\]]*\]|not covered|do(?:es)? not cover\w*", " ", low)
    return len(re.sub(r"\W+", "", residue)) < 25 or low.lstrip("[]0-9 ").startswith(
        (NOT_COVERED.lower(), "the excerpts do not", "the documentation does not"))


def judge(profile: str, q: Question, reply: Reply, prompt: str) -> Outcome:
    shown = q.units[:6] if profile == "primed" else q.units[:3]
    text, shape = reply.text, "prose"
    refused = says_not_covered(text)
    contradicts = False
    cited_units: list[Unit] = []
    if profile in ("schema", "decide"):
        shape = "json"
        try:
            data = json.loads(text)
            text = str(data.get("answer", ""))
            refused = data.get("covered") is False
            contradicts = data.get("covered") is False and bool(text.strip())
            nums = {n for n in data.get("cited", []) if isinstance(n, int)}
        except (ValueError, AttributeError):
            data, nums = None, set()
        in_text, _, _ = markers(text)
        numbers = nums | in_text
    else:
        if profile == "primed":
            args = answer_call(reply)
            if args is not None:
                shape = "tool call" if reply.tool_calls else "text-json call"
                text = str(args.get("markdown", ""))
                listed = args.get("citations") or []
                refused = refused or (not listed and "not" in text.lower()[:80])
            else:
                listed = []
                other = text_call(reply)
                if other is not None:
                    shape = f"text call {other['name']}"
                    text = ""  # a call for another tool: no answer this step
        numbers, ids, _ = markers(text)
        if profile == "primed":
            ids |= {str(i) for i in listed if isinstance(i, str)}
            cited_units = [u for u in shown if u.id in ids]
    _, _, forms = markers(reply.text)
    cited_units += [shown[n - 1] for n in sorted(numbers) if 1 <= n <= len(shown)]
    echo_loop = (copied_share(reply.text, prompt) > 0.6 or repeats(reply.text)
                 or reply.finish == "length")
    if reply.error:
        return Outcome("failed", echo_loop, forms, shape, contradicts)
    if refused:  # its own verdict, whatever stray markers came with it
        label = "declined" if q.kind in UNCOVERED else "refused"
    elif len(re.sub(r"\W+", "", strip_markers(text))) < 15:
        label = "empty"  # nothing, or markers alone ("[1] [2]")
    elif q.kind in UNCOVERED:
        label = "answered"
    elif not cited_units:
        label = "uncited"
    else:
        label = "correct" if any(u.page in q.gold for u in cited_units) else "wrong"
    attributed = ""
    if label in ("correct", "wrong", "uncited", "answered"):
        unit, support = attribute(text, q.text, shown)
        if unit is None or support < SUPPORT:
            attributed = "unsupported"
        else:
            attributed = "gold" if unit.page in q.gold else "other"
    return Outcome(label, echo_loop, forms, shape, contradicts, attributed)


# --- running ----------------------------------------------------------------------------


def prompt_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body["messages"])


def run_profile(base_url: str, model: str, profile: str, questions: list[Question],
                max_tokens: int, log: Any) -> list[tuple[Question, Reply, Outcome]]:
    rows = []
    for q in questions:
        body = body_for(profile, q)
        # A fresh connection per call: reusing a pooled one right after a long streamed
        # reply was sometimes closed by the server before it answered (RemoteProtocolError).
        with httpx.Client(timeout=httpx.Timeout(900.0, connect=10.0)) as client:
            reply = call(client, base_url, body, max_tokens)
        outcome = judge(profile, q, reply, prompt_text(body))
        rows.append((q, reply, outcome))
        log.write(json.dumps({"model": model, "profile": profile, "question": q.text,
                              "kind": q.kind, "gate": q.gate,
                              "label": outcome.label, "echo_loop": outcome.echo_loop,
                              "shape": outcome.shape, "finish": reply.finish,
                              "first_token": reply.first_token, "total": reply.total,
                              "prompt_tokens": reply.prompt_tokens, "reply": reply.text,
                              "tool_calls": reply.tool_calls, "error": reply.error,
                              "units": [u.id for u in q.units]}, ensure_ascii=False) + "\n")
        log.flush()
    return rows


def share(rows: list[tuple[Question, Reply, Outcome]], kinds: tuple[str, ...],
          labels: tuple[str, ...]) -> str:
    chosen = [o for q, _, o in rows if q.kind in kinds]
    if not chosen:
        return "–"
    hits = sum(o.label in labels for o in chosen)
    return f"{hits}/{len(chosen)}"


def p50(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "–"


def table_row(model: str, profile: str, rows: list[tuple[Question, Reply, Outcome]]) -> str:
    covered = ("answerable",)
    gold_shown = sum(
        any(u.page in q.gold for u in (q.units[:6] if profile == "primed" else q.units[:3]))
        for q, _, _ in rows if q.kind in covered
    )
    n_cov = sum(q.kind in covered for q, _, _ in rows)
    echo = sum(o.echo_loop for _, _, o in rows)
    empty = sum(o.label in ("empty", "failed") for _, _, o in rows)
    contradicts = sum(o.contradicts for _, _, o in rows)

    def attributed(kinds: tuple[str, ...], value: str) -> str:
        chosen = [o for q, _, o in rows if q.kind in kinds]
        return f"{sum(o.attributed == value for o in chosen)}/{len(chosen)}" if chosen else "–"
    firsts = [r.first_token for _, r, _ in rows if r.first_token is not None]
    totals = [r.total for _, r, _ in rows]
    prompts = [r.prompt_tokens for _, r, _ in rows if r.prompt_tokens]
    forms: Counter[str] = Counter()
    shapes: Counter[str] = Counter()
    for _, _, o in rows:
        forms.update(o.forms)
        shapes[o.shape] += 1
    return (
        f"| {model} | {profile} | {gold_shown}/{n_cov} | {share(rows, covered, ('correct',))} "
        f"| {share(rows, covered, ('wrong',))} | {share(rows, covered, ('uncited',))} "
        f"| {share(rows, covered, ('refused',))} | {share(rows, UNCOVERED, ('declined',))} "
        f"| {empty}/{len(rows)} | {echo}/{len(rows)} | {p50(firsts)} | {p50(totals)} "
        f"| {int(statistics.median(prompts)) if prompts else '–'} "
        f"| {', '.join(f'{k} {v}' for k, v in forms.most_common(4)) or '–'} "
        f"| {', '.join(f'{k} {v}' for k, v in shapes.most_common())} "
        f"| {contradicts if shapes.get('json') else '–'} "
        f"| {attributed(covered, 'gold')} | {attributed(covered, 'other')} "
        f"| {attributed(UNCOVERED, 'other')} |"
    )


HEADER = (
    "| model | profile | gold page in excerpts | cited correct | cited wrong | uncited answer "
    "| said not covered (covered q.) | uncovered declined | no answer (empty, markers only) "
    "| echo/loop/cut | first token p50 s "
    "| total p50 s | prompt tokens p50 | marker forms | reply shape "
    "| covered=false with an answer | overlap-attributed to a gold excerpt "
    "| overlap-attributed elsewhere | uncovered passing the overlap check |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def speed(models: list[str], threads: list[int]) -> None:
    """Prompt and generation tokens/s for a ~1,000-token prompt, per model and threads."""
    filler = " ".join(f"Section {i}: the runtime reads settings from docpilot.toml." for i in
                      range(90))
    body = {"messages": [{"role": "user", "content": filler + "\nSummarise in one line."}],
            "max_tokens": 48, "temperature": 0}
    print("| model | threads | prompt tokens | prompt tok/s | generated | gen tok/s "
          "| load (1/5/15 min) |\n|---|---|---|---|---|---|---|")
    for model in models:
        for n in threads:
            with tempfile.TemporaryDirectory() as tmp:
                state = Path(tmp) / "engine.json"
                running = start(state, model, threads=n)
                try:
                    with httpx.Client(timeout=900) as client:
                        data = client.post(f"{running.base_url}/chat/completions",
                                           json=body).json()
                    t = data["timings"]
                    print(f"| {model} | {n} | {t['prompt_n']} | {t['prompt_per_second']:.1f} "
                          f"| {t['predicted_n']} | {t['predicted_per_second']:.1f} "
                          f"| {load()} |")
                finally:
                    stop(state)


def smoke() -> None:
    """The smallest model, one tiny question: the table prints, nothing is asserted."""
    unit = Unit("/reference/cli/#serve", "/reference/cli/#serve", "CLI > docpilot serve",
                "docpilot serve site/ serves the site on http://127.0.0.1:8000 by default.")
    q = Question("What is the default port?", "answerable", ("reference/cli/",), (unit,),
                 "passages")
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "engine.json"
        running = start(state, "smollm2-135m", threads=1)
        try:
            print(HEADER)
            with open(os.devnull, "w") as log:
                for profile in ("compact", "schema"):
                    rows = run_profile(running.base_url, "smollm2-135m", profile, [q], 24,
                                       log)
                    print(table_row("smollm2-135m", profile, rows))
        finally:
            stop(state)


def table_from_logs(site: Path, logs: list[Path]) -> None:
    """Judge logged replies again (the judging rules can change without re-running)."""
    sys.path.insert(0, str(ROOT / "runtime"))
    from docpilot_runtime.bundle.read import load_bundle

    by_id = {u.id: u for u in load_bundle(site).units}
    gold = {}
    for line in TUNE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        gold[row["question"]] = tuple(row.get("expect_pages", ()))
    groups: dict[tuple[str, str], list[tuple[Question, Reply, Outcome]]] = {}
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            units = tuple(Unit(u.id, u.url, " > ".join((*u.breadcrumb, u.title)), u.text)
                          for u in (by_id[i] for i in r["units"] if i in by_id))
            q = Question(r["question"], r["kind"], gold[r["question"]], units, r.get("gate", ""))
            reply = Reply(r["reply"], r["finish"], r["tool_calls"], r["first_token"], r["total"],
                          r["prompt_tokens"], 0, r["error"])
            outcome = judge(r["profile"], q, reply, prompt_text(body_for(r["profile"], q)))
            groups.setdefault((r["model"], r["profile"]), []).append((q, reply, outcome))
    print(HEADER)
    for (model, profile), rows in groups.items():
        print(table_row(model, profile, rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, help="example-site built with mkdocs build")
    parser.add_argument("--models", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    parser.add_argument("--profiles", default="compact,schema,decide,primed")
    parser.add_argument("--answerable", type=int, default=12)
    parser.add_argument("--uncovered", type=int, default=3, help="per uncovered kind")
    parser.add_argument("--primed-questions", type=int, default=5,
                        help="the primed prompt is long: only the first N questions")
    parser.add_argument("--skip", type=int, nargs=2, default=(0, 0), metavar=("A", "U"),
                        help="skip the first A answerable and U of each uncovered kind")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--log", type=Path, default=HERE / "out" / "local_model.jsonl")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--table", type=Path, nargs="+", metavar="LOG",
                        help="print the table from earlier runs' logs (needs --site)")
    args = parser.parse_args()
    print(f"tree {tree_state()} · {time.strftime('%Y-%m-%d %H:%M')} · load {load()}")
    if args.smoke:
        smoke()
        return
    if args.table:
        table_from_logs(args.site, args.table)
        return
    models = args.models.split(",")
    if args.speed:
        speed(models, [1, 2])
        return
    if args.site is None:
        parser.error("--site is required (mkdocs build -f example-site/mkdocs.yml -d DIR)")
    questions = load_questions(args.site, TUNE, args.answerable, args.uncovered,
                               tuple(args.skip))
    args.log.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    with args.log.open("a", encoding="utf-8") as log:
        for model in models:
            if True:  # the engine's log stays beside the run's log
                state = args.log.with_name(f"{args.log.stem}-engine-{model}.json")
                running = start(state, model, threads=args.threads)
                try:
                    for profile in args.profiles.split(","):
                        subset = questions
                        if profile == "primed":
                            cov = [q for q in questions if q.kind == "answerable"]
                            unc = [q for q in questions if q.kind != "answerable"]
                            k = args.primed_questions
                            subset = cov[: k - k // 3] + unc[: k // 3]
                        rows = run_profile(running.base_url, model, profile, subset,
                                           args.max_tokens, log)
                        lines.append(table_row(model, profile, rows))
                        print(lines[-1], f"(load {load()})", file=sys.stderr, flush=True)
                finally:
                    stop(state)
    print(HEADER)
    print("\n".join(lines))
    print(f"load at the end {load()}")


if __name__ == "__main__":
    main()
