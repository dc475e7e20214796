"""Measure the credential check on kinds it was not written with.

`credentials/catalogue.py` describes documented credential formats; a seeded hash of each
kind's id puts it in the "written" half (rules may be written looking at it) or the "unseen"
half (kept out of rule writing, measured here). `credentials/catalogue_others.py` adds the
"others" split: kinds from other scanners' rule tests and providers' documents, in the
surroundings those sources use, also kept out of rule writing. `credentials/catalogue_cases.py` places
fresh random values of each kind in reader questions and adds hard negatives. This prints
precision and recall per half for DocPilot and for detect-secrets (when installed: the test
extra brings it), recall by context, the time per question, and the misses of the written
half (the unseen half's only with --show-unseen, once the rules are settled).

    python benchmarks/bench_credentials_unseen.py [--per-kind 6] [--show-unseen] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "runtime"))
sys.path.insert(0, str(HERE / "credentials"))
sys.path.insert(0, str(HERE))

from bench_credentials import detect_secrets_check, mask, scores  # noqa: E402
from catalogue import CATALOGUE, split_of  # noqa: E402
from catalogue_cases import Case, cases  # noqa: E402
from catalogue_others import OTHERS  # noqa: E402
from docpilot_runtime.screen.credentials import find_credential  # noqa: E402


def timed(text: str, repeats: int = 3) -> tuple[bool, float]:
    """Whether the check flags `text`, and its best time of `repeats` in µs (the shared
    machine's load shows in single runs, not in the best of three)."""
    best = float("inf")
    found = False
    for _ in range(repeats):
        start = time.perf_counter()
        found = find_credential(text) is not None
        best = min(best, time.perf_counter() - start)
    return found, best * 1e6


def share(flags: list[bool]) -> str:
    return f"{statistics.mean(flags):.3f}" if flags else "–"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=6, help="positive cases per kind")
    parser.add_argument("--show-unseen", action="store_true", help="list the unseen half's misses")
    parser.add_argument("--half", choices=("written", "unseen", "others", "all"), default="all",
                        help="measure one split only (write rules with --half written)")
    parser.add_argument("--smoke", action="store_true",
                        help="1 case per kind, every 4th case, no detect-secrets (seconds)")
    args = parser.parse_args()
    per_kind = 1 if args.smoke else args.per_kind
    # detect-secrets takes most of a run's time: the smoke leaves its rows out.
    reference = None if args.smoke else detect_secrets_check()
    wanted = ("written", "unseen", "others") if args.half == "all" else (args.half,)
    halves = {split: cases(split, per_kind)[:: 4 if args.smoke else 1] for split in wanted}
    kinds = {split: len(OTHERS) if split == "others"
             else sum(split_of(k.kind) == split for k in CATALOGUE) for split in halves}

    print("| half | kinds | cases (with / without) | checker | precision | recall | F1 |")
    print("|---|---:|---:|---|---:|---:|---:|")
    results: dict[str, list[bool]] = {}
    times: list[float] = []
    for split, rows in halves.items():
        truth = [c.credential for c in rows]
        runs = [timed(c.text) for c in rows]
        predicted = [hit for hit, _ in runs]
        times += [t for _, t in runs]
        results[split] = predicted
        p, r, f = scores(truth, predicted)
        size = f"{len(rows)} ({sum(truth)} / {len(rows) - sum(truth)})"
        print(f"| {split} | {kinds[split]} | {size} | DocPilot | {p:.3f} | {r:.3f} | {f:.3f} |")
        if reference is not None:
            rp, rr, rf = scores(truth, [reference(c.text) for c in rows])
            print(f"| {split} | {kinds[split]} | {size} | detect-secrets | {rp:.3f} | {rr:.3f} "
                  f"| {rf:.3f} |")
    if reference is None:
        print("\ndetect-secrets rows left out (--smoke, or not installed: the test extra "
              "brings it)")

    print("\n| half | recall, value under its name | recall, value on its own or whole |")
    print("|---|---:|---:|")
    for split, rows in halves.items():
        named: list[bool] = []
        bare: list[bool] = []
        for c, hit in zip(rows, results[split], strict=True):
            if c.credential:
                (bare if c.context in ("question", "log", "traceback", "spanish", "german",
                                       "chinese", "curl_header", "query", "fenced", "inline",
                                       "after_prose") else named).append(hit)
        print(f"| {split} | {share(named)} | {share(bare)} |")

    ordered = sorted(times)
    print("\n| time per question (best of 3) | median µs | p99 µs | worst µs |\n|---|---:|---:|---:|")
    print(f"| all {len(times)} cases | {statistics.median(times):.0f} | "
          f"{ordered[int(0.99 * (len(ordered) - 1))]:.0f} | {ordered[-1]:.0f} |")

    for split in halves:
        if split in ("unseen", "others") and not args.show_unseen:
            continue
        show_misses(split, halves[split], results[split])


def show_misses(split: str, rows: list[Case], predicted: list[bool]) -> None:
    missed: dict[str, list[Case]] = defaultdict(list)
    flagged: list[Case] = []
    for c, hit in zip(rows, predicted, strict=True):
        if c.credential and not hit:
            missed[c.kind].append(c)
        elif hit and not c.credential:
            flagged.append(c)
    print(f"\n{split} half: {sum(map(len, missed.values()))} missed in {len(missed)} kinds, "
          f"{len(flagged)} false flags")
    for kind, rows_missed in sorted(missed.items()):
        print(f"  missed {kind} ({len(rows_missed)}): {mask(rows_missed[0].text)}")
    for c in flagged:
        print(f"  flagged [{c.kind}] {mask(c.text)}")


if __name__ == "__main__":
    main()
