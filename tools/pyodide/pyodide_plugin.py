"""pytest plugin for runs under Pyodide (loaded by run-tests.mjs with ``-p``).

The project's pytest settings name pytest-timeout's ``timeout`` option and some tests
carry ``@pytest.mark.timeout``. pytest-timeout cannot work in Pyodide (no signals, no
threads to interrupt a test with), and without it ``--strict-markers`` and
``filterwarnings = error`` would fail the run on the unknown option and marker. This
plugin declares both and enforces nothing; scripts/test.sh bounds the whole Node
process instead.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("timeout", "per-test timeout (not enforced under Pyodide)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "timeout(seconds): per-test timeout (not enforced here)")
