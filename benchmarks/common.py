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


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share ``hits / n`` (sound at 0 and at n, and
    for the small halves the dev sets have); (0, 1) when there is nothing to measure."""
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    centre = p + z * z / (2 * n)
    spread = z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5
    scale = 1 + z * z / n
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def share_cell(hits: int, n: int, interval: bool = True) -> str:
    """"0.95 [0.83, 0.99] (19/20)" (or "0.95 (19/20)"); "–" when n is 0."""
    if n <= 0:
        return "–"
    if not interval:
        return f"{hits / n:.2f} ({hits}/{n})"
    low, high = wilson(hits, n)
    return f"{hits / n:.2f} [{low:.2f}, {high:.2f}] ({hits}/{n})"
