"""Retrieval quality and the refusal gate on the development set, variant by variant.

Sites, built with ``mkdocs build`` under ``--workdir`` (default ``benchmarks/out/bench_retrieval``):

* example-site as configured (hybrid bundle: WordLlama 256-bit vectors + BM25+), and a copy
  of its mkdocs.yml with ``- docpilot: {embedder: none}`` (lexical bundle), written into the
  workdir with ``docs_dir`` pointing at ``example-site/docs``;
* the Material for MkDocs corpus, built from ``tests/corpora.py``'s ``reduced_config``, only as
  a sanity check with the 15 questions in ``MATERIAL_QUESTIONS`` below (written by reading
  its pages; nothing is tuned on them).

Questions go through ``Site.retrieve`` exactly as the runtime asks them: a follow-up carries
its ``history_question`` as one earlier answered turn, so the composed channel can rescue it.
For each variant:

* page recall@1 / @5 over the ``expect: answer`` rows: the first distinct pages of
  ``Retrieval.ranking.order`` against the row's ``pages`` (any one counts);
* gate accuracy: ``passed`` equals ``expect == "answer"``, overall and per kind;
* mean confidence per kind;
* follow-ups: how many pass asked alone, how many pass with their history, and how many of
  those were ``rescued`` by the composed question.

Variants are ``RetrievalParams`` values (``dataclasses.replace`` of the defaults):
``rerank`` fused / dense x the dense leg's ``dense_weight`` 1.0 / 0.5, and lexical only
(the hybrid bundle with no dense index),
beside the ``embedder: none`` bundle. The gate reads raw channel signals, not the fused
order, so its columns move only between hybrid and lexical; recall moves with the variant.

The output holds no timings and is the same on every run for the same tree.

Run: ``.venv/bin/python benchmarks/bench_retrieval.py [--workdir DIR] [--no-material | --smoke]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import tree_state
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, Rerank
from docpilot_runtime.retrieve.search import Searcher
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.shared.types import AskRequest, HistoryItem
from docpilot_runtime.sites.loader import load_site

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
from corpora import EXAMPLE_SITE, MATERIAL, reduced_config  # noqa: E402

DEVSET = HERE / "devset" / "example-site.jsonl"
KINDS = ("covered", "paraphrase", "follow-up", "near-miss", "off-topic")
KIND_SHORT = {
    "covered": "cov",
    "paraphrase": "para",
    "follow-up": "fup",
    "near-miss": "near",
    "off-topic": "off",
}


def _q(question: str, expect: str, pages: Sequence[str], kind: str) -> dict[str, Any]:
    return {
        "question": question,
        "expect": expect,
        "pages": list(pages),
        "kind": kind,
        "history_question": None,
    }


# Written from reading the pages named (setup/, reference/, publishing-your-site.md); the
# near-misses were checked with `grep -ri` over the corpus's docs/ (no "pdf", "password",
# "single sign", "wordpress"). A sanity check of the shape of the results, not a benchmark.
MATERIAL_QUESTIONS = [
    _q("How do I make an admonition collapsible?", "answer", ["reference/admonitions/"], "covered"),
    _q("How do I add a back-to-top button?", "answer", ["setup/setting-up-navigation/"], "covered"),
    _q(
        "How do I add a copy button to code blocks?",
        "answer",
        ["reference/code-blocks/"],
        "covered",
    ),
    _q("How do I render math formulas with KaTeX?", "answer", ["reference/math/"], "covered"),
    _q(
        "How do I add Giscus comments below my pages?",
        "answer",
        ["setup/adding-a-comment-system/"],
        "covered",
    ),
    _q(
        "How do I publish my site to GitHub Pages with GitHub Actions?",
        "answer",
        ["publishing-your-site/"],
        "covered",
    ),
    _q(
        "How do I show a warning to readers who are looking at an old release of the docs?",
        "answer",
        ["setup/setting-up-versioning/"],
        "paraphrase",
    ),
    _q(
        "Can readers switch between a light and a dark look?",
        "answer",
        ["setup/changing-the-colors/"],
        "paraphrase",
    ),
    _q(
        "How do I stop the theme from fetching its typefaces from Google?",
        "answer",
        ["setup/changing-the-fonts/", "setup/ensuring-data-privacy/"],
        "paraphrase",
    ),
    _q(
        "Can I make particular lines of an example stand out?",
        "answer",
        ["reference/code-blocks/"],
        "paraphrase",
    ),
    _q(
        "How do I see how many people visit my documentation?",
        "answer",
        ["setup/setting-up-site-analytics/"],
        "paraphrase",
    ),
    _q("How do I export the whole documentation as one PDF file?", "refuse", [], "near-miss"),
    _q("How do I protect some pages with a password or single sign-on?", "refuse", [], "near-miss"),
    _q("Can the theme import posts from a WordPress blog?", "refuse", [], "near-miss"),
    _q("What is a good recipe for banana bread?", "refuse", [], "off-topic"),
]


@dataclass(frozen=True)
class Variant:
    name: str
    rerank: Rerank = "fused"
    dense_weight: float = DEFAULT_PARAMS.dense_weight
    lexical_only: bool = False


VARIANTS = [
    Variant("fused, dense w 1.0", "fused", 1.0),
    Variant("fused, dense w 0.5", "fused", 0.5),
    Variant("dense, dense w 1.0", "dense", 1.0),
    Variant("dense, dense w 0.5", "dense", 0.5),
    Variant("lexical only (no dense index)", lexical_only=True),
]


def with_variant(site: Site, variant: Variant) -> Site:
    """The same bundle and scorers, searched with the variant's parameters."""
    params = dataclasses.replace(
        DEFAULT_PARAMS, rerank=variant.rerank, dense_weight=variant.dense_weight
    )
    dense = None if variant.lexical_only else site.searcher.dense
    return dataclasses.replace(site, searcher=Searcher(site.searcher.lexical, dense, params, site.bundle.units))


def mkdocs_build(config: Path, site_dir: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)]
    command += ["--site-dir", str(site_dir)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"mkdocs build -f {config} failed:\n{done.stderr[-3000:]}")


def lexical_config(workdir: Path) -> Path:
    """example-site's mkdocs.yml with the plugin set to ``embedder: none``."""
    text = (EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8")
    bare, table = "  - docpilot\n", "  - docpilot:\n      "
    if text.count(bare) + text.count(table) != 1 or text.count("docs_dir: docs\n") != 1:
        raise SystemExit("example-site/mkdocs.yml changed shape: update lexical_config()")
    text = text.replace(bare, "  - docpilot: {embedder: none}\n")
    text = text.replace(table, table + "embedder: none\n      ")
    text = text.replace("docs_dir: docs\n", f"docs_dir: {EXAMPLE_SITE / 'docs'}\n")
    path = workdir / "example-lexical" / "mkdocs.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def page_url(site: Site, unit: int) -> str:
    return str(site.bundle.pages[site.bundle.units[unit].page].url)


def distinct_pages(site: Site, units: Sequence[int], limit: int) -> list[str]:
    pages: list[str] = []
    for unit in units:
        url = page_url(site, unit)
        if url not in pages:
            pages.append(url)
            if len(pages) == limit:
                break
    return pages


def request_for(row: dict[str, Any], with_history: bool = True) -> AskRequest:
    history: tuple[HistoryItem, ...] = ()
    if with_history and row.get("history_question"):
        history = (HistoryItem(question=row["history_question"], kind="answer"),)
    return AskRequest(question=row["question"], history=history)


@dataclass
class Outcome:
    recall1: int = 0
    recall5: int = 0
    answerable: int = 0
    recall5_by_kind: dict[str, int] = dataclasses.field(default_factory=dict)
    gate_right: dict[str, int] = dataclasses.field(default_factory=dict)
    rows: dict[str, int] = dataclasses.field(default_factory=dict)
    confidence: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    followups_alone: int = 0
    followups_passed: int = 0
    followups_rescued: int = 0


def evaluate(site: Site, rows: Sequence[dict[str, Any]]) -> Outcome:
    out = Outcome()
    for row in rows:
        kind, answerable = row["kind"], row["expect"] == "answer"
        result = site.retrieve(request_for(row))
        out.rows[kind] = out.rows.get(kind, 0) + 1
        out.gate_right[kind] = out.gate_right.get(kind, 0) + (result.passed == answerable)
        out.confidence.setdefault(kind, []).append(result.confidence)
        if answerable:
            gold = {"/" + p.lstrip("/") for p in row["pages"]}
            top = distinct_pages(site, result.ranking.order, 5)
            out.answerable += 1
            out.recall1 += bool(gold & set(top[:1]))
            out.recall5 += bool(gold & set(top))
            out.recall5_by_kind[kind] = out.recall5_by_kind.get(kind, 0) + bool(gold & set(top))
        if kind == "follow-up":
            alone = site.retrieve(request_for(row, with_history=False))
            out.followups_alone += alone.passed
            out.followups_passed += result.passed
            out.followups_rescued += result.rescued
    return out


def fraction(right: int, total: int) -> str:
    return f"{right}/{total}" if total else "-"


def table(title: str, results: Sequence[tuple[str, Outcome]], kinds: Sequence[str]) -> str:
    answer_kinds = [k for k in kinds if k in ("covered", "paraphrase", "follow-up")]
    head = ["variant", "R@1", "R@5", "R@5 " + "/".join(KIND_SHORT[k] for k in answer_kinds)]
    head += ["gate"]
    head += [f"gate {KIND_SHORT[k]}" for k in kinds]
    head += ["mean conf " + "/".join(KIND_SHORT[k] for k in kinds)]
    with_followups = "follow-up" in kinds
    if with_followups:
        head += ["fup pass alone", "fup pass w/ history", "of which rescued"]
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for name, o in results:
        total_rows = sum(o.rows.values())
        cells = [
            name,
            f"{o.recall1 / o.answerable:.2f} ({o.recall1}/{o.answerable})",
            f"{o.recall5 / o.answerable:.2f} ({o.recall5}/{o.answerable})",
            "/".join(str(o.recall5_by_kind.get(k, 0)) for k in answer_kinds),
            f"{sum(o.gate_right.values()) / total_rows:.2f}",
        ]
        cells += [fraction(o.gate_right.get(k, 0), o.rows.get(k, 0)) for k in kinds]
        cells.append(
            "/".join(
                f"{sum(o.confidence[k]) / len(o.confidence[k]):.0f}" if o.confidence.get(k) else "-"
                for k in kinds
            )
        )
        if with_followups:
            n = o.rows.get("follow-up", 0)
            cells += [
                fraction(o.followups_alone, n),
                fraction(o.followups_passed, n),
                str(o.followups_rescued),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_variants(
    hybrid: Site, rows: Sequence[dict[str, Any]], extra: Sequence[tuple[str, Site]] = ()
) -> list[tuple[str, Outcome]]:
    results = []
    for variant in VARIANTS:
        results.append((variant.name, evaluate(with_variant(hybrid, variant), rows)))
    for name, site in extra:
        results.append((name, evaluate(site, rows)))
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "bench_retrieval")
    parser.add_argument("--no-material", action="store_true", help="skip the Material check")
    parser.add_argument(
        "--smoke", action="store_true", help="example-site, the first 12 questions (a smoke)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.no_material = True
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    rows = [json.loads(line) for line in DEVSET.read_text(encoding="utf-8").splitlines() if line]
    if args.smoke:
        rows = rows[:12]
    hybrid_dir, lexical_dir = (
        workdir / "example-hybrid" / "site",
        workdir / "example-lexical" / "site",
    )
    mkdocs_build(EXAMPLE_SITE / "mkdocs.yml", hybrid_dir)
    mkdocs_build(lexical_config(workdir), lexical_dir)
    hybrid = load_site(hybrid_dir, "/")
    lexical = load_site(lexical_dir, "/")
    if hybrid.mode != "hybrid" or lexical.mode != "lexical":
        raise SystemExit(f"expected hybrid and lexical bundles, got {hybrid.mode}, {lexical.mode}")
    print(f"# tree: {tree_state()}")
    counts = {k: sum(r["kind"] == k for r in rows) for k in KINDS}
    print(
        f"example-site: {len(hybrid.bundle.units)} units, {len(hybrid.bundle.pages)} pages; "
        f"dev set {len(rows)} questions ("
        + ", ".join(f"{k} {n}" for k, n in counts.items())
        + f"); defaults rerank={DEFAULT_PARAMS.rerank!r}, dense_weight={DEFAULT_PARAMS.dense_weight}"
    )
    print(
        f"gate thresholds: hybrid {hybrid.gate_params('hybrid').threshold:.3f}, "
        f"lexical {hybrid.gate_params('lexical').threshold:.3f} "
        f"(embedder: none bundle {lexical.gate_params('lexical').threshold:.3f})"
    )
    print()
    results = run_variants(hybrid, rows, [("embedder: none bundle", lexical)])
    print(table(f"example-site dev set ({len(rows)} questions)", results, KINDS))

    if not args.no_material:
        config = reduced_config(MATERIAL, workdir / "material")
        mkdocs_build(config, workdir / "material" / "site")
        material = load_site(workdir / "material" / "site", "/")
        kinds = [k for k in KINDS if any(q["kind"] == k for q in MATERIAL_QUESTIONS)]
        print()
        print(
            f"Material corpus (sanity check only, not tuned on): {len(material.bundle.units)} "
            f"units, {len(material.bundle.pages)} pages, {len(MATERIAL_QUESTIONS)} questions"
        )
        print()
        print(
            table(
                f"Material corpus, {len(MATERIAL_QUESTIONS)} hand-written questions",
                run_variants(material, MATERIAL_QUESTIONS),
                kinds,
            )
        )


if __name__ == "__main__":
    main()
