"""Conversations: what the composed channel rescues, on every dev set.

Builds each corpus (``corpus_sites``: the real-thread sets, whose follow-ups are the askers'
own next messages, then the hand-written sets) with the DocPilot plugin (default embedder,
wordllama; sites and the embedding cache under ``benchmarks/out/conversation/``), then
evaluates a split of its dev set with `docpilot_runtime.evaluate.run` in bundle (hybrid) and
lexical mode, and prints (pooled figures per group, real and hand-written apart):

* the per-kind table (answered, page recall@1/@5, MRR);
* the conversation figures: for ``followup_unrelated``, how many are refused asked alone
  and still pass after the covered turn (the composed channel carrying them); for
  ``followup_elliptical``, answered and page recall@5 with the history and without it.

    .venv/bin/python benchmarks/bench_conversation.py            # test halves
    .venv/bin/python benchmarks/bench_conversation.py --split tune
    .venv/bin/python benchmarks/bench_conversation.py --smoke    # example-site, few questions
    .venv/bin/python benchmarks/bench_conversation.py --split tune --features
    .venv/bin/python benchmarks/bench_conversation.py --set followups   # the follow-up set

``--set followups`` reads ``benchmarks/devsets/followups/<corpus>/`` instead of the dev sets:
follow-ups only (elliptical and uncovered, most in languages other than the corpus's),
written to choose the composed channel's rule on more than the dev sets' few; it is
reported on its own, never pooled with the dev sets.

``--features`` prints, per follow-up, what the rescue rule was chosen from
(``docpilot_runtime.retrieve.followup``): the plain and composed gate scores over the threshold,
the follow-up's own content terms (beyond the earlier question's, no function words),
how many of those the corpus never uses, the share of all its terms the corpus knows
(low: another language), how many of its corpus words (exact or cognate) held in few
units are found in the composed question's best units, how many of its words unknown to
the corpus are written like names (``followup.name_terms``), the score of the question
the rule rescues it on ("-": not rescued), and the cognates it matched.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from common import HERE, share_cell, tree_state
from corpus_sites import CORPORA, group_of
from corpus_sites import build as build_site
from devsets import followup_sets
from docpilot_runtime.evaluate.figures import Outcome, Report, format_report, summarise
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.evaluate.run import evaluate, evaluation_runtime, lexical_runtime
from docpilot_runtime.retrieve.followup import followup_terms, name_terms
from docpilot_runtime.retrieve.site import anchor_questions
from docpilot_runtime.turn import Runtime

OUT = HERE / "out" / "conversation"


def build(corpus: str, rebuild: bool, workdir: Path = OUT) -> Path:
    """The corpus built with the plugin and its default embedder (reused when built)."""
    return build_site(corpus, None, workdir, reuse=not rebuild)


TOTALS = (
    "carried", "unrelated_alone_refused", "unrelated_alone", "elliptical", "hits_history",
    "hits_alone", "followup_unrelated", "refused_history",
)


def alone(questions: list[EvalQuestion]) -> list[EvalQuestion]:
    return [dataclasses.replace(q, history=()) for q in questions]


def conversation(runtime: Runtime, questions: list[EvalQuestion], report: Report) -> dict[str, Any]:
    """The done-when figures: rescues of uncovered questions, and elliptical follow-ups
    with and without their history."""
    unrelated = [q for q in questions if q.kind == "followup_unrelated"]
    with_history = [o for o in report.outcomes if o.kind == "followup_unrelated"]
    bare = evaluate(runtime, alone(unrelated)).outcomes
    carried_by = [
        q.lang
        for q, b, h in zip(unrelated, bare, with_history, strict=True)
        if not b.answered and h.answered
    ]
    carried = len(carried_by)
    elliptical = [q for q in questions if q.kind == "followup_elliptical"]
    bare_report = evaluate(runtime, alone(elliptical))
    without = bare_report.kinds.get("followup_elliptical")
    withh = report.kinds.get("followup_elliptical")
    answered_by = [
        (q.lang, o.answered)
        for q, o in zip(
            elliptical, [o for o in report.outcomes if o.kind == "followup_elliptical"], strict=True
        )
    ]
    return {
        "carried_langs": carried_by,
        "unrelated_langs": [q.lang for q, b in zip(unrelated, bare, strict=True) if not b.answered],
        "elliptical_langs": answered_by,
        "followup_unrelated": len(unrelated),
        "refused_alone": sum(1 for b in bare if not b.answered),
        "carried_past_gate": carried,
        "elliptical": len(elliptical),
        "elliptical_answered": withh.answered if withh else None,
        "elliptical_r5_history": withh.recall_at_5 if withh else None,
        "elliptical_r5_alone": without.recall_at_5 if without else None,
        "elliptical_answered_alone": without.answered if without else None,
        # Counts, so corpora can be pooled: R@5 hits with and without the history, and
        # uncovered follow-ups refused after their covered turn.
        "elliptical_hits_history": sum(
            o.rank is not None and o.rank <= 5
            for o in report.outcomes
            if o.kind == "followup_elliptical"
        ),
        "elliptical_hits_alone": sum(
            o.rank is not None and o.rank <= 5 for o in bare_report.outcomes
        ),
        "unrelated_refused_history": sum(not h.answered for h in with_history),
    }


def features(runtime: Runtime, questions: list[EvalQuestion]) -> None:
    """One line per follow-up: the signals the rescue rule was measured on."""
    site = runtime.sites[0]
    index = site.searcher.lexical
    p = site.params
    threshold = site.gate_params(site.mode).threshold
    for q in questions:
        anchors = anchor_questions(q.history)
        if q.kind not in ("followup_elliptical", "followup_unrelated") or not anchors:
            continue
        plain = site.judge(site.search(q.question))[1] / threshold
        ranking = site.search(" ".join([*anchors, q.question]))
        composed = site.judge(ranking)[1] / threshold
        found = followup_terms(index, anchors, q.question, p.rescue_known_df)
        mapped = {t: t if index.document_frequency(t) else site.cognates.of(t) for t in found.own}
        content = [
            t
            for t in dict.fromkeys(mapped.values())
            if t is not None and index.document_frequency(t) <= p.rescue_content_df * index.count
        ]
        top = set(ranking.order[: p.rescue_held_units])
        held = [t for t in content if top & {u for u, _ in index.search([t], index.count)}]
        rescue = site.rescue_question(anchors, q.question)
        names = [t for t, m in mapped.items() if m is None and t in name_terms(q.question)]
        verdict = (
            "-" if rescue is None else "%.2f" % (site.judge(site.search(rescue))[1] / threshold)
        )
        print(
            f"{q.kind[9:]:10} {q.lang} plain {plain:5.2f} composed {composed:5.2f} "
            f"own {len(found.own):2} unseen {len(found.unseen):2} known {found.known_share:4.2f} "
            f"held {len(held)}/{len(content)} names {len(names)} "
            f"rescue {verdict:>5} | {q.question[:50]} | "
            + " ".join(f"{k}~{v}" for k, v in mapped.items() if v and v != k)
        )
    print()


def fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["tune", "test"], default="test")
    parser.add_argument(
        "--set",
        choices=["devsets", "followups"],
        default="devsets",
        help="every dev set, or the follow-up sets (benchmarks/devsets/followups/)",
    )
    parser.add_argument("--smoke", action="store_true", help="example-site, a few questions")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="only these")
    parser.add_argument("--features", action="store_true", help="per follow-up signals")
    parser.add_argument("--rebuild", action="store_true", help="build even if a bundle exists")
    parser.add_argument("--sites", type=Path, default=OUT, help="build into (and reuse) this folder")
    args = parser.parse_args()
    every = list(CORPORA) if args.set == "devsets" else followup_sets()
    corpora = ["example-site"] if args.smoke else (args.corpus or every)
    print(
        f"# bench_conversation · {time.strftime('%Y-%m-%d')} · tree {tree_state()} · "
        f"split {args.split} · set {args.set}\n"
    )
    # Pooled per group (real-thread sets, hand-written sets) and mode, never across groups.
    totals: dict[str, dict[str, int]] = {}
    pooled: dict[str, list[Outcome]] = {}
    langs: dict[str, dict[str, list[int]]] = {}
    for corpus in corpora:
        site = build(corpus, args.rebuild, args.sites)
        folder = HERE / "devsets" / corpus
        if args.set == "followups":
            folder = HERE / "devsets" / "followups" / corpus
        questions = load_questions(folder / f"{args.split}.jsonl")
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
            pool = f"{group_of(corpus)} sets · {mode}"
            pooled.setdefault(pool, []).extend(report.outcomes)
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
            bucket = totals.setdefault(pool, dict.fromkeys(TOTALS, 0))
            bucket["carried"] += figures["carried_past_gate"]
            bucket["elliptical"] += figures["elliptical"]
            bucket["hits_history"] += figures["elliptical_hits_history"]
            bucket["hits_alone"] += figures["elliptical_hits_alone"]
            bucket["followup_unrelated"] += figures["followup_unrelated"]
            bucket["refused_history"] += figures["unrelated_refused_history"]
            by_lang = langs.setdefault(pool, {})
            for lang, answered in figures["elliptical_langs"]:
                row = by_lang.setdefault(lang, [0, 0, 0, 0])
                row[0] += 1
                row[1] += answered
            for lang in figures["unrelated_langs"]:
                by_lang.setdefault(lang, [0, 0, 0, 0])[2] += 1
            for lang in figures["carried_langs"]:
                by_lang[lang][3] += 1
            for o in report.outcomes:
                if o.kind in ("unrelated", "near_miss"):
                    bucket["unrelated_alone"] += 1
                    bucket["unrelated_alone_refused"] += not o.answered
    for pool, outcomes in pooled.items():
        print(f"## {pool} · {args.split}\n")
        print(format_report(summarise(outcomes)))
        print()
        print(
            "| lang | followup_elliptical answered | followup_unrelated refused alone, "
            "carried past the gate |"
        )
        print("| --- | ---: | ---: |")
        for lang, (n, answered, refused, carried) in sorted(langs[pool].items()):
            print(f"| {lang} | {answered}/{n} | {carried} of {refused} |")
        print()
    for pool, bucket in totals.items():
        share = bucket["unrelated_alone_refused"] / max(bucket["unrelated_alone"], 1)
        print(
            f"{pool}: uncovered questions carried past the gate by a covered turn "
            f"{bucket['carried']}; uncovered asked alone refused {share:.2f} "
            f"({bucket['unrelated_alone_refused']}/{bucket['unrelated_alone']}); "
            f"elliptical follow-ups R@5 with history "
            f"{share_cell(bucket['hits_history'], bucket['elliptical'])}, alone "
            f"{share_cell(bucket['hits_alone'], bucket['elliptical'])}; uncovered follow-ups "
            f"refused after a covered turn "
            f"{share_cell(bucket['refused_history'], bucket['followup_unrelated'])}"
        )


if __name__ == "__main__":
    main()
