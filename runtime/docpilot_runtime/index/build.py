"""Index a built site: pages -> units -> vectors + BM25 + gate -> the bundle.

`index_site` is the one entry point; the MkDocs plugin and `docpilot index` both
call it. Nothing is written until everything has succeeded, and the bundle is
written atomically, so a failed build leaves the previous bundle in place.

Just over 500 lines because the build's steps share one set of options and one report
(units, exclusions, the embedding cache, calibration, the manifest); each step is a
function here so the order a build runs in reads top to bottom in one file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import hashlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
import numpy as np

from docpilot_runtime import __version__
from docpilot_runtime.bundle.read import parse_bundle
from docpilot_runtime.bundle.schema import (
    BUNDLE_DIR,
    VERSION,
    Bundle,
    BundleError,
    EmbedderInfo,
    Gate,
    Page,
    SiteInfo,
    UnitRecord,
    Vectors,
    bundle_path,
)
from docpilot_runtime.bundle.write import encode_bundle, write_atomic
from docpilot_runtime.embedders import Embedder, EmbedderError, load_embedder
from docpilot_runtime.embedders.base import passage_prefix
from docpilot_runtime.index.cache import EmbeddingCache, cache_key
from docpilot_runtime.index.calibrate import calibrate_gate, calibration_fingerprint
from docpilot_runtime.index.html_sections import PageError, parse_page
from docpilot_runtime.index.llms_txt import NavEntry, write_agent_files
from docpilot_runtime.index.repeats import index_repeats_once
from docpilot_runtime.index.site_name import site_name_from_pages
from docpilot_runtime.index.tokens import cached_tokens
from docpilot_runtime.index.units import Unit, page_units, says_nothing
from docpilot_runtime.retrieve.lexical import LexicalDoc, build_lexical
from docpilot_runtime.scoring.dense import LAYOUT, DenseIndex, pack_vectors, sign_bits
from docpilot_runtime.settings.index import IndexOptions

log = logging.getLogger("docpilot.index")

_EMBED_BATCH = 512
_SKIP_FILES = {"404.html"}


class BuildError(RuntimeError):
    """The build cannot produce a bundle; the message names the page, unit or setting."""


@dataclass(frozen=True)
class PageSource:
    """A built page: where its HTML is, the URL it is served at, and whether the owner
    excluded it from the assistant (front matter, passed on by the plugin)."""

    path: Path
    url: str  # site-root-relative with a leading slash: "/", "/guide/setup/"
    excluded: bool = False
    src: str = ""  # the Markdown source path, when the generator told us
    label: str = ""  # how messages name the page (its source, "docs/guide.md"); else path
    nav_index: int | None = None  # its place in the site's nav, when the generator told us

    def name(self) -> str:
        return self.label or str(self.path)


@dataclass
class BuildReport:
    path: Path
    pages: int
    units: int
    bundle_bytes: int
    embed_calls: int  # calls into the embedder (batches)
    embedded: int  # unit texts embedded (cache misses)
    cached: int  # unit texts served from the cache
    seconds: float
    index_seconds: float  # the indexing step alone: parsing, embedding, BM25
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # per-page remarks, info-level
    probes_embedded: int = 0  # gate calibration queries embedded (cache misses)
    gate_reused: bool = False  # `serve`: the gate is this process's last calibration
    bundle: Bundle | None = None  # what was written, decoded: static.json derives from it

    def summary(self) -> str:
        reused = "; refusal gate reused from the last calibration (serve)"
        return (
            f"DocPilot: {self.units} units from {self.pages} pages, bundle "
            f"{self.bundle_bytes / 1024:.1f} KiB, {self.embed_calls} embedding calls "
            f"({self.embedded} embedded, {self.cached} cached) in {self.seconds:.2f}s"
            + (reused if self.gate_reused else "")
        )


def page_url(rel: str) -> str:
    """The URL a built file is served at: ``a/index.html`` -> ``/a/``."""
    if rel == "index.html":
        return "/"
    if rel.endswith("/index.html"):
        return "/" + rel[: -len("index.html")]
    return "/" + rel


def collect_pages(site_dir: Path) -> list[PageSource]:
    """Every HTML page of a built site, in a stable order, minus our own files."""
    pages = []
    for path in sorted(site_dir.rglob("*.html")):
        rel = path.relative_to(site_dir).as_posix()
        if rel in _SKIP_FILES or rel.startswith(BUNDLE_DIR + "/"):
            continue
        pages.append(PageSource(path=path, url=page_url(rel)))
    return pages


def is_excluded(page: PageSource, patterns: Sequence[str]) -> bool:
    names = {page.url.lstrip("/"), page.url, page.path.name}
    if page.src:
        names.add(page.src)
    return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names)


def unmatched_patterns(
    pages: Sequence[PageSource], patterns: Sequence[str], also: Sequence[str] = ()
) -> list[str]:
    """The ``exclude`` patterns that match none of ``pages`` (nor any path in ``also``:
    the sources of the project's other builds, e.g. its other languages): a typo, or a
    path written from the wrong root ("docs/guide.md" where "guide.md" is meant)."""
    return [
        p
        for p in patterns
        if not any(is_excluded(page, (p,)) for page in pages)
        and not any(fnmatch.fnmatchcase(name, p) for name in also)
    ]


def unmatched_warning(pattern: str, pages: Sequence[PageSource]) -> str:
    """What to tell the owner about a pattern that matches nothing, with what patterns
    are matched against, taken from one of the site's own pages."""
    example = next((p for p in pages if p.url != "/"), pages[0] if pages else None)
    against = "URL paths and source paths"
    if example is not None:
        against = f"URL paths ({example.url.lstrip('/')!r})"
        against += f" and source paths ({example.src!r})" if example.src else " and file names"
    return (
        f"exclude pattern {pattern!r} matches no page; patterns are matched against "
        f"{against}, `*` matching any run of characters"
    )


def _embed(
    units: list[Unit], embedder: Embedder, cache: EmbeddingCache, report: BuildReport
) -> np.ndarray:
    """Vectors for every unit, from the cache where possible."""
    embedder_id = f"{embedder.name}/{embedder.model}"
    # What the embedder reads of each unit (a slow one, only its opening): the cache key
    # hashes exactly that, so changing the prefix re-embeds. Embedders that do not say
    # read the whole text.
    chars = getattr(embedder, "passage_chars", 0)
    texts = [passage_prefix(u.embed_text(), chars) for u in units]
    keys = [cache_key(embedder_id, embedder.dims, t) for t in texts]
    out = np.zeros((len(units), embedder.dims), dtype=np.float32)
    missing: list[int] = []
    for i, key in enumerate(keys):
        hit = cache.get(key)
        if hit is None:
            missing.append(i)
        else:
            out[i] = hit
    for start in range(0, len(missing), _EMBED_BATCH):
        batch = missing[start : start + _EMBED_BATCH]
        try:
            vectors = np.asarray(embedder.embed_passages([texts[i] for i in batch]))
        except EmbedderError as exc:
            bad = getattr(exc, "index", None)
            unit = f" (unit {units[batch[bad]].id})" if bad is not None else ""
            raise BuildError(f"embedder {embedder.name!r} failed{unit}: {exc}") from exc
        report.embed_calls += 1
        if vectors.ndim != 2 or vectors.shape[0] != len(batch):
            raise BuildError(
                f"embedder {embedder.name!r} returned {vectors.shape[0]} vectors for "
                f"{len(batch)} texts (first unit {units[batch[0]].id})"
            )
        if vectors.shape[1] != embedder.dims:
            raise BuildError(
                f"embedder {embedder.name!r} returned vectors of width {vectors.shape[1]}, "
                f"declared {embedder.dims} (unit {units[batch[0]].id})"
            )
        for row, i in enumerate(batch):
            out[i] = vectors[row]
            cache.put(keys[i], vectors[row])
    report.embedded = len(missing)
    report.cached = len(units) - len(missing)
    return out


LAST_BUILD_NAME = "last-build.msgpack"


def _build_key(
    options: IndexOptions,
    embedder: Embedder | None,
    sources: Sequence[PageSource],
    contents: Sequence[bytes],
) -> bytes:
    """Everything a bundle depends on: our version, the options, the gate's calibration
    (its tunables and probes, which change between releases while they are tuned), the
    embedder and every page's url, flags and bytes. Equal keys give equal bundles."""
    digest = hashlib.sha256(f"{__version__}\0{VERSION}\0{options!r}\0".encode())
    digest.update(calibration_fingerprint())
    if embedder is not None:
        digest.update(f"{embedder.name}/{embedder.model}/{embedder.dims}\0".encode())
    for source, raw in zip(sources, contents, strict=True):
        digest.update(f"{source.url}\0{source.excluded}\0{source.src}\0".encode())
        digest.update(f"{source.nav_index}\0".encode())
        digest.update(hashlib.sha256(raw).digest())
    return digest.digest()


@dataclass
class LastBuild:
    """The previous build's bundle, kept in the cache dir: an unchanged rebuild copies it
    back (MkDocs cleans site/ on every build) instead of parsing, tokenising and
    calibrating the whole site again."""

    path: Path

    def restore(
        self,
        key: bytes,
        report: BuildReport,
        warn: Callable[[str], None],
        note: Callable[[str], None],
    ) -> bool:
        try:
            saved = msgpack.unpackb(self.path.read_bytes(), raw=False)
            if saved["key"] != key:
                return False
            bundle = saved["bundle"]
            if not (report.path.exists() and report.path.read_bytes() == bundle):
                write_atomic(report.path, bundle)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise BuildError(f"cannot write {report.path}: {exc.strerror}") from None
        except Exception:  # an unreadable record only costs a full build
            return False
        try:
            report.bundle = parse_bundle(bundle, str(report.path))
        except BundleError:
            return False  # a record of another schema version: build afresh
        report.pages, report.units = saved["pages"], saved["units"]
        report.bundle_bytes, report.cached = len(bundle), saved["units"]
        for message in saved["warnings"]:
            warn(message)
        for message in saved.get("notes", []):
            note(message)
        return True

    def save(self, key: bytes, bundle: bytes, report: BuildReport) -> None:
        record = {
            "key": key,
            "bundle": bundle,
            "pages": report.pages,
            "units": report.units,
            "warnings": list(report.warnings),
            "notes": list(report.notes),
        }
        with contextlib.suppress(OSError):  # then the next build is a full one
            write_atomic(self.path, msgpack.packb(record, use_bin_type=True))


# The last gate calibrated (or restored) in this process, per site, options and
# embedder, with the number of units it was calibrated on: under `mkdocs serve` a rebuild
# reuses it instead of running the ~260 probe searches again (``index_site``'s
# ``serve``). It is not keyed by the units' text, so after an edit it is the gate of the
# site as it was: close enough for a preview, never written by `mkdocs build`, and never
# saved as the last build. A site that grew or shrank by more than a tenth of its units
# (a page added to a small site) is calibrated again.
_LAST_GATES: dict[tuple[str, str], tuple[Gate, int]] = {}
_REUSE_UNITS_CHANGE = 0.1


def _reusable_gate(key: tuple[str, str], units: int) -> Gate | None:
    last = _LAST_GATES.get(key)
    if last is None or abs(units - last[1]) > _REUSE_UNITS_CHANGE * last[1]:
        return None
    return last[0]


def _gate_key(site: Path, options: IndexOptions, embedder: Embedder | None) -> tuple[str, str]:
    model = f"{embedder.name}/{embedder.model}/{embedder.dims}" if embedder is not None else ""
    return str(site.resolve()), f"{options!r}\0{model}"


def _check_writable(site_dir: Path) -> None:
    target = site_dir / BUNDLE_DIR
    probe = target if target.exists() else site_dir
    if not site_dir.is_dir():
        raise BuildError(f"site directory {site_dir} does not exist; build the site first")
    if not os.access(probe, os.W_OK):
        raise BuildError(f"cannot write to {probe}: the bundle would not be saved")


def index_site(
    site_dir: str | Path,
    options: IndexOptions,
    pages: Sequence[PageSource] | None = None,
    embedder: Embedder | None = None,
    warn: Callable[[str], None] | None = None,
    nav: Sequence[NavEntry] = (),
    note: Callable[[str], None] | None = None,
    serve: bool = False,
    also_sources: Sequence[str] = (),
) -> BuildReport:
    """Index a built site and write its bundle. Raises BuildError, writing nothing.

    ``pages`` defaults to every HTML file under ``site_dir``; ``embedder`` defaults to
    the one ``options`` names (pass one to reuse a loaded model across builds).
    ``warn`` gets what is misconfigured (a strict build fails on it); ``note`` gets
    per-page remarks (an empty page, a heading with no text), which are not.

    ``serve`` (a `mkdocs serve` rebuild, a preview): reuse the gate this process last
    calibrated for this site instead of calibrating again, keep every embedding cache
    entry (the probes' too), and do not record a bundle with a reused gate as the last
    build. Without it the bundle's bytes depend on the pages and options alone.

    ``also_sources``: source paths of the project's other builds (another language's
    pages), which an ``exclude`` pattern may be meant for: no warning that it matches no
    page of this one.
    """
    notes: list[str] = []

    def _note(message: str) -> None:
        notes.append(message)
        (note or log.info)(message)

    started = time.perf_counter()
    site = Path(site_dir)
    _check_writable(site)
    warnings: list[str] = []

    def _warn(message: str) -> None:
        warnings.append(message)
        (warn or log.warning)(message)

    report = BuildReport(
        path=bundle_path(site),
        pages=0,
        units=0,
        bundle_bytes=0,
        embed_calls=0,
        embedded=0,
        cached=0,
        seconds=0.0,
        index_seconds=0.0,
        warnings=warnings,
        notes=notes,
    )
    sources = list(pages) if pages is not None else collect_pages(site)
    contents = []
    for source in sources:
        try:
            contents.append(source.path.read_bytes())
        except OSError as exc:
            raise BuildError(f"{source.path}: cannot read ({exc.strerror})") from None
    key = _build_key(options, embedder, sources, contents)
    last = LastBuild(Path(options.cache_dir) / LAST_BUILD_NAME)
    gate_key = _gate_key(site, options, embedder)
    if last.restore(key, report, _warn, _note):
        if serve and report.bundle is not None:
            _LAST_GATES[gate_key] = (report.bundle.gate, report.units)
        write_agent_files(site, options, nav, _warn)
        report.index_seconds = report.seconds = time.perf_counter() - started
        return report
    page_rows: list[Page] = []
    units: list[Unit] = []
    for source, raw in zip(sources, contents, strict=True):
        try:
            parsed = parse_page(raw, str(source.path))
        except PageError as exc:
            raise BuildError(str(exc)) from None
        if parsed.redirect:
            continue
        if not raw.strip():
            _note(f"{source.name()}: empty page; it has no sections to index")
        index = len(page_rows)
        ids = tuple(parsed.ids)
        page_rows.append(Page(url=source.url, title=parsed.title, ids=frozenset(ids), id_order=ids))
        if source.excluded or parsed.noindex or is_excluded(source, options.exclude):
            continue
        found = page_units(
            parsed, source.url, index, options.max_section_chars, _note, source.label
        )
        if not found and raw.strip():
            _note(f"{source.name()}: no text to index")
        units.extend(found)
    for pattern in unmatched_patterns(sources, options.exclude, also_sources):
        _warn(unmatched_warning(pattern, sources))
    units = index_repeats_once(
        units,
        {s.url: s.nav_index for s in sources if s.nav_index is not None}
    )
    # A page that only lists others (a blog archive once its excerpts went to the posts)
    # is left with its title: nothing a reader should be sent to.
    units = [u for u in units if not says_nothing(u, page_rows[u.page].title)]
    report.pages = len(page_rows)
    report.units = len(units)

    if embedder is None:
        try:
            embedder = load_embedder(options.embedder)
        except EmbedderError as exc:
            raise BuildError(f"embedder setting: {exc}") from exc
    embedder_row: EmbedderInfo | None = None
    vectors_row: Vectors | None = None
    dense: DenseIndex | None = None
    cache: EmbeddingCache | None = None
    if embedder is not None:
        cache_path = Path(options.cache_dir) / f"embeddings-{embedder.name}-{embedder.dims}.msgpack"
        cache = EmbeddingCache(cache_path, embedder.dims, _warn)
        vectors = _embed(units, embedder, cache, report)
        center = None
        if embedder.needs_centering and len(units):
            center = vectors.mean(axis=0, dtype=np.float64).astype("<f4")
        bits = (
            sign_bits(vectors, center)
            if len(units)
            else np.zeros((0, embedder.dims // 8), np.uint8)
        )
        embedder_row = EmbedderInfo(
            name=embedder.name,
            model=embedder.model,
            dims=embedder.dims,
            center=center.tobytes() if center is not None else None,
        )
        packed = pack_vectors(bits)
        vectors_row = Vectors(layout=LAYOUT, dims=embedder.dims, count=len(units), bits=packed)
        no_center = np.zeros(embedder.dims, np.float32)
        dense = DenseIndex.from_bytes(
            packed, len(units), embedder.dims, center if center is not None else no_center
        )
    lexical = build_lexical(
        [LexicalDoc(u.title, " ".join(u.breadcrumb), u.text) for u in units],
        tokens=cached_tokens,
    )
    last_gate = _reusable_gate(gate_key, len(units)) if serve else None
    if last_gate is not None:
        gate, report.gate_reused = last_gate, True
    else:
        try:
            gate, report.probes_embedded = calibrate_gate(units, lexical, dense, embedder, cache)
        except EmbedderError as exc:
            raise BuildError(f"embedder failed during gate calibration: {exc}") from exc
        if serve:
            _LAST_GATES[gate_key] = (gate, len(units))
    if cache is not None:
        try:
            # An empty index (every page excluded) is a mistake to undo, not a reason to
            # drop every vector the site had.
            cache.save(prune=not serve and bool(units))
        except OSError as exc:
            _warn(f"embedding cache {cache.path} not saved ({exc.strerror}); next build re-embeds")
    report.index_seconds = time.perf_counter() - started
    built = Bundle(
        path=str(report.path),
        hash="",
        version=VERSION,
        generator=f"docpilot {__version__}",
        site=SiteInfo(
            name=options.site_name or site_name_from_pages(contents), url=options.site_url
        ),
        embedder=embedder_row,
        vectors=vectors_row,
        pages=tuple(page_rows),
        units=tuple(
            UnitRecord(u.id, u.url, u.title, tuple(u.breadcrumb), u.text, u.page) for u in units
        ),
        lexical=lexical,
        gate=gate,
        tools=tuple(dict(t) for t in options.tools),
        actions=tuple(dict(a) for a in options.actions),
    )
    payload = encode_bundle(built)
    report.bundle = dataclasses.replace(built, hash=hashlib.sha256(payload).hexdigest())
    try:
        write_atomic(report.path, payload)
    except OSError as exc:
        raise BuildError(f"cannot write {report.path}: {exc.strerror}") from None
    report.bundle_bytes = len(payload)
    if not report.gate_reused:  # the record holds only bundles a full build would write
        last.save(key, payload, report)
    write_agent_files(site, options, nav, _warn)
    report.seconds = time.perf_counter() - started
    return report
