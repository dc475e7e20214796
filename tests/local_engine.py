"""The real local model for the `real_model` tests: llama.cpp's server with the smallest
Qwen model, through the same code as scripts/local-model.sh.

One engine serves every test process. scripts/test.sh installs it (from the registry into
the cache when missing) and starts it before pytest with ``python tests/local_engine.py
start STATE``, passing STATE in DOCPILOT_TEST_LOCAL_MODEL_STATE; a plain `pytest` without
that variable starts its own engine for the session. A failure to install or start fails
the test, it never skips. Two slots, so a request a test abandons (the deadline test)
never blocks the next test's; each slot has a 4,096-token context; one thread (two
collapse when the machine is busy, as it is while the suite runs); SSE pings every second
while a prompt is read (llama-server's default is 30 s), so the tests see them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from local_model import control
from local_model.catalogue import QWEN_05B
from local_model.install import InstallError

MODEL = QWEN_05B.key
SLOTS = 2
SLOT_CONTEXT = 4096
THREADS = 1
PING = 1  # seconds between SSE comment pings
STATE_ENV = "DOCPILOT_TEST_LOCAL_MODEL_STATE"


def start(state: Path) -> control.Running:
    """The engine with the settings the tests rely on (installed first when missing)."""
    return control.start(
        state, MODEL, ctx=SLOT_CONTEXT * SLOTS, threads=THREADS, parallel=SLOTS, sse_ping=PING
    )


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[control.Running]:
    """The running engine (``base_url`` ends in /v1): the one scripts/test.sh started, else
    one started here and stopped at the end of the session."""
    shared = os.environ.get(STATE_ENV)
    if shared:
        running = control.status(Path(shared))
        if running is None:
            pytest.fail(f"{STATE_ENV}={shared} records no running engine")
        yield running
        return
    state = tmp_path_factory.mktemp("real-model") / "engine.json"
    try:
        running = start(state)
    except (InstallError, control.EngineError) as exc:
        pytest.fail(f"the local model could not be installed or started: {exc}")
    yield running
    assert control.stop(state) == running.pid


def main(argv: list[str]) -> int:
    """``start STATE`` prints the base_url; ``stop STATE`` stops what STATE records."""
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: local_engine.py start|stop STATE", file=sys.stderr)
        return 2
    state = Path(argv[1])
    if argv[0] == "stop":
        control.stop(state)
        return 0
    try:
        print(start(state).base_url)
    except (InstallError, control.EngineError) as exc:
        print(f"local model: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
