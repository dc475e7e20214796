"""Independent checks of the credential rules, away from the cases they were written with.

1. Fresh keys: N newly generated keys per vendor format (`credentials/make_cases.py`'s
   makers, a different seed), each in a plain sentence: the miss rate per format row.
2. Clean text that must not be flagged: chunks of Python source, and of docs and config
   text, from the installed packages (site-packages) and /usr/share/doc. Paths of secret
   scanners' own test data (detect-secrets, gitleaks) are skipped: those are held out.

    python benchmarks/bench_credentials_independent.py [--keys 300] [--chunks 20000] [--smoke]
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "runtime"))
sys.path.insert(0, str(HERE / "credentials"))

import make_cases  # noqa: E402
from docpilot_runtime.screen.credentials import find_credential  # noqa: E402

CHUNK = 2000
HELD_OUT = ("detect_secrets", "detect-secrets", "gitleaks")
DOC_SUFFIXES = {".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".yaml", ".yml"}


def fresh_keys(n: int) -> tuple[float, int, int]:
    """(worst row's miss rate, keys tried, keys missed)."""
    make_cases.RNG.seed(777)
    worst, tried, missed = 0.0, 0, 0
    for kind, origin, _env, product, make in make_cases.VENDOR_FORMATS:
        misses = sum(
            find_credential(f"My {product} call fails with {make()} — why?") is None
            for _ in range(n)
        )
        tried, missed = tried + n, missed + misses
        if misses:
            print(f"  {kind:28} {misses}/{n} missed ({origin})")
        worst = max(worst, misses / n)
    return worst, tried, missed


def chunks(roots: list[Path], suffixes: set[str], limit: int) -> Iterator[tuple[Path, str]]:
    files = sorted(
        p for root in roots if root.is_dir() for p in root.rglob("*")
        if p.suffix in suffixes and p.is_file()
        and not any(mark in str(p) for mark in HELD_OUT)
    )
    random.Random(5).shuffle(files)
    count = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for start in range(0, len(text), CHUNK):
            yield path, text[start : start + CHUNK]
            count += 1
            if count >= limit:
                return


def clean_flags(name: str, roots: list[Path], suffixes: set[str], limit: int) -> None:
    began, n, flags = time.perf_counter(), 0, []
    for path, text in chunks(roots, suffixes, limit):
        n += 1
        found = find_credential(text)
        if found is not None:
            flags.append((path, found.kind))
    print(f"| {name} | {n:,} | {len(flags)} | {time.perf_counter() - began:.1f} s |")
    for path, kind in flags:
        print(f"|   flag: {kind} in {path.name} | | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=300, help="fresh keys per format row")
    parser.add_argument("--chunks", type=int, default=20000, help="chunks per clean corpus")
    parser.add_argument("--smoke", action="store_true", help="5 keys a row, 50 chunks (a smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.keys, args.chunks = 5, 50
    print(f"fresh keys, {args.keys} per format row:")
    worst, tried, missed = fresh_keys(args.keys)
    print(f"  {len(make_cases.VENDOR_FORMATS)} rows, {tried:,} keys, {missed} missed, "
          f"worst row {worst:.1%}\n")
    site = Path(sysconfig.get_paths()["purelib"])
    print("| clean corpus | chunks | flagged | time |\n|---|---:|---:|---:|")
    clean_flags("Python source (site-packages)", [site], {".py"}, args.chunks)
    clean_flags("docs and config text", [site, Path("/usr/share/doc")], DOC_SUFFIXES,
                args.chunks)


if __name__ == "__main__":
    main()
