"""The pinned Pyodide core as the site serves it: fetched, reduced and precompressed.

Standard library only (brotli when installed), so the wheel build hook (``build_hooks.py``)
and ``scripts/setup.sh`` can run this file before the package is installed.

* `fetch_core` takes the pinned npm tarball over HTTPS from the configured npm registry
  (``$NPM_CONFIG_REGISTRY``, else ``registry=`` in an npmrc; no npm client needed), checks
  the registry's integrity hash and, for the pinned version, our own sha256.
* `prepare` writes what the worker loads (``SITE_FILES``): Pyodide's loader, its wasm,
  and a standard-library zip reduced to ``STDLIB_MODULES`` (Pyodide loads it through
  ``stdLibURL``, see widget/worker.js), each with ``.gz`` and ``.br`` siblings that
  ``docpilot serve`` sends with ``Content-Encoding`` (static hosts compress on their own).

``python pyodide_core.py --into DIR [--from node_modules/pyodide]`` does both.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

PYODIDE_VERSION = "314.0.7"
# sha256 of pyodide-<version>.tgz as the npm registry serves it (checked on every fetch,
# on top of the registry's own integrity field).
PYODIDE_TARBALL_SHA256 = "66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0"
# What the npm package must hold; its pyodide-lock.json is not needed (the worker passes
# our own lock file).
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
STDLIB_NAME = "docpilot-stdlib.zip"  # the reduced zip, loaded by the worker as stdLibURL
SITE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", STDLIB_NAME)
ENCODINGS = (".br", ".gz")  # precompressed siblings, in order of preference
REGISTRY_ENV = "NPM_CONFIG_REGISTRY"
GLOBAL_NPMRC = (Path("/etc/npmrc"),)  # where Debian's npm keeps its global config
# Every module the worker loads from the standard library zip: traced by
# tools/pyodide/trace-stdlib.mjs (boot, our wheel installed from the lock file, static
# index loaded, credential check, static answers), plus three common codecs, and
# hashlib and hmac (the credential check's JWT sample-secret test, which few questions reach).
_TRACED = """
__future__ _collections_abc _colorize _opcode_metadata _py_warnings _pyodide _pyodide._base
_pyodide._core_docs _pyodide._future_helper _pyodide._importhook _pyodide.docs_argspec
_pyodide.docstring _pyodide.jsbind _sitebuiltins _ssl _weakrefset abc annotationlib ast
asyncio asyncio.base_events asyncio.base_futures asyncio.base_subprocess asyncio.base_tasks
asyncio.constants asyncio.coroutines asyncio.events asyncio.exceptions
asyncio.format_helpers asyncio.futures asyncio.graph asyncio.locks asyncio.log
asyncio.mixins asyncio.protocols asyncio.queues asyncio.runners asyncio.selector_events
asyncio.sslproto asyncio.staggered asyncio.streams asyncio.subprocess asyncio.taskgroups
asyncio.tasks asyncio.threads asyncio.timeouts asyncio.transports asyncio.trsock
asyncio.unix_events base64 bisect bz2 codecs codeop collections collections.abc compression
compression._common compression._common._streams compression.zstd compression.zstd._zstdfile
concurrent concurrent.futures concurrent.futures._base contextlib contextvars copy copyreg
dataclasses dis email encodings encodings.aliases encodings.ascii encodings.cp437
encodings.latin_1 encodings.utf_8 encodings.utf_8_sig enum fnmatch functools genericpath
glob hashlib heapq hmac importlib importlib._abc importlib._bootstrap importlib._bootstrap_external
importlib.abc importlib.machinery importlib.metadata importlib.metadata._collections
importlib.metadata._functools importlib.metadata._itertools importlib.metadata._meta
importlib.util inspect io ipaddress json json.decoder json.encoder json.scanner keyword
linecache locale logging lzma ntpath opcode operator os os.path pathlib pathlib._os
posixpath pyodide pyodide._package_loader pyodide._state pyodide.code pyodide.common
pyodide.ffi pyodide.webloop random re re._casefix re._compiler re._constants re._parser
reprlib selectors shutil signal site socket ssl stat string struct subprocess tarfile
tempfile textwrap threading token tokenize traceback types typing urllib urllib.parse uuid
warnings weakref zipfile zipfile._path zipfile._path.glob zipimport
"""
STDLIB_MODULES = frozenset(_TRACED.split())
# Written as the reduced zip's comment: a zip reduced to another module list (an older
# set-up's) is not "prepared", so set-up and the wheel build make it again.
STDLIB_STAMP = (
    "docpilot-stdlib " + hashlib.sha256(" ".join(sorted(STDLIB_MODULES)).encode()).hexdigest()[:16]
).encode()
_GZIP_LEVEL = 9
# Brotli's best (11) takes about two minutes on the wasm, once per wheel build or set-up,
# and saves 0.4 MB over quality 7; a build that must compress on the spot uses QUICK.
BEST, QUICK = 11, 5
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)

Log = Callable[[str], None]


class CoreError(RuntimeError):
    """Pyodide's core cannot be had; the message says what failed and what to do."""


def _npmrc_registry(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        found = re.match(r"\s*registry\s*=\s*(\S+)", line)
        if found:
            return found.group(1).strip("\"'")
    return None


def npm_registry() -> str:
    """The npm registry npm itself would use: ``$NPM_CONFIG_REGISTRY`` (any case), else
    ``registry=`` in the project's, the user's or the global npmrc. No host is built in."""
    for key in (REGISTRY_ENV, REGISTRY_ENV.lower()):
        if os.environ.get(key):
            return os.environ[key].rstrip("/") + "/"
    prefix = os.environ.get("NPM_CONFIG_PREFIX") or os.environ.get("PREFIX") or ""
    places = [
        Path.cwd() / ".npmrc",
        Path(os.environ.get("NPM_CONFIG_USERCONFIG") or Path.home() / ".npmrc"),
        Path(os.environ.get("NPM_CONFIG_GLOBALCONFIG") or Path(prefix or "/usr") / "etc/npmrc"),
        *GLOBAL_NPMRC,
    ]
    for place in places:
        found = _npmrc_registry(place)
        if found:
            return found.rstrip("/") + "/"
    npm = shutil.which("npm")
    if npm:  # npm's built-in default, asked of npm itself
        import subprocess

        done = subprocess.run([npm, "config", "get", "registry"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip().startswith("http"):
            return done.stdout.strip().rstrip("/") + "/"
    raise CoreError(
        f"no npm registry is configured: set {REGISTRY_ENV} to the registry's URL, or "
        "`registry=` in ~/.npmrc"
    )


def _get(url: str) -> bytes:
    if not url.startswith("https://") and not url.startswith("http://127.0.0.1"):
        raise CoreError(f"refusing to fetch {url}: only HTTPS")
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            data: bytes = response.read()
            return data
    except OSError as exc:
        raise CoreError(f"could not fetch {url}: {exc}") from None


def fetch_tarball(version: str = PYODIDE_VERSION, log: Log = lambda _m: None) -> bytes:
    """The npm package ``pyodide@version`` as a .tgz, checked against the registry's
    integrity hash (and, for the pinned version, against PYODIDE_TARBALL_SHA256)."""
    registry = npm_registry()
    meta = json.loads(_get(f"{registry}pyodide/{version}"))
    dist = meta.get("dist") or {}
    url = dist.get("tarball")
    if not isinstance(url, str):
        raise CoreError(f"{registry}pyodide/{version}: no dist.tarball in the registry's answer")
    log(f"fetching {url}")
    data = _get(url)
    integrity = str(dist.get("integrity") or "")
    algorithm, _, expected = integrity.partition("-")
    if algorithm in ("sha512", "sha384", "sha256"):
        actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
        if actual != expected:
            raise CoreError(f"{url}: {algorithm} differs from the registry's integrity field")
    elif dist.get("shasum"):
        if hashlib.sha1(data).hexdigest() != dist["shasum"]:
            raise CoreError(f"{url}: sha1 differs from the registry's shasum")
    else:
        raise CoreError(f"{url}: the registry gives no integrity hash to check it against")
    if version == PYODIDE_VERSION and hashlib.sha256(data).hexdigest() != PYODIDE_TARBALL_SHA256:
        raise CoreError(f"{url}: sha256 differs from the pinned {PYODIDE_TARBALL_SHA256}")
    return data


def extract_core(tarball: bytes, dest: Path) -> Path:
    """Write PYODIDE_FILES and package.json from an npm tarball into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tarball)) as tar:
        for name in (*PYODIDE_FILES, "package.json"):
            member = tar.extractfile(f"package/{name}")
            if member is None:
                raise CoreError(f"the pyodide package has no file {name}")
            _write(dest / name, member.read())
    return dest


def fetch_core(dest: Path, version: str = PYODIDE_VERSION, log: Log = lambda _m: None) -> Path:
    """Fetch ``pyodide@version`` from the npm registry and extract its core into ``dest``."""
    return extract_core(fetch_tarball(version, log), dest)


def _keep(entry: str) -> bool:
    """Whether a zip entry is a module of STDLIB_MODULES (or a directory entry)."""
    if entry.endswith("/"):
        return entry.rstrip("/").replace("/", ".") in STDLIB_MODULES
    if not entry.endswith(".py"):
        return False
    module = entry.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return module in STDLIB_MODULES


def reduce_stdlib(full: bytes) -> bytes:
    """The standard library zip with only STDLIB_MODULES, stored
    uncompressed: its .br/.gz siblings then compress across files (a third the size)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(full)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target,
    ):
        for info in source.infolist():
            if _keep(info.filename):
                entry = zipfile.ZipInfo(info.filename, date_time=_ZIP_TIME)
                entry.external_attr = info.external_attr
                target.writestr(entry, source.read(info))
        target.comment = STDLIB_STAMP
    return out.getvalue()


def compressed(data: bytes, quality: int = BEST) -> dict[str, bytes]:
    """{".gz": ..., ".br": ...} for ``data`` (brotli only when the module is installed)."""
    out = {".gz": gzip.compress(data, _GZIP_LEVEL, mtime=0)}
    try:
        import brotli
    except ImportError:
        return out
    out[".br"] = brotli.compress(data, quality=quality)
    return out


def _write(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)


def is_prepared(directory: Path, version: str = PYODIDE_VERSION) -> bool:
    """Whether ``directory`` holds SITE_FILES of ``version``, each with its .gz sibling,
    the stdlib zip reduced to this STDLIB_MODULES."""
    if not all(
        (directory / f"{name}{suffix}").is_file() for name in SITE_FILES for suffix in ("", ".gz")
    ):
        return False
    try:
        with zipfile.ZipFile(directory / STDLIB_NAME) as stdlib:
            if stdlib.comment != STDLIB_STAMP:  # reduced to another module list
                return False
    except zipfile.BadZipFile:
        return False
    # pyodide.mjs names its own version as a string literal ("314.0.7").
    return f'"{version}"'.encode() in (directory / "pyodide.mjs").read_bytes()


def prepare(source: Path, dest: Path, log: Log = lambda _m: None, quality: int = BEST) -> Path:
    """Write SITE_FILES (stdlib reduced) and their .gz/.br siblings from the npm package's
    files in ``source`` into ``dest`` (replaced whole, so it is never left half done)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    final, dest = dest, Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
    for name in SITE_FILES:
        if name == STDLIB_NAME:
            data = reduce_stdlib((source / "python_stdlib.zip").read_bytes())
        else:
            data = (source / name).read_bytes()
        _write(dest / name, data)
        for suffix, packed in compressed(data, quality).items():
            _write(dest / f"{name}{suffix}", packed)
    dest.chmod(0o755)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(dest, final)
    log(f"prepared Pyodide's site files in {final}")
    return final


def sizes(directory: Path, names: Iterable[str] = SITE_FILES) -> dict[str, dict[str, int]]:
    """{file: {"": bytes, ".gz": bytes, ".br": bytes}} for what exists in ``directory``."""
    return {
        name: {
            suffix: (directory / f"{name}{suffix}").stat().st_size
            for suffix in ("", *ENCODINGS)
            if (directory / f"{name}{suffix}").is_file()
        }
        for name in names
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--into", type=Path, required=True, help="directory to fill")
    parser.add_argument("--from", dest="source", type=Path, help="npm package dir (else fetch)")
    args = parser.parse_args(argv)
    try:
        if args.source is not None:
            prepare(args.source, args.into, log=print)
        else:
            with tempfile.TemporaryDirectory() as work:
                prepare(fetch_core(Path(work), log=print), args.into, log=print)
    except (CoreError, OSError) as exc:
        print(f"pyodide_core: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
