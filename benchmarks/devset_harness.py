"""In-process retrieval on the dev sets, for studies that try many variants.

A real turn (``evaluation.evaluate``) rebuilds nothing but loads a runtime per bundle; a
study of twenty parameter sets over four corpora wants the searcher alone. This module
runs ``retrieval.Searcher`` over a built bundle and reads page ranks exactly as
``evaluation.outcome`` reads them from a turn's ``ranked`` list, after the same stage 3
(``Site.retrieve``), so its figures equal the turn's (``bench_lexical.py`` prints the
turn's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from docpilot_runtime.bundle.schema import Bundle, LexicalBlock
from docpilot_runtime.evaluate.figures import ranked_pages
from docpilot_runtime.evaluate.questions import EvalQuestion, load_questions
from docpilot_runtime.retrieve.lexical import LexicalDoc, build_lexical
from docpilot_runtime.retrieve.params import RetrievalParams
from docpilot_runtime.retrieve.search import DenseScorer, Searcher
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.scoring.lexical_numpy import NumpyLexical
from docpilot_runtime.shared.types import AskRequest

HERE = Path(__file__).resolve().parent
DEVSETS = HERE / "devsets"


@dataclass(frozen=True)
class Asked:
    """One answerable question as a study asks it: its text (with or without the pasted
    context) and the pages that answer it."""

    text: str
    expect: tuple[str, ...]
    request: AskRequest


def asked(corpus: str, split: str, with_context: bool) -> list[Asked]:
    """The half's answerable questions; with context, only those that have one."""
    out = []
    for q in load_questions(DEVSETS / corpus / f"{split}.jsonl"):
        if q.kind != "answerable" or (with_context and not q.context):
            continue
        request = q.request(with_context)
        out.append(Asked(request.question, q.expect_pages, request))
    return out


def question_sets(
    corpus: str, splits: Sequence[str], smoke: bool, label: str = "{corpus} {split}"
) -> dict[str, list[Asked]]:
    """Per half, the answerable questions without and then with context, labelled
    ``label`` + " ctx" + " (n)"; ``smoke``: the first eight of each."""
    sets: dict[str, list[Asked]] = {}
    for split in splits:
        for ctx in (False, True):
            qs = asked(corpus, split, ctx)[: 8 if smoke else None]
            if qs:
                name = label.format(corpus=corpus, split=split)
                sets[f"{name}{' ctx' if ctx else ''} ({len(qs)})"] = qs
    return sets


def questions(corpus: str, split: str) -> list[EvalQuestion]:
    return load_questions(DEVSETS / corpus / f"{split}.jsonl")


def lexical_block(bundle: Bundle) -> LexicalBlock:
    """The bundle's index rebuilt with the current tokenizer and index code (the same
    inputs ``index.build`` gives ``build_lexical``), so a tokenizer variant needs no
    mkdocs build."""
    docs = [LexicalDoc(u.title, " ".join(u.breadcrumb), u.text) for u in bundle.units]
    return build_lexical(docs)


def searcher(
    bundle: Bundle,
    params: RetrievalParams,
    dense: DenseScorer | None = None,
    block: LexicalBlock | None = None,
) -> Searcher:
    return Searcher(NumpyLexical(block or bundle.lexical), dense, params, bundle.units)


def page_rank(bundle: Bundle, search: Searcher, question: Asked) -> int | None:
    """1-based rank of the first expected page among the distinct ranked pages of the
    turn's stage 3 (``Site.retrieve``: the gate and the composed follow-up's rescue)."""
    retrieval = Site(prefix="/", bundle=bundle, searcher=search).retrieve(question.request)
    pages = ranked_pages(retrieval.ranked_ids())
    return next((i + 1 for i, p in enumerate(pages) if p in question.expect), None)


@dataclass(frozen=True)
class Figures:
    count: int
    r1: float
    r5: float
    mrr: float

    @staticmethod
    def of(ranks: Sequence[int | None]) -> Figures:
        n = len(ranks) or 1
        return Figures(
            count=len(ranks),
            r1=sum(r == 1 for r in ranks) / n,
            r5=sum(r is not None and r <= 5 for r in ranks) / n,
            mrr=sum(1 / r for r in ranks if r) / n,
        )

    def cells(self) -> str:
        return f"{self.r1:.2f} | {self.r5:.2f} | {self.mrr:.2f}"

    def short(self) -> str:
        return f"{self.r1:.2f}/{self.r5:.2f}"
