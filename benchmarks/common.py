"""Small helpers the benchmark scripts share."""

from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def tree_state() -> str:
    """The commit measured, and whether tracked files differed from it."""
    done = subprocess.run(
        ["git", "-C", str(HERE), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "unknown"
