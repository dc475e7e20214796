"""The browser runtime in the built site: Pyodide's core, our browser wheel, static mode's index.

`install_browser_runtime` fills ``<site_dir>/docpilot/pyodide/`` with what the widget's
worker (``widget/worker.js``, served as ``<site_dir>/docpilot/worker.js``) loads:

* the pinned Pyodide core files (``PYODIDE_FILES``), unless the owner serves Pyodide
  from a URL of their own (``pyodide_url``);
* ``docpilot_browser-<version>+<hash>-py3-none-any.whl``: the pure-Python browser core
  (``BROWSER_PACKAGES``), named by its content so a browser never pairs a cached old
  wheel with a new lock file;
* ``docpilot-lock.json``: a Pyodide lock file that lists only that wheel, so nothing is
  looked up on a CDN.

and, for static mode, writes ``<site_dir>/docpilot/static.json`` from the bundle
(`bundle.encode_static`). The browser needs no other package: not numpy, and not
msgpack either (static mode reads JSON; see `browser`).

Pyodide's binaries are never committed to git. The installed package carries them
(``docpilot_runtime/pyodide-core/``, filled by the wheel build or scripts/setup.sh; see
`pyodide_core`), already reduced and precompressed. A build finds them, in order:
``$DOCPILOT_PYODIDE_DIR``; the package's own copy; ``node_modules/pyodide`` in the
current directory or one above it, or above this package (``npm install
pyodide@<version>``); the cache directory ``~/.cache/docpilot/pyodide-<version>/`` that
``docpilot fetch-browser-runtime`` fills from the npm registry. A source holding the npm
package's raw files is reduced and compressed once into the cache. When none is found
the build warns and the widget says that its in-browser check is unavailable.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import zipfile
from base64 import urlsafe_b64encode
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docpilot_runtime import __version__
from docpilot_runtime.browser import pyodide_core
from docpilot_runtime.bundle.read import load_bundle
from docpilot_runtime.bundle.schema import BUNDLE_DIR, STATIC_NAME, Bundle, unit_column
from docpilot_runtime.bundle.shards import MANIFEST_NAME, SHARDS_DIR, encode_shards
from docpilot_runtime.bundle.write import encode_static, write_atomic
from docpilot_runtime.retrieve.lexical import release_pages

_logger = logging.getLogger("docpilot.browser")

PYODIDE_VERSION = pyodide_core.PYODIDE_VERSION
# The `info` of that version's own pyodide-lock.json: Pyodide refuses a lock file whose
# ABI differs from its own (tests/browser/test_static_assets.py compares it with node_modules).
PYODIDE_LOCK_INFO = {
    "abi_version": "2026_0",
    "arch": "wasm32",
    "platform": "emscripten_5_0_3",
    "python": "3.14.2",
}
# The npm package's files we need (its pyodide-lock.json is not: the worker passes our
# own lock file), and what the site gets from them: the same with a reduced stdlib zip,
# each file with .gz and .br siblings.
PYODIDE_FILES = pyodide_core.PYODIDE_FILES
SITE_FILES = pyodide_core.SITE_FILES
PYODIDE_DIR_ENV = "DOCPILOT_PYODIDE_DIR"
RUNTIME_DIR = "pyodide"  # under <site_dir>/docpilot/
LOCK_NAME = "docpilot-lock.json"
WHEEL_DIST = "docpilot_browser"
WHEEL_PACKAGE = "docpilot-browser"  # its name in the lock file, for loadPackage()
# The browser core: pure Python, standard library only (tests/test_layout.py holds these
# folders to that rule). The wheel ships them whole, with their data files (the credential
# rules, the social phrases, the function words: plain JSON any other engine can share),
# plus the worker's entry module.
BROWSER_PACKAGES = ("shared", "screen", "retrieve", "reply", "bundle")
BROWSER_ENTRY = ("__init__.py", "browser/__init__.py", "browser/worker.py")
# The package's own folder: the browser core's sources, and its copy of Pyodide in
# pyodide-core/ (node_modules/pyodide is also looked for above it).
CORE_DIR = PACKAGE_DIR = Path(__file__).resolve().parent.parent
PACKAGED = ("pyodide-core",)
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so equal sources give equal wheel bytes

Log = Callable[[str], None]


class BrowserRuntimeError(RuntimeError):
    """The browser runtime cannot be installed; the message says what is missing and
    the ways to provide it."""


@dataclass(frozen=True)
class PyodideSource:
    """A directory holding the pinned Pyodide core files, and how it was found.
    ``prepared``: it holds SITE_FILES with their siblings (else the npm package's files)."""

    path: Path
    origin: str
    prepared: bool = False


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/docpilot/pyodide-<version>`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "docpilot" / f"pyodide-{PYODIDE_VERSION}"


def _problem(directory: Path, names: tuple[str, ...] = PYODIDE_FILES) -> str | None:
    """Why ``directory`` is not the pinned Pyodide core, or None when it is."""
    missing = [name for name in names if not (directory / name).is_file()]
    if missing:
        return f"{directory} lacks {', '.join(missing)}"
    # pyodide.mjs names its own version as a string literal ("314.0.7").
    if f'"{PYODIDE_VERSION}"'.encode() not in (directory / "pyodide.mjs").read_bytes():
        return f"{directory} holds another Pyodide version than {PYODIDE_VERSION}"
    return None


def _upward(*starts: Path) -> list[Path]:
    """Each start and its parents, in order, each directory once."""
    seen: dict[Path, None] = {}
    for start in starts:
        seen.update(dict.fromkeys((start, *start.parents)))
    return list(seen)


def find_pyodide(start: Path | None = None) -> PyodideSource:
    """The pinned Pyodide core: ``$DOCPILOT_PYODIDE_DIR``, else the package's own copy,
    else ``node_modules/pyodide`` from ``start`` (the current directory) upward, then from
    this package upward (a source checkout), else the fetch command's cache."""
    explicit = os.environ.get(PYODIDE_DIR_ENV)
    if explicit:
        if _problem(Path(explicit), SITE_FILES) is None and pyodide_core.is_prepared(
            Path(explicit)
        ):
            return PyodideSource(Path(explicit), PYODIDE_DIR_ENV, prepared=True)
        problem = _problem(Path(explicit))
        if problem:
            raise BrowserRuntimeError(f"{PYODIDE_DIR_ENV}: {problem}")
        return PyodideSource(Path(explicit), PYODIDE_DIR_ENV)
    packaged = PACKAGE_DIR.joinpath(*PACKAGED)
    if _problem(packaged, SITE_FILES) is None and pyodide_core.is_prepared(packaged):
        return PyodideSource(packaged, "package", prepared=True)
    notes = []
    for directory in _upward((start or Path.cwd()).resolve(), PACKAGE_DIR):
        candidate = directory / "node_modules" / "pyodide"
        if candidate.is_dir():
            problem = _problem(candidate)
            if problem is None:
                return PyodideSource(candidate, "node_modules")
            notes.append(problem)
    cached = cache_dir()
    if _problem(cached) is None:
        return PyodideSource(cached, "cache")
    seen = f" (seen: {'; '.join(notes)})" if notes else ""
    raise BrowserRuntimeError(
        f"the browser runtime needs Pyodide {PYODIDE_VERSION}'s core files and none were "
        f"found{seen} (the installed package lacks its copy in {packaged}: reinstall it). "
        f"Provide them one of three ways: set {PYODIDE_DIR_ENV} to a directory "
        f"holding {', '.join(PYODIDE_FILES)}; or run `npm install pyodide@{PYODIDE_VERSION}` "
        f"in the project (node_modules/pyodide is found from the current directory upward); "
        f"or run `docpilot fetch-browser-runtime` once, which fills {cached}. "
        "Or configure a Pyodide URL to load it from at run time instead."
    )


def browser_sources() -> dict[str, bytes]:
    """The browser core's files, by their path inside the package, in a fixed order."""
    names = list(BROWSER_ENTRY)
    for package in BROWSER_PACKAGES:
        folder = CORE_DIR / package
        names += sorted(
            p.relative_to(CORE_DIR).as_posix()
            for p in folder.iterdir()
            if p.suffix in (".py", ".json")
        )
    return {name: (CORE_DIR / name).read_bytes() for name in names}


def _record_hash(data: bytes) -> str:
    digest = urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def browser_wheel() -> tuple[str, bytes]:
    """(file name, bytes) of the browser core's wheel; equal sources give equal bytes.

    Its version carries a hash of the sources as a local label (``0.1.0+1a2b3c4d``)."""
    sources = browser_sources()
    content = hashlib.sha256()
    for name, data in sources.items():
        content.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    version = f"{__version__}+{content.hexdigest()[:12]}"
    info_dir = f"{WHEEL_DIST}-{version}.dist-info"
    files = {f"docpilot_runtime/{name}": data for name, data in sources.items()}
    files[f"{info_dir}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {WHEEL_PACKAGE}\nVersion: {version}\n"
        "Summary: DocPilot's browser core (credential check, social openers, lexical "
        "static mode), for Pyodide\n"
    ).encode()
    files[f"{info_dir}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: docpilot\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files.items()]
    files[f"{info_dir}/RECORD"] = ("\n".join([*record, f"{info_dir}/RECORD,,"]) + "\n").encode()
    buffer = _zip(files)
    return f"{WHEEL_DIST}-{version}-py3-none-any.whl", buffer


def _zip(files: dict[str, bytes]) -> bytes:
    with tempfile.SpooledTemporaryFile() as raw:
        with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
            for path, data in files.items():
                entry = zipfile.ZipInfo(path, date_time=_ZIP_TIME)
                entry.external_attr = 0o644 << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(entry, data)
        raw.seek(0)
        return raw.read()


def browser_lock(wheel_name: str, wheel: bytes) -> dict[str, Any]:
    """A Pyodide lock file listing only the browser wheel (relative to the lock file)."""
    version = wheel_name.split("-")[1]
    return {
        "info": dict(PYODIDE_LOCK_INFO),
        "packages": {
            WHEEL_PACKAGE: {
                "name": WHEEL_PACKAGE,
                "version": version,
                "file_name": wheel_name,
                "install_dir": "site",
                "sha256": hashlib.sha256(wheel).hexdigest(),
                "package_type": "package",
                "imports": ["docpilot_runtime"],
                "depends": [],
                "unvendored_tests": False,
            }
        },
    }


def _write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    write_atomic(path, data)
    return True


def _copy_if_changed(source: Path, target: Path) -> bool:
    """Copy unless ``target`` already has the source's size and modification time
    (copy2 keeps the time, so an unchanged rebuild copies nothing)."""
    src = source.stat()
    try:
        dst = target.stat()
        if dst.st_size == src.st_size and dst.st_mtime_ns == src.st_mtime_ns:
            return False
    except FileNotFoundError:
        pass
    partial = target.with_name(f".{target.name}.tmp")
    shutil.copy2(source, partial)
    os.replace(partial, target)
    return True


def write_static_index(site_dir: str | os.PathLike[str], bundle: Bundle | None = None) -> Path:
    """Write ``<site_dir>/docpilot/static.json`` from the site's decoded bundle (the one
    the build just wrote, in memory; read from the site only when not given). Unchanged
    bytes are not rewritten; return its path."""
    if bundle is None:
        bundle = load_bundle(site_dir)
    path = Path(site_dir) / BUNDLE_DIR / STATIC_NAME
    _write_if_changed(path, encode_static(bundle))
    return path


def write_sharded_index(
    site_dir: str | os.PathLike[str], bundle: Bundle, precompress: bool = True
) -> Path:
    """Write the sharded static index (``bundle.shards``) into ``<site_dir>/docpilot/
    static/``, each file with .gz/.br siblings (``precompress``); files of an earlier
    build that are no longer named are removed. Return the manifest's path."""
    units = bundle.units
    titles, crumbs = unit_column(units, "title"), unit_column(units, "breadcrumb")
    release = release_pages(zip(titles, crumbs, unit_column(units, "page"), strict=True))
    shards = encode_shards(bundle, release)
    root = Path(site_dir) / BUNDLE_DIR / SHARDS_DIR
    wanted: set[Path] = set()
    for name, data in shards.files.items():
        path = root / name
        wanted.add(path)
        _write_if_changed(path, data)
        if precompress:
            # Content-addressed names never change content: compress only new files.
            fresh = name == MANIFEST_NAME or not path.with_name(path.name + ".gz").is_file()
            for suffix, packed in pyodide_core.compressed(data, pyodide_core.QUICK).items():
                wanted.add(path.with_name(path.name + suffix))
                if fresh:
                    _write_if_changed(path.with_name(path.name + suffix), packed)
    for old in list(root.rglob("*")):
        if old.is_file() and old not in wanted:
            old.unlink()
    return root / MANIFEST_NAME


def _site_files(source: PyodideSource) -> Path:
    """A directory holding SITE_FILES and their siblings for ``source``: itself when it is
    prepared, else a copy reduced and compressed once into the cache (keyed by the
    source's files, so a changed source is prepared again)."""
    if source.prepared:
        return source.path
    key = hashlib.sha256()
    for name in PYODIDE_FILES:
        info = (source.path / name).stat()
        key.update(f"{source.path / name}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    prepared = cache_dir().with_name(f"site-files-{PYODIDE_VERSION}-{key.hexdigest()[:16]}")
    if not pyodide_core.is_prepared(prepared):
        pyodide_core.prepare(source.path, prepared, quality=pyodide_core.QUICK)
    return prepared


def install_browser_runtime(
    site_dir: str | os.PathLike[str],
    pyodide_url: str | None = None,
    log: Log = _logger.info,
    static_mode: bool = True,
    bundle: Bundle | None = None,
    warn: Log = _logger.warning,
    precompress: bool = True,
) -> bool:
    """Install what the widget's worker loads into ``<site_dir>/docpilot/pyodide/``;
    return whether Pyodide's files are there (or served from ``pyodide_url``).

    With ``pyodide_url`` the worker loads Pyodide from there and no Pyodide file is
    copied (our wheel and lock file still are). Without it, SITE_FILES and their .gz/.br
    siblings are copied; when no source has them, ``warn`` says so once (a broken
    install) and the rest is installed anyway: the widget then says its in-browser check
    is unavailable and sends nothing. With ``static_mode`` the static index is written
    too (the bundle must exist by then). Idempotent: files already up to date are left
    alone, and files a previous build left that are no longer wanted are removed.
    ``precompress=False`` (`mkdocs serve`, whose server ignores .gz/.br siblings) skips
    compressing the widget's text files, static.json among them, and removes the
    siblings an earlier install left."""
    target = Path(site_dir) / BUNDLE_DIR / RUNTIME_DIR
    wanted: dict[str, bool] = {}
    source = None
    missing = None
    if not pyodide_url:
        try:
            source = find_pyodide()
        except BrowserRuntimeError as exc:
            missing = str(exc)
    target.mkdir(parents=True, exist_ok=True)
    if source is not None:
        files = _site_files(source)
        for name in SITE_FILES:
            for suffix in ("", *pyodide_core.ENCODINGS):
                if (files / f"{name}{suffix}").is_file():
                    wanted[name + suffix] = _copy_if_changed(
                        files / f"{name}{suffix}", target / f"{name}{suffix}"
                    )
    wheel_name, wheel = browser_wheel()
    wanted[wheel_name] = _write_if_changed(target / wheel_name, wheel)
    lock = json.dumps(browser_lock(wheel_name, wheel), indent=1, sort_keys=True) + "\n"
    wanted[LOCK_NAME] = _write_if_changed(target / LOCK_NAME, lock.encode())
    for suffix, packed in pyodide_core.compressed(lock.encode(), pyodide_core.QUICK).items():
        wanted[LOCK_NAME + suffix] = _write_if_changed(target / f"{LOCK_NAME}{suffix}", packed)
    for stale in target.iterdir():
        if stale.name not in wanted and stale.is_file():
            stale.unlink()
    if static_mode:
        if bundle is None:
            bundle = load_bundle(site_dir)
        write_static_index(site_dir, bundle)
        write_sharded_index(site_dir, bundle, precompress)
    _precompress_text(Path(site_dir) / BUNDLE_DIR, precompress)
    if missing is not None:
        warn(
            f"docpilot: the widget's in-browser check is unavailable, so it will send "
            f"nothing: {missing}"
        )
        return False
    changed = sum(wanted.values())
    where = (
        f"Pyodide from {source.origin} ({source.path})" if source else f"Pyodide at {pyodide_url}"
    )
    log(
        f"DocPilot browser runtime: {where}, {changed} of {len(wanted)} files updated"
        + (", static index written" if static_mode else "")
    )
    return True


# The widget's own text files that a reader loads before the first answer, beside the
# Pyodide files: small, so compressed on every build (QUICK takes milliseconds).
_TEXT_SUFFIXES = (".js", ".css", ".json")


def _precompress_text(directory: Path, precompress: bool = True) -> None:
    """Write .gz/.br siblings of the widget's .js/.css/.json files in ``directory``,
    rewriting only those whose content changed; drop orphans. ``precompress=False``:
    write none, and drop every sibling of such a file too (it would be stale)."""
    for path in list(directory.iterdir()):
        if not precompress:
            base = path.with_suffix("")
            if path.suffix in pyodide_core.ENCODINGS and base.suffix in _TEXT_SUFFIXES:
                path.unlink()
        elif path.suffix in _TEXT_SUFFIXES and path.is_file():
            for suffix, packed in pyodide_core.compressed(
                path.read_bytes(), pyodide_core.QUICK
            ).items():
                _write_if_changed(path.with_name(path.name + suffix), packed)
        elif path.suffix in pyodide_core.ENCODINGS and not path.with_suffix("").exists():
            path.unlink()


def fetch_browser_runtime(
    dest: str | os.PathLike[str] | None = None,
    log: Log = _logger.info,
    version: str = PYODIDE_VERSION,
) -> Path:
    """Fill ``dest`` (default: the cache directory) with Pyodide's core from the npm
    registry over HTTPS (no npm client; checked against the registry's integrity hash and,
    for the pinned version, a pinned sha256); a complete directory is left alone."""
    target = Path(dest) if dest else cache_dir().with_name(f"pyodide-{version}")
    if version == PYODIDE_VERSION and _problem(target) is None:
        log(f"Pyodide {version} is already in {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".pyodide-") as work:
        try:
            staging = pyodide_core.fetch_core(Path(work) / "core", version, log=log)
        except pyodide_core.CoreError as exc:
            raise BrowserRuntimeError(
                f"{exc}; or set {PYODIDE_DIR_ENV} to a directory holding "
                f"{', '.join(PYODIDE_FILES)}"
            ) from None
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    log(f"fetched Pyodide {version} into {target}")
    return target
