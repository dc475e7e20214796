"""Start, check and stop one local engine, remembered in a state file.

The state file (JSON: pid, base_url, model, log) is the only record of what was started.
`stop` signals that pid only after checking that the process is the engine started for
this very state file (its command line names the file), so a recycled pid is never hit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalogue import MODELS
from .install import cache_root, engine_dir, model_path

TOOLS_DIR = Path(__file__).resolve().parent.parent  # holds this package
START_TIMEOUT = 600.0  # a 1.1 GB model loads in ~10 s; a loaded CI machine is slower
STOP_TIMEOUT = 30.0
POLL = 0.2


# Engines this process started, kept so their Popen objects live until `stop` reaps
# them (a Popen dropped while its child runs warns, and the child would stay a zombie).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class EngineError(RuntimeError):
    """The engine did not start, or the state file names something else."""


@dataclass(frozen=True)
class Running:
    pid: int
    base_url: str  # ends in /v1
    model: str
    log: str

    def as_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "base_url": self.base_url, "model": self.model, "log": self.log}


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie child is reaped and counts as gone)."""
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _is_ours(pid: int, state: Path) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"local_model.engine" in argv and str(state).encode() in argv


def _healthy(base_url: str) -> bool:
    root = base_url.removesuffix("/v1")
    try:
        with urllib.request.urlopen(root + "/health", timeout=5) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def status(state: Path) -> Running | None:
    """The engine this state file records, if it still runs; a stale file is removed."""
    state = state.resolve()  # the engine's command line names the absolute path
    try:
        data = json.loads(state.read_text(encoding="utf-8"))
        running = Running(int(data["pid"]), str(data["base_url"]), str(data["model"]),
                          str(data["log"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if _alive(running.pid) and _is_ours(running.pid, state):
        return running
    state.unlink(missing_ok=True)
    return None


def start(
    state: Path,
    model_key: str,
    ctx: int = 4096,
    threads: int = 1,
    parallel: int = 1,
    port: int = 0,
    timeout: float = START_TIMEOUT,
    verify: bool = False,
    sse_ping: int = 30,
) -> Running:
    """Install what is missing, start the engine, wait until /health answers 200."""
    state = state.resolve()
    running = status(state)
    if running is not None:
        if running.model != model_key:
            raise EngineError(f"{state} already records {running.model} (pid {running.pid}); "
                              "stop it first")
        return running
    if model_key not in MODELS:
        raise EngineError(f"unknown model {model_key!r}; known: {', '.join(MODELS)}")
    root = cache_root()
    engine = engine_dir(root)
    gguf = model_path(MODELS[model_key], root, verify=verify)
    state.parent.mkdir(parents=True, exist_ok=True)
    ready = state.with_name(state.name + ".ready")
    ready.unlink(missing_ok=True)
    log = state.with_name(state.name + ".log")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(engine), str(TOOLS_DIR)])}
    argv = [
        sys.executable, "-m", "local_model.engine", "--model", str(gguf), "--alias", model_key,
        "--ready", str(ready), "--state", str(state), "--port", str(port), "--ctx", str(ctx),
        "--threads", str(threads), "--parallel", str(parallel), "--sse-ping", str(sse_ping),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                   env=env, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not ready.is_file():
            if process.poll() is not None:
                raise EngineError(f"the engine exited with code {process.returncode} while "
                                  f"loading {model_key}; its log: {log}")
            if time.monotonic() > deadline:
                raise EngineError(f"the engine did not load {model_key} within {timeout:g} s; "
                                  f"its log: {log}")
            time.sleep(POLL)
        base_url = str(json.loads(ready.read_text(encoding="utf-8"))["base_url"])
        while not _healthy(base_url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise EngineError(f"{base_url} never answered /health with 200; log: {log}")
            time.sleep(POLL)
    except BaseException:
        process.terminate()
        process.wait(STOP_TIMEOUT)
        raise
    finally:
        ready.unlink(missing_ok=True)
    _CHILDREN[process.pid] = process
    running = Running(process.pid, base_url, model_key, str(log))
    state.write_text(json.dumps(running.as_json()), encoding="utf-8")
    return running


def stop(state: Path, timeout: float = STOP_TIMEOUT) -> int | None:
    """Stop the engine this state file records (SIGTERM, then SIGKILL after ``timeout``);
    returns its pid, or None when nothing of ours was running."""
    state = state.resolve()
    running = status(state)
    if running is None:
        return None
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(running.pid):
        if time.monotonic() > deadline:
            os.kill(running.pid, signal.SIGKILL)
            deadline += timeout
        time.sleep(POLL)
    child = _CHILDREN.pop(running.pid, None)
    if child is not None:
        child.wait()
    state.unlink(missing_ok=True)
    return running.pid
