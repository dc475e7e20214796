"""Index build speed, bundle size and bundle load time on three sites.

Sites:

(a) example-site, built with ``mkdocs build`` (plugin on, cache under benchmarks/out);
(b) the Material for MkDocs corpus, built with ``mkdocs build`` from the reduced config
    in ``tests/corpora.py``;
(c) a synthetic 5,000-page site (``synthetic_site.py``), written straight as HTML.

Each built site is then indexed with ``index_site`` directly (what ``docpilot index``
does), with the default embedder (WordLlama) loaded once beforehand:

* cold: an empty cache dir; warm: an unchanged rebuild with the same cache. Speed is
  ``units / report.index_seconds`` (reading + parsing pages, embedding, BM25, cache
  I/O; not the final encode + write). Each stage of the indexing step is timed by
  wrapping the functions ``index_site`` calls, so the table shows where the time goes.
* bundle bytes split into parts, each part msgpack-encoded on its own and gzipped at
  level 6: vectors (embedder + vectors), lexical (BM25 blocks), pages + metadata
  (everything else but units) and unit records (unit text and the rest of the record
  shown apart); beside Material's ``search/search_index.json`` of the same build.
* load: ``load_bundle`` + ``LexicalIndex`` + ``DenseIndex.from_bytes``, median of
  several warm runs; plus the same for a 10k-unit bundle made of the synthetic site's
  first pages.

Goals: >= 2,000 units/s cold; warm >= 50x faster than cold; whole bundle gzipped <=
Material's search_index.json gzipped; a 10k-unit bundle loads in <= 20 ms.

Run: ``.venv/bin/python benchmarks/bench_build.py [--quick | --only-10k | --smoke]``; ``--quick``
skips the 5,000-page site (the 10k-unit bundle is still made, from the first pages only);
``--only-10k`` indexes and times the 10k-unit bundle alone.
Everything is written under ``benchmarks/out/bench_build/``; results also go to
``benchmarks/out/bench_build/results.json``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import yaml
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import bundle_path
from docpilot_runtime.embedders import load_embedder
from docpilot_runtime.index import build
from docpilot_runtime.index.build import BuildReport, PageSource, collect_pages, index_site
from docpilot_runtime.retrieve.lexical import LexicalIndex
from docpilot_runtime.scoring.dense import DenseIndex
from docpilot_runtime.settings.embedder import EmbedderSpec
from docpilot_runtime.settings.index import IndexOptions
from docpilot_runtime.sites.loader import dense_index

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))
from corpora import EXAMPLE_SITE, MATERIAL, reduced_config  # noqa: E402
from synthetic_site import write_synthetic_site  # noqa: E402

OUT = HERE / "out" / "bench_build"
GZIP_LEVEL = 6
SYNTHETIC_PAGES = 5000
SUBSET_UNITS = 10_000
MKDOCS_ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}

GOAL_COLD_UNITS_PER_S = 2000
GOAL_WARM_SPEEDUP = 50
GOAL_LOAD_10K_MS = 20


# --------------------------------------------------------------------------- timing


class StageClock:
    """Seconds spent in each function ``index_site`` calls, for one run at a time."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - t0

        return timed


@contextmanager
def staged(clock: StageClock) -> Iterator[None]:
    """Time the indexer's stages by swapping timed wrappers into ``build``'s namespace
    (the code under test is unchanged; the wrappers cost microseconds per call)."""
    names = (
        "parse_page",
        "page_units",
        "cache_key",
        "sign_bits",
        "build_lexical",
        "calibrate_gate",
    )
    saved = {name: getattr(build, name) for name in names if hasattr(build, name)}
    saved_cache = build.EmbeddingCache

    class TimedCache(saved_cache):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            t0 = time.perf_counter()
            super().__init__(*args, **kwargs)
            clock.seconds["cache load"] += time.perf_counter() - t0

        def save(self, prune: bool = True) -> None:
            t0 = time.perf_counter()
            super().save(prune)
            clock.seconds["cache save"] += time.perf_counter() - t0

    try:
        for name, fn in saved.items():
            setattr(build, name, clock.wrap(name, fn))
        build.EmbeddingCache = TimedCache
        yield
    finally:
        for name, fn in saved.items():
            setattr(build, name, fn)
        build.EmbeddingCache = saved_cache


class TimedEmbedder:
    """The loaded embedder, with ``embed_passages`` timed into the clock."""

    def __init__(self, inner: Any, clock: StageClock) -> None:
        self.inner = inner
        self.clock = clock
        self.name, self.model, self.dims = inner.name, inner.model, inner.dims
        self.needs_centering = inner.needs_centering

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return self.clock.wrap("embedder", self.inner.embed_passages)(texts)

    def embed_query(self, text: str) -> Any:
        return self.clock.wrap("embed_query", self.inner.embed_query)(text)


STAGES = (
    ("parse_page", "parse HTML"),
    ("page_units", "sections -> units"),
    ("cache_key", "cache keys (sha256)"),
    ("cache load", "cache load"),
    ("embedder", "embedder"),
    ("sign_bits", "sign bits"),
    ("cache save", "cache save"),
    ("build_lexical", "BM25 build (tokenize)"),
    ("calibrate_gate", "gate calibration (incl. probe embedding)"),
    ("embed_query", "&nbsp;&nbsp;of which probe embedding"),
)


@dataclass
class Run:
    report: BuildReport
    stages: dict[str, float]
    cpu_seconds: float  # process CPU time of the whole index_site call (all threads)


def index_once(
    site: Path, options: IndexOptions, pages: Sequence[PageSource] | None, embedder: Any
) -> Run:
    clock = StageClock()
    cpu = time.process_time()
    with staged(clock):
        report = index_site(
            site,
            options,
            pages=pages,
            embedder=TimedEmbedder(embedder, clock),
            warn=lambda _m: None,
        )
    return Run(report, dict(clock.seconds), time.process_time() - cpu)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times) * 1e3


# --------------------------------------------------------------------------- sites


def mkdocs_build(config: Path, site_dir: Path) -> float:
    t0 = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(config), "--site-dir", str(site_dir)],
        capture_output=True,
        text=True,
        env=MKDOCS_ENV,
        cwd=config.parent,
    )
    if result.returncode != 0:
        raise SystemExit(f"mkdocs build of {config} failed:\n{result.stdout}\n{result.stderr}")
    return time.perf_counter() - t0


def example_config(workdir: Path) -> Path:
    """example-site's mkdocs.yml with absolute paths and the plugin cache under out/."""
    config = yaml.safe_load((EXAMPLE_SITE / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(EXAMPLE_SITE / config.get("docs_dir", "docs"))
    theme = config.get("theme")
    if isinstance(theme, dict) and theme.get("custom_dir"):
        theme["custom_dir"] = str(EXAMPLE_SITE / theme["custom_dir"])
    plugins = []
    for plugin in config.get("plugins", []):
        name = plugin if isinstance(plugin, str) else next(iter(plugin))
        if name == "docpilot":
            options = {} if isinstance(plugin, str) else dict(plugin[name] or {})
            options["cache_dir"] = str(workdir / "plugin-cache")
            plugin = {"docpilot": options}
        plugins.append(plugin)
    config["plugins"] = plugins
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@dataclass
class Site:
    key: str
    label: str
    site_dir: Path
    site_name: str
    pages: list[PageSource] | None = None  # None: every page of site_dir
    build_note: str = ""
    cold_runs: int = 3
    warm_runs: int = 3
    results: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- bundle size


def gz(data: bytes) -> int:
    return len(gzip.compress(data, GZIP_LEVEL, mtime=0))


def pack(value: Any) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def bundle_parts(raw: bytes) -> list[tuple[str, bytes]]:
    data = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    units = data["units"]
    meta_keys = [k for k in data if k not in ("embedder", "vectors", "lexical", "units")]
    return [
        (
            "vectors (embedder + bits)",
            pack({"embedder": data["embedder"], "vectors": data["vectors"]}),
        ),
        ("lexical (BM25 blocks)", pack(data["lexical"])),
        ("pages + metadata", pack({k: data[k] for k in meta_keys})),
        ("units: records (column-wise)", pack(units)),
        ("  of which unit text", pack(units["text"])),
        (
            "  of which id/url/title/breadcrumb/page",
            pack({k: v for k, v in units.items() if k != "text"}),
        ),
        ("  lexical: terms", pack(data["lexical"]["terms"])),
        ("  lexical: offsets", pack(data["lexical"]["offsets"])),
        ("  lexical: docs (gaps)", pack(data["lexical"]["docs"])),
        ("  lexical: tfs", pack(data["lexical"]["tfs"])),
        ("  lexical: lengths", pack(data["lexical"]["lengths"])),
    ]


def load_everything(site_dir: Path) -> tuple[Any, LexicalIndex, DenseIndex | None]:
    bundle = load_bundle(site_dir)
    return bundle, LexicalIndex(bundle.lexical), dense_index(bundle)


def load_times(site_dir: Path) -> dict[str, float]:
    """Load timings taken in a fresh interpreter, as a runtime process starting up would
    see them: a long-lived benchmark process's heap makes the garbage collector slower."""
    result = subprocess.run(
        [sys.executable, __file__, "--load-times", str(site_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    times: dict[str, float] = json.loads(result.stdout)
    return times


def measure_load(site_dir: Path, runs: int = 15) -> dict[str, float]:
    path = bundle_path(site_dir)
    raw = path.read_bytes()
    times: dict[str, float] = {}
    for name, fn in (
        ("read", path.read_bytes),
        ("unpackb", lambda: msgpack.unpackb(raw, raw=False, strict_map_key=True)),
        ("sha256", lambda: hashlib.sha256(raw).hexdigest()),
        ("load_bundle", lambda: load_bundle(site_dir)),
        ("total", lambda: load_everything(site_dir)),
    ):
        gc.collect()
        times[name] = median_ms(fn, runs)
    lexical = load_bundle(site_dir).lexical
    gc.collect()
    times["LexicalIndex"] = median_ms(lambda: LexicalIndex(lexical), runs)
    return times


# --------------------------------------------------------------------------- measuring


def measure(site: Site, embedder: Any) -> None:
    options = IndexOptions(cache_dir=str(OUT / site.key / "cache"), site_name=site.site_name)
    cache_dir = Path(options.cache_dir)
    colds: list[Run] = []
    for _ in range(site.cold_runs):
        shutil.rmtree(cache_dir, ignore_errors=True)
        colds.append(index_once(site.site_dir, options, site.pages, embedder))
    warms = [
        index_once(site.site_dir, options, site.pages, embedder) for _ in range(site.warm_runs)
    ]
    for run in warms:
        if run.report.embedded:
            raise SystemExit(f"{site.label}: warm rebuild embedded {run.report.embedded} texts")
    report = colds[0].report
    units = report.units
    cold_s = median([r.report.index_seconds for r in colds])
    warm_s = median([r.report.index_seconds for r in warms])
    raw = bundle_path(site.site_dir).read_bytes()
    search_index = site.site_dir / "search" / "search_index.json"
    site.results = {
        "pages": report.pages,
        "units": units,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "cold_total_s": median([r.report.seconds for r in colds]),
        "warm_total_s": median([r.report.seconds for r in warms]),
        "cold_cpu_s": median([r.cpu_seconds for r in colds]),
        "warm_cpu_s": median([r.cpu_seconds for r in warms]),
        "cold_stages": {k: median([r.stages.get(k, 0.0) for r in colds]) for k, _ in STAGES},
        "warm_stages": {k: median([r.stages.get(k, 0.0) for r in warms]) for k, _ in STAGES},
        "bundle_raw": len(raw),
        "bundle_gz": gz(raw),
        "parts": [(name, len(b), gz(b)) for name, b in bundle_parts(raw)],
        "search_raw": search_index.stat().st_size if search_index.exists() else None,
        "search_gz": gz(search_index.read_bytes()) if search_index.exists() else None,
        "load_ms": load_times(site.site_dir),
    }


# --------------------------------------------------------------------------- printing


def kb(n: float) -> str:
    return f"{n / 1024:,.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.2f} MiB"


def print_speed(sites: list[Site]) -> None:
    print("### Indexing speed (`report.index_seconds`, embedder already loaded)\n")
    print(
        "| site | pages | units | cold | cold units/s | warm | warm units/s | warm/cold speed-up "
        "| CPU s cold / warm (all threads) | runs (cold/warm) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sites:
        r = s.results
        print(
            f"| {s.label} | {r['pages']:,} | {r['units']:,} | {r['cold_s']:.2f} s | "
            f"{r['units'] / r['cold_s']:,.0f} | {r['warm_s']:.2f} s | {r['units'] / r['warm_s']:,.0f} | "
            f"{r['cold_s'] / r['warm_s']:.1f}x | {r['cold_cpu_s']:.2f} / {r['warm_cpu_s']:.2f} | "
            f"{s.cold_runs}/{s.warm_runs} |"
        )
    print()
    print("Where the indexing step's time goes (medians, seconds; cold / warm):\n")
    print("| stage | " + " | ".join(s.label for s in sites) + " |")
    print("|---|" + "---:|" * len(sites))
    for key, label in STAGES:
        cells = [
            f"{s.results['cold_stages'][key]:.2f} / {s.results['warm_stages'][key]:.2f}"
            for s in sites
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")
    cells = []
    for s in sites:
        r = s.results
        rest_c = r["cold_s"] - sum(v for k, v in r["cold_stages"].items() if k != "embed_query")
        rest_w = r["warm_s"] - sum(v for k, v in r["warm_stages"].items() if k != "embed_query")
        cells.append(f"{rest_c:.2f} / {rest_w:.2f}")
    print("| other (file reads, loop, centring) | " + " | ".join(cells) + " |")
    cells = [f"{s.results['cold_s']:.2f} / {s.results['warm_s']:.2f}" for s in sites]
    print("| **indexing step** | " + " | ".join(cells) + " |")
    cells = [
        f"{s.results['cold_total_s'] - s.results['cold_s']:.2f} / "
        f"{s.results['warm_total_s'] - s.results['warm_s']:.2f}"
        for s in sites
    ]
    print("| after it: encode + write bundle | " + " | ".join(cells) + " |")
    print()


def print_sizes(site: Site) -> None:
    r = site.results
    units = r["units"]
    print(f"### Bundle size: {site.label} ({units:,} units, {r['pages']:,} pages)\n")
    print("| part | raw | raw/unit | gzip -6 | gzip/unit | share of gz parts |")
    print("|---|---:|---:|---:|---:|---:|")
    main_gz = sum(g for name, _, g in r["parts"] if not name.startswith("  "))
    for name, raw, g in r["parts"]:
        share = f"{g / main_gz:.0%}" if not name.startswith("  ") else ""
        label = name.replace("  ", "&nbsp;&nbsp;")
        print(
            f"| {label} | {kb(raw)} | {raw / units:,.0f} B | {kb(g)} | {g / units:,.0f} B | {share} |"
        )
    print(
        f"| **whole bundle** | {kb(r['bundle_raw'])} | {r['bundle_raw'] / units:,.0f} B | "
        f"{kb(r['bundle_gz'])} | {r['bundle_gz'] / units:,.0f} B | |"
    )
    if r["search_raw"] is None:
        print("| Material search_index.json | n/a | | n/a | | |")
    else:
        print(
            f"| Material search_index.json | {kb(r['search_raw'])} | {r['search_raw'] / units:,.0f} B | "
            f"{kb(r['search_gz'])} | {r['search_gz'] / units:,.0f} B | |"
        )
    print()


def print_load(sites: list[Site]) -> None:
    print("### Bundle load (fresh interpreter, warm file cache, median of 15)\n")
    print(
        "| bundle | units | raw size | load_bundle + LexicalIndex + DenseIndex | of which: read file "
        "| msgpack.unpackb | sha256 of the file | load_bundle (read + unpack + sha256 + records) "
        "| LexicalIndex |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sites:
        r = s.results
        m = r["load_ms"]
        print(
            f"| {s.label} | {r['units']:,} | {kb(r['bundle_raw'])} | **{m['total']:.1f} ms** | "
            f"{m['read']:.1f} ms | {m['unpackb']:.1f} ms | {m['sha256']:.1f} ms | {m['load_bundle']:.1f} ms | {m['LexicalIndex']:.1f} ms |"
        )
    print()


def verdict(met: bool, gap: str) -> str:
    return "yes" if met else f"no: {gap}"


def print_goals(sites: list[Site], subset: Site | None) -> None:
    print("### Against the goals\n")
    print("| goal | site | measured | met? |")
    print("|---|---|---:|---|")
    for s in sites:
        ups = s.results["units"] / s.results["cold_s"]
        gap = f"{ups / GOAL_COLD_UNITS_PER_S:.0%} of the goal"
        print(
            f"| cold >= {GOAL_COLD_UNITS_PER_S:,} units/s | {s.label} | {ups:,.0f} units/s | "
            f"{verdict(ups >= GOAL_COLD_UNITS_PER_S, gap)} |"
        )
    for s in sites:
        cold, warm = s.results["cold_s"], s.results["warm_s"]
        gap = f"warm would need <= {cold / GOAL_WARM_SPEEDUP * 1e3:,.0f} ms, takes {warm * 1e3:,.0f} ms"
        print(
            f"| warm >= {GOAL_WARM_SPEEDUP}x faster than cold | {s.label} | {cold / warm:.1f}x | "
            f"{verdict(cold / warm >= GOAL_WARM_SPEEDUP, gap)} |"
        )
    for s in sites:
        r = s.results
        if r["search_gz"] is None:
            print(
                f"| bundle gz <= search_index.json gz | {s.label} | {kb(r['bundle_gz'])} vs n/a | n/a |"
            )
            continue
        ratio = r["bundle_gz"] / r["search_gz"]
        print(
            f"| bundle gz <= search_index.json gz | {s.label} | {kb(r['bundle_gz'])} vs "
            f"{kb(r['search_gz'])} ({ratio:.2f}x) | {verdict(ratio <= 1, f'{ratio:.2f}x the size')} |"
        )
    if subset is not None:
        ms = subset.results["load_ms"]["total"]
        gap = f"{ms / GOAL_LOAD_10K_MS:.1f}x the budget"
        print(
            f"| 10k-unit bundle loads in <= {GOAL_LOAD_10K_MS} ms | {subset.label} "
            f"({subset.results['units']:,} units) | {ms:.1f} ms | {verdict(ms <= GOAL_LOAD_10K_MS, gap)} |"
        )
    print()


# --------------------------------------------------------------------------- main


def first_pages_reaching(site: Site, units: int) -> list[PageSource]:
    """The synthetic site's first pages, in order, until they hold ``units`` units."""
    from docpilot_runtime.index.html_sections import parse_page
    from docpilot_runtime.index.units import page_units

    chosen: list[PageSource] = []
    total = 0
    for i, source in enumerate(collect_pages(site.site_dir)):
        parsed = parse_page(source.path.read_bytes(), str(source.path))
        total += len(page_units(parsed, source.url, i))
        chosen.append(source)
        if total >= units:
            return chosen
    raise SystemExit(f"the synthetic site holds only {total} units, fewer than {units}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="skip the 5,000-page synthetic site")
    parser.add_argument("--load-times", metavar="SITE_DIR", help=argparse.SUPPRESS)
    parser.add_argument(
        "--only-10k", action="store_true", help="only the 10k-unit bundle (index it, time its load)"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="example-site and a 300-unit synthetic subset, one run each (a smoke)",
    )
    args = parser.parse_args()
    if args.load_times:
        print(json.dumps(measure_load(Path(args.load_times))))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    load_at_start = os.getloadavg()[0]  # other work on the machine slows every figure below

    t0 = time.perf_counter()
    embedder = load_embedder(EmbedderSpec())
    load_s = time.perf_counter() - t0
    sites: list[Site] = []

    if args.only_10k:
        pass
    elif (EXAMPLE_SITE / "mkdocs.yml").exists():
        config = example_config(OUT / "example")
        seconds = mkdocs_build(config, OUT / "example" / "site")
        runs = 1 if args.smoke else 3
        sites.append(
            Site(
                "example",
                "(a) example-site",
                OUT / "example" / "site",
                "DocPilot",
                build_note=f"mkdocs build {seconds:.1f} s",
                cold_runs=runs,
                warm_runs=runs,
            )
        )
    else:
        print("(a) example-site: example-site/mkdocs.yml is not there yet; skipped\n")

    config = reduced_config(
        MATERIAL, OUT / "material", {"cache_dir": str(OUT / "material" / "plugin-cache")}
    )
    if not args.smoke:
        seconds = 0.0 if args.only_10k else mkdocs_build(config, OUT / "material" / "site")
        sites.append(
            Site(
                "material",
                "(b) Material corpus",
                OUT / "material" / "site",
                "Material for MkDocs",
                build_note=f"mkdocs build {seconds:.1f} s",
            )
        )

    synthetic_dir = OUT / "synthetic" / "site"
    shutil.rmtree(synthetic_dir, ignore_errors=True)
    pages = 60 if args.smoke else 2000 if args.quick else SYNTHETIC_PAGES
    t0 = time.perf_counter()
    write_synthetic_site(synthetic_dir, pages)
    synthetic = Site(
        "synthetic",
        f"(c) synthetic {SYNTHETIC_PAGES:,} pages",
        synthetic_dir,
        "Synthetic Docs",
        build_note=f"written in {time.perf_counter() - t0:.1f} s",
        cold_runs=1,
        warm_runs=2,
    )
    if args.only_10k:
        sites.clear()
    elif not (args.quick or args.smoke):
        sites.append(synthetic)

    target = 300 if args.smoke else SUBSET_UNITS
    subset_pages = first_pages_reaching(synthetic, target)
    subset = Site(
        "subset10k",
        f"synthetic, first pages to {target:,} units",
        OUT / "subset10k" / "site",
        "Synthetic Docs",
        pages=subset_pages,
        cold_runs=1,
        warm_runs=1,
    )
    subset.site_dir.mkdir(parents=True, exist_ok=True)

    for site in [*sites, subset]:
        print(f"indexing {site.label} ...", file=sys.stderr, flush=True)
        measure(site, embedder)

    print(
        f"# bench_build: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"numpy {np.__version__}, {time.strftime('%Y-%m-%d %H:%M')}, load average at start "
        f"{load_at_start:.2f}, at end {os.getloadavg()[0]:.2f} (1 min)"
    )
    print(
        f"# embedder wordllama/{embedder.model} {embedder.dims} dims, loaded once in {load_s:.2f} s "
        "(not counted below); "
        + "; ".join(f"{s.label}: {s.build_note}" for s in sites if s.build_note)
    )
    print()
    print_speed(sites)
    for site in [*sites, subset]:
        print_sizes(site)
    print_load([*sites, subset])
    print_goals(sites, subset)

    if args.smoke:
        return  # a smoke's figures mean nothing: keep the last full run's results.json
    results = {s.key: s.results for s in [*sites, subset]}
    (OUT / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
