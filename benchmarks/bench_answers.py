"""End to end with a real model: cited answers, refusals, waits and tokens (issue 22).

    .venv/bin/python benchmarks/bench_answers.py --split test              # both models
    .venv/bin/python benchmarks/bench_answers.py --models qwen2.5-coder-1.5b --split tune
    .venv/bin/python benchmarks/bench_answers.py --rewrite --split test    # question rewriting
    .venv/bin/python benchmarks/bench_answers.py --table LOG.jsonl         # tables from a log
    .venv/bin/python benchmarks/bench_answers.py --smoke                   # CI smoke

Each model runs in llama.cpp's own server (tools/local_model: installed from the registry
into the cache, started on loopback, stopped at the end). Every question of example-site's
dev set (the chosen half) is one real turn through `Runtime.ask` with that provider, as
`docpilot eval --model` runs it; the figures per kind are `evaluate.model_figures`':
a cited answer, one its citations support (the support check's rule), one citing an
expected page, refused by the gate, refused after the model, passages, ids stripped,
links de-linked, first-text and total latency p50/p95 (seconds), tokens.

``--rewrite`` measures question rewriting instead: the follow-up set
(`devsets/followups/example-site`), the example-site dev set's follow-ups and the
translated questions (`devsets/translations/example-site`, English originals beside
their German, French, Spanish and Chinese translations) are retrieved once without and
once with the model's rewrite (`Runtime.rewritten_retrieval`, no answer call): the gate's
answered share and page recall@5 per kind and language.

Tuning vs testing: prompt choices were made on ``--split tune``; report ``--split test``.
The 1-minute load average is printed with every table: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import math
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from common import tree_state

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

from docpilot_runtime.evaluate.figures import outcome  # noqa: E402
from docpilot_runtime.evaluate.model_figures import (  # noqa: E402
    format_model_figures,
    model_turn,
    summarise_model,
)
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions  # noqa: E402
from docpilot_runtime.providers import ProviderSettings  # noqa: E402
from docpilot_runtime.settings.answer import LOCAL_TURN_DEADLINE, AnswerSettings  # noqa: E402
from docpilot_runtime.settings.load import Settings  # noqa: E402
from docpilot_runtime.turn import Event, Runtime, load_runtime  # noqa: E402

DEVSETS = HERE / "devsets"
MODELS = ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b")
ANSWER_KINDS = ("answerable", "near_miss", "unrelated", "followup_elliptical",
                "followup_unrelated", "after_refusal")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build_site(target: Path) -> Path:
    import subprocess

    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "mkdocs"), "build", "-q", "-f",
         str(ROOT / "example-site" / "mkdocs.yml"), "-d", str(target)],
        check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return target


def provider(base_url: str, model: str, args: argparse.Namespace) -> ProviderSettings:
    """The local model as an owner would configure it (docs: "Try real answers locally")."""
    return ProviderSettings(
        kind="openai", base_url=base_url, model=model, temperature=0.0,
        profile=args.profile, structured_output=args.structured, excerpts=args.excerpts,
        timeout=600.0, first_token_timeout=600.0, idle_timeout=300.0,
        max_tokens=args.max_tokens, retries=1,
    )


def runtime_for(site: Path, settings: ProviderSettings) -> Runtime:
    answer = AnswerSettings(turn_deadline=LOCAL_TURN_DEADLINE * 2)
    runtime = load_runtime(site, Settings(providers=(settings,), answer=answer))
    return dataclasses.replace(runtime, recorder=None)


class Replies(logging.Handler):
    """Keeps what the model wrote (the ladder's debug lines), for the turn's log line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def answer_turns(
    runtime: Runtime, questions: Sequence[EvalQuestion], model: str, log: Any
) -> list[Any]:
    """Each question one turn; the log gets every turn (and what the model wrote)."""
    turns = []
    replies = Replies()
    logger = logging.getLogger("docpilot.answer")
    logger.addHandler(replies)
    logger.setLevel(logging.DEBUG)
    for number, question in enumerate(questions, start=1):
        replies.lines = []
        first: list[float] = []
        began = time.monotonic()

        async def emit(event: Event, first: list[float] = first, began: float = began) -> None:
            if event.name == "delta" and not first:
                first.append(time.monotonic() - began)

        result = (await runtime.ask(question.request(), emit)).to_dict()
        took = time.monotonic() - began
        site = runtime.site_for(question.page)
        turn = model_turn(question, result, site, first[0] if first else None, took)
        turns.append(turn)
        log.write(json.dumps({
            "model": model, "question": question.question, "kind": question.kind,
            "expect_pages": list(question.expect_pages), "turn": dataclasses.asdict(turn),
            "markdown": result["markdown"] if result["kind"] == "answer" else "",
            "citations": [c["id"] for c in result["citations"]] if result["kind"] == "answer" else [],
            "attempts": (result.get("usage") or {}).get("attempts", []),
            "replies": replies.lines,
            "load": load(),
        }, ensure_ascii=False) + "\n")
        log.flush()
        print(f"  {number}/{len(questions)} {question.kind}: {turn.ended} "
              f"({took:.0f} s, load {load()})", file=sys.stderr, flush=True)
    return turns


async def rewrite_rows(
    runtime: Runtime, questions: Sequence[EvalQuestion], log: Any
) -> list[dict[str, Any]]:
    """Each question retrieved without and with the model's rewrite (no answer call)."""
    rows = []
    for question in questions:
        request = question.request()
        site = runtime.site_for(question.page)
        plain = await asyncio.to_thread(site.retrieve, request)
        began = time.monotonic()
        rewritten, usage, _ = await runtime.rewritten_retrieval(request, plain, site)
        row = {
            "question": question.question, "kind": question.kind, "lang": question.lang,
            "rewrite": rewritten.rewritten, "called": usage is not None,
            "seconds": round(time.monotonic() - began, 1),
        }
        for name, found in (("plain", plain), ("rewritten", rewritten)):
            scored = outcome(question, {"kind": "answer" if found.passed else "refusal",
                                        "ranked": found.ranked_ids(),
                                        "confidence": found.confidence}, site.prefix)
            row[name] = {"answered": found.passed, "rank": scored.rank}
        rows.append(row)
        log.write(json.dumps(row, ensure_ascii=False) + "\n")
        log.flush()
        print(f"  {question.kind} {question.lang}: {row['rewrite']!r} ({row['seconds']} s)",
              file=sys.stderr, flush=True)
    return rows


GRADED_KINDS = ("answerable", "followup_elliptical")  # have expect_pages: R@5 applies


def _share(flags: Sequence[bool]) -> str:
    return f"{sum(flags) / len(flags):.2f}" if flags else "–"


def rewrite_table(rows: Sequence[dict[str, Any]]) -> str:
    """Answered share and R@5 per kind and language, without and with the rewrite."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["kind"], row["lang"])].append(row)
    lines = ["| kind | lang | n | calls | answered without → with | R@5 without → with |",
             "|---|---|---:|---:|---:|---:|"]
    for (kind, lang), group in sorted(groups.items()):
        answered = [_share([r[n]["answered"] for r in group]) for n in ("plain", "rewritten")]
        recall = ""
        if kind in GRADED_KINDS:
            found = [_share([(r[n]["rank"] or 99) <= 5 for r in group])
                     for n in ("plain", "rewritten")]
            recall = " → ".join(found)
        lines.append(f"| {kind} | {lang} | {len(group)} | {sum(r['called'] for r in group)} "
                     f"| {' → '.join(answered)} | {recall} |")
    return "\n".join(lines)


def wilson(hits: int, count: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of hits/count: a subset's share with its uncertainty."""
    if not count:
        return (0.0, 1.0)
    share = hits / count
    centre = (share + z * z / (2 * count)) / (1 + z * z / count)
    half = z * math.sqrt(share * (1 - share) / count + z * z / (4 * count * count)) / (1 + z * z / count)
    return (max(0.0, centre - half), min(1.0, centre + half))


def goal_lines(questions: Sequence[EvalQuestion], turns: Sequence[Any]) -> str:
    """Issue 22's goals with their intervals: covered turns ending as a supported cited
    answer (goal >= 0.85), uncovered ones (near_miss, unrelated) refused (goal >= 0.90)."""
    covered = [t for q, t in zip(questions, turns, strict=True) if q.kind == "answerable"]
    uncovered = [t for q, t in zip(questions, turns, strict=True)
                 if q.kind in ("near_miss", "unrelated")]
    lines = []
    for label, group, hit in (
        ("covered: supported cited answer", covered, lambda t: t.ended == "answer" and t.supported),
        ("covered: cited answer", covered, lambda t: t.ended == "answer"),
        ("uncovered: refused", uncovered, lambda t: t.ended in ("gate", "after_model")),
    ):
        hits = sum(1 for t in group if hit(t))
        low, high = wilson(hits, len(group))
        lines.append(f"- {label}: {hits}/{len(group)} (95 % Wilson {low:.2f}–{high:.2f})")
    return "\n".join(lines)


def speed(base_url: str) -> str:
    """llama-server's own timings for one fixed request: prompt and generation tokens/s."""
    text = " ".join(f"Line {i}: the server listens on port {8000 + i}." for i in range(30))
    reply = httpx.post(f"{base_url}/chat/completions", timeout=600, json={
        "messages": [{"role": "user", "content": f"{text}\nSummarise these lines."}],
        "max_tokens": 48, "temperature": 0, "seed": 1,
    }).json()
    timings = reply["timings"]
    return (f"speed: prompt {timings['prompt_n']} tokens at {timings['prompt_per_second']:.1f} "
            f"tok/s, generation {timings['predicted_n']} tokens at "
            f"{timings['predicted_per_second']:.1f} tok/s (load {load()})")


def per_kind(questions: list[EvalQuestion], limit: int, kinds: Sequence[str]) -> list[EvalQuestion]:
    """The first ``limit`` questions (0: all) of each kind in ``kinds``, in file order: a
    time-boxed run still covers every kind."""
    seen: dict[str, int] = {}
    chosen = []
    for question in questions:
        if question.kind in kinds and (not limit or seen.get(question.kind, 0) < limit):
            seen[question.kind] = seen.get(question.kind, 0) + 1
            chosen.append(question)
    return chosen


def question_sets(
    split: str, rewrite: bool, limit: int = 0, kinds: Sequence[str] = ANSWER_KINDS
) -> list[tuple[str, list[EvalQuestion]]]:
    example = load_questions(DEVSETS / "example-site" / f"{split}.jsonl")
    if not rewrite:
        return [("example-site", per_kind(example, limit, kinds))]
    follow = [q for q in example if q.kind.startswith("followup") or q.kind == "after_refusal"]
    return [
        ("followups", load_questions(DEVSETS / "followups" / "example-site" / f"{split}.jsonl")),
        ("example-site follow-ups", follow),
        ("translations", load_questions(DEVSETS / "translations" / "example-site" / f"{split}.jsonl")),
    ]


def run_model(model: str, site: Path, args: argparse.Namespace, log: Any) -> list[str]:
    from local_model.control import start, stop

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "engine.json"
        began = time.monotonic()
        running = start(state, model, ctx=args.ctx, threads=args.threads)
        out.append(f"engine {model} up in {time.monotonic() - began:.0f} s (load {load()})")
        try:
            settings = provider(running.base_url, model, args)
            runtime = runtime_for(site, settings)
            for name, questions in question_sets(args.split, args.rewrite, args.limit,
                                                 args.kinds.split(",")):
                if args.rewrite and args.limit:
                    questions = questions[: args.limit]
                if args.rewrite:
                    rows = asyncio.run(rewrite_rows(runtime, questions, log))
                    out.append(f"\n#### {model} · {name} · {args.split} half "
                               f"(rewrite; load {load()})\n\n{rewrite_table(rows)}")
                    continue
                turns = asyncio.run(answer_turns(runtime, questions, model, log))
                figures = summarise_model(questions, turns)
                out.append(f"\n#### {model} · {name} · {args.split} half · profile "
                           f"{args.profile}{' structured' if args.structured else ''} "
                           f"(load {load()})\n\n{format_model_figures(figures)}\n\n"
                           f"{goal_lines(questions, turns)}")
            out.append(speed(running.base_url))
        finally:
            stop(state)
    return out


def table_from_logs(paths: Sequence[Path]) -> None:
    """The model tables again from logged turns (no model runs)."""
    from docpilot_runtime.evaluate.model_figures import ModelTurn

    by_model: dict[str, tuple[list[EvalQuestion], list[ModelTurn]]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if "turn" not in row:
                continue
            questions, turns = by_model.setdefault(row["model"], ([], []))
            questions.append(EvalQuestion(row["question"], row["kind"],
                                          tuple(row["expect_pages"])))
            turns.append(ModelTurn(**row["turn"]))
    for model, (questions, turns) in by_model.items():
        print(f"\n#### {model}\n\n{format_model_figures(summarise_model(questions, turns))}"
              f"\n\n{goal_lines(questions, turns)}")


def smoke() -> None:
    """Two questions against a scripted provider (no engine): the tables print."""
    from servers.anthropic_messages import Reply
    from servers.openai_chat import OpenAIChatServer

    with tempfile.TemporaryDirectory() as tmp:
        site = build_site(Path(tmp) / "site")
        questions = load_questions(DEVSETS / "example-site" / "tune.jsonl")[:2]
        with OpenAIChatServer([Reply(text="NOT COVERED")] * 4, llama_cpp=True) as server:
            args = argparse.Namespace(profile="compact", structured=False, excerpts=0,
                                      max_tokens=64)
            runtime = runtime_for(site, provider(server.base_url, "scripted", args))
            with open(os.devnull, "w") as log:
                turns = asyncio.run(answer_turns(runtime, questions, "scripted", log))
                rows = asyncio.run(rewrite_rows(runtime, questions, log))
        print(format_model_figures(summarise_model(questions, turns)))
        print(goal_lines(questions, turns))
        print()
        print(rewrite_table(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--split", choices=["tune", "test"], default="test")
    parser.add_argument("--site", type=Path, help="example-site built (default: built now)")
    parser.add_argument("--profile", choices=["compact", "full"], default="compact")
    parser.add_argument("--structured", action="store_true")
    parser.add_argument("--excerpts", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--limit", type=int, default=0,
                        help="first N questions of each kind (with --rewrite: of each set)")
    parser.add_argument("--kinds", default=",".join(ANSWER_KINDS),
                        help="the kinds to run, comma-separated")
    parser.add_argument("--rewrite", action="store_true", help="measure question rewriting")
    parser.add_argument("--log", type=Path, default=HERE / "out" / "answers.jsonl")
    parser.add_argument("--table", type=Path, nargs="+", metavar="LOG")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    print(f"tree {tree_state()} · {time.strftime('%Y-%m-%d %H:%M')} · load {load()}")
    if args.smoke:
        smoke()
        return
    if args.table:
        table_from_logs(args.table)
        return
    args.log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or build_site(Path(tmp) / "site")
        lines = []
        with args.log.open("a", encoding="utf-8") as log:
            for model in args.models.split(","):
                lines += run_model(model, site, args, log)
                print("\n".join(lines[-2:]), file=sys.stderr, flush=True)
    print("\n".join(lines))
    print(f"\nload at the end {load()}")


if __name__ == "__main__":
    main()
