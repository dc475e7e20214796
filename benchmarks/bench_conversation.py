"""Conversations: what the composed channel rescues, on every dev set.

Builds each corpus with the DocPilot plugin (default embedder, wordllama; sites and the
embedding cache under ``benchmarks/out/conversation/``), then evaluates a split of its dev
set with `docpilot_runtime.evaluation` in bundle (hybrid) and lexical mode, and prints:

* the per-kind table (answered, page recall@1/@5, MRR);
* the conversation figures: for ``followup_unrelated``, how many are refused asked alone
  and still pass after the covered turn (the composed channel carrying them); for
  ``followup_elliptical``, answered and page recall@5 with the history and without it.

    .venv/bin/python benchmarks/bench_conversation.py            # test halves
    .venv/bin/python benchmarks/bench_conversation.py --split tune
    .venv/bin/python benchmarks/bench_conversation.py --smoke    # example-site, few questions
    .venv/bin/python benchmarks/bench_conversation.py --split tune --features

``--features`` prints, per follow-up, what the rescue rule was chosen from: the plain and
composed gate scores over the threshold, the follow-up's terms, those beyond the earlier
question's, how many of those the corpus never uses, and the idf-weighted share of the
known ones found in the composed question's top three units.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from common import HERE, tree_state
from docpilot_runtime.evaluation import (
    EvalQuestion,
    Report,
    evaluate,
    evaluation_runtime,
    format_report,
    lexical_runtime,
    load_questions,
)
from docpilot_runtime.lexical import idf
from docpilot_runtime.retrieval import anchor_questions, own_unseen_terms
from docpilot_runtime.tokenize import query_terms
from docpilot_runtime.turn import Runtime

ROOT = HERE.parent
OUT = HERE / "out" / "conversation"
CORPORA = ("example-site", "httpx", "starlette", "uvicorn")
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


def build(corpus: str, rebuild: bool) -> Path:
    """The corpus built with the plugin (reused when its bundle exists)."""
    work = OUT / corpus
    site = work / "site"
    if (site / "docpilot").is_dir() and not rebuild:
        return site
    work.mkdir(parents=True, exist_ok=True)
    if corpus == "example-site":
        config = ROOT / "example-site" / "mkdocs.yml"
    else:
        source = HERE / "corpora" / corpus
        data = yaml.safe_load((source / "mkdocs.yml").read_text(encoding="utf-8"))
        data["docs_dir"] = str(source / "docs")
        data["site_dir"] = str(site)
        plugins = [p for p in data.get("plugins", []) if p != "docpilot"]
        data["plugins"] = [*plugins, {"docpilot": {"cache_dir": str(work / "cache")}}]
        config = work / "mkdocs.yml"
        config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=config.parent,
    )
    if done.returncode != 0:
        raise SystemExit(f"mkdocs build of {corpus} failed:\n{done.stdout}\n{done.stderr}")
    return site


def alone(questions: list[EvalQuestion]) -> list[EvalQuestion]:
    return [dataclasses.replace(q, history=()) for q in questions]


def conversation(runtime: Runtime, questions: list[EvalQuestion], report: Report) -> dict[str, Any]:
    """The done-when figures: rescues of uncovered questions, and elliptical follow-ups
    with and without their history."""
    unrelated = [q for q in questions if q.kind == "followup_unrelated"]
    with_history = [o for o in report.outcomes if o.kind == "followup_unrelated"]
    bare = evaluate(runtime, alone(unrelated)).outcomes
    carried = sum(1 for b, h in zip(bare, with_history, strict=True) if not b.answered and h.answered)
    elliptical = [q for q in questions if q.kind == "followup_elliptical"]
    without = evaluate(runtime, alone(elliptical)).kinds.get("followup_elliptical")
    withh = report.kinds.get("followup_elliptical")
    return {
        "followup_unrelated": len(unrelated),
        "refused_alone": sum(1 for b in bare if not b.answered),
        "carried_past_gate": carried,
        "elliptical": len(elliptical),
        "elliptical_answered": withh.answered if withh else None,
        "elliptical_r5_history": withh.recall_at_5 if withh else None,
        "elliptical_r5_alone": without.recall_at_5 if without else None,
        "elliptical_answered_alone": without.answered if without else None,
    }


def features(runtime: Runtime, questions: list[EvalQuestion]) -> None:
    """One line per follow-up: the signals the rescue rule was measured on."""
    site = runtime.sites[0]
    index = site.searcher.lexical
    threshold = site.gate_params(site.mode).threshold
    for q in questions:
        anchors = anchor_questions(q.history)
        if q.kind not in ("followup_elliptical", "followup_unrelated") or not anchors:
            continue
        plain = site.judge(site.search(q.question))[1] / threshold
        ranking = site.search(" ".join([*anchors, q.question]))
        composed = site.judge(ranking)[1] / threshold
        earlier = {t for a in anchors for t in query_terms(a)}
        own = [t for t in query_terms(q.question) if t not in earlier]
        known = [t for t in own if index.document_frequency(t) > 0]
        top = set(ranking.order[:3])
        weight = {t: idf(index.count, index.document_frequency(t)) for t in known}
        held = sum(w for t, w in weight.items() if top & {u for u, _ in index.search([t], index.count)})
        share = held / sum(weight.values()) if weight else 1.0
        print(
            f"{q.kind[9:]:10} {q.lang} plain {plain:5.2f} composed {composed:5.2f} "
            f"terms {len(query_terms(q.question)):2} own {len(own):2} "
            f"unseen {own_unseen_terms(index, anchors, q.question):2} held {share:4.2f} | "
            f"{q.question[:60]}"
        )
    print()


def fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["tune", "test"], default="test")
    parser.add_argument("--smoke", action="store_true", help="example-site, a few questions")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="only these")
    parser.add_argument("--features", action="store_true", help="per follow-up signals")
    parser.add_argument("--rebuild", action="store_true", help="build even if a bundle exists")
    args = parser.parse_args()
    corpora = ["example-site"] if args.smoke else (args.corpus or list(CORPORA))
    print(f"# bench_conversation · {time.strftime('%Y-%m-%d')} · tree {tree_state()} · "
          f"split {args.split}\n")
    totals: dict[str, dict[str, int]] = {}
    for corpus in corpora:
        site = build(corpus, args.rebuild)
        questions = load_questions(HERE / "devsets" / corpus / f"{args.split}.jsonl")
        if args.smoke:
            picked: list[EvalQuestion] = []
            for kind in ("answerable", "unrelated", "followup_elliptical", "followup_unrelated"):
                picked += [q for q in questions if q.kind == kind][:3]
            questions = picked
        hybrid = evaluation_runtime(site)
        for mode, runtime in (("bundle", hybrid), ("lexical", lexical_runtime(hybrid))):
            if args.features:
                print(f"## {corpus} · {args.split} · {mode} · follow-up signals\n")
                features(runtime, questions)
                continue
            report = evaluate(runtime, questions)
            figures = conversation(runtime, questions, report)
            print(f"## {corpus} · {args.split} · {mode} ({runtime.sites[0].mode})\n")
            print(format_report(report))
            print()
            print(
                f"followup_unrelated {figures['followup_unrelated']}: refused alone "
                f"{figures['refused_alone']}, of those passing after a covered turn "
                f"**{figures['carried_past_gate']}**; followup_elliptical "
                f"{figures['elliptical']}: answered {fmt(figures['elliptical_answered'])} "
                f"(alone {fmt(figures['elliptical_answered_alone'])}), R@5 with history "
                f"{fmt(figures['elliptical_r5_history'])} / alone "
                f"{fmt(figures['elliptical_r5_alone'])}\n"
            )
            bucket = totals.setdefault(mode, {"carried": 0, "unrelated_alone_refused": 0,
                                              "unrelated_alone": 0})
            bucket["carried"] += figures["carried_past_gate"]
            for o in report.outcomes:
                if o.kind in ("unrelated", "near_miss"):
                    bucket["unrelated_alone"] += 1
                    bucket["unrelated_alone_refused"] += not o.answered
    for mode, bucket in totals.items():
        share = bucket["unrelated_alone_refused"] / max(bucket["unrelated_alone"], 1)
        print(f"{mode}: uncovered questions carried past the gate by a covered turn "
              f"{bucket['carried']}; uncovered asked alone refused {share:.2f} "
              f"({bucket['unrelated_alone_refused']}/{bucket['unrelated_alone']})")


if __name__ == "__main__":
    main()
