"""Measure the stage-1 credential check on benchmarks/credentials/cases.jsonl.

Prints precision, recall and F1 for "does this question carry a credential", recall per
expected kind (and how often the reported kind agrees), every false positive and false
negative with long tokens masked, and timing: median microseconds per question over the
cases, and for a 2,000-character question and a pathological one.

If `detect-secrets` (Yelp) is installed, its default plugins run over the same questions as a
reference column. It is a reference only: the rules here are not tuned against it.

    python benchmarks/bench_credentials.py [--show-all] [--smoke]

``--smoke`` is the same run (it takes a few seconds), for ``benchmarks/run --quick``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "credentials" / "cases.jsonl"
sys.path.insert(0, str(HERE.parent / "runtime"))

from docpilot_runtime.screen.credentials import find_credential  # noqa: E402

_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~:%$]{12,}")


def mask(text: str) -> str:
    """Show a case without its secrets: long tokens keep four characters and their length."""
    one_line = text.replace("\n", "⏎")
    return _LONG_TOKEN.sub(lambda m: f"{m.group()[:4]}…[{len(m.group())}]", one_line)[:160]


def load_cases() -> list[dict[str, object]]:
    with CASES.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def scores(truth: list[bool], predicted: list[bool]) -> tuple[float, float, float]:
    tp = sum(t and p for t, p in zip(truth, predicted, strict=True))
    fp = sum(p and not t for t, p in zip(truth, predicted, strict=True))
    fn = sum(t and not p for t, p in zip(truth, predicted, strict=True))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def median_us(check: Callable[[str], object], texts: list[str], repeats: int = 5) -> float:
    samples = []
    for text in texts:
        best = min(_time_once(check, text) for _ in range(repeats))
        samples.append(best)
    return statistics.median(samples)


def _time_once(check: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    check(text)
    return (time.perf_counter() - start) * 1e6


def detect_secrets_check() -> Callable[[str], bool] | None:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def check(text: str) -> bool:
        with default_settings():
            return any(True for line in text.splitlines() for _ in scan_line(line))

    return check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-all", action="store_true", help="list every miss unabridged")
    parser.add_argument("--smoke", action="store_true", help="the same run (a few seconds)")
    args = parser.parse_args()
    cases = load_cases()
    texts = [str(c["text"]) for c in cases]
    truth = [bool(c["credential"]) for c in cases]
    found = [find_credential(t) for t in texts]
    predicted = [f is not None for f in found]

    precision, recall, f1 = scores(truth, predicted)
    positives = sum(truth)
    kinds = {c["kind"] for c in cases if c["credential"]}
    print(f"cases: {len(cases)} ({positives} with a credential across {len(kinds)} kinds, "
          f"{len(cases) - positives} without)")
    print("\n| checker | precision | recall | F1 |\n|---|---:|---:|---:|")
    print(f"| DocPilot `find_credential` | {precision:.3f} | {recall:.3f} | {f1:.3f} |")
    reference = detect_secrets_check()
    if reference is None:
        print("\ndetect-secrets: not installed (pip install detect-secrets), row skipped")
    else:
        ref_pred = [reference(t) for t in texts]
        rp, rr, rf = scores(truth, ref_pred)
        print(f"| detect-secrets (reference, not tuned against) | {rp:.3f} | {rr:.3f} | {rf:.3f} |")

    by_kind: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for c, f in zip(cases, found, strict=True):
        if c["credential"]:
            by_kind[str(c["kind"])].append((f is not None, f is not None and f.kind == c["kind"]))
    print("\nper-kind recall (found / cases, same kind reported):")
    for kind in sorted(by_kind):
        rows = by_kind[kind]
        hit = sum(h for h, _ in rows)
        same = sum(s for _, s in rows)
        flag = "" if hit == len(rows) else "   <-- missed"
        print(f"  {kind:32} {hit}/{len(rows)}  kind {same}/{len(rows)}{flag}")

    limit = None if args.show_all else 40
    fps = [(c, f) for c, f in zip(cases, found, strict=True) if f and not c["credential"]]
    fns = [c for c, f in zip(cases, found, strict=True) if c["credential"] and f is None]
    print(f"\nfalse positives ({len(fps)}):")
    for c, f in fps[:limit]:
        assert f is not None
        print(f"  [{f.kind}] {mask(str(c['text']))}  ({c['origin']})")
    print(f"\nfalse negatives ({len(fns)}):")
    for c in fns[:limit]:
        print(f"  [{c['kind']}] {mask(str(c['text']))}  ({c['origin']})")
    wrong_kind = [(c, f) for c, f in zip(cases, found, strict=True)
                  if f and c["credential"] and f.kind != c["kind"]]
    print(f"\nfound, but reported as another kind ({len(wrong_kind)}):")
    for c, f in wrong_kind[:limit]:
        assert f is not None
        print(f"  expected {c['kind']}, got {f.kind}: {c['origin']}")

    long_question = ("How do I configure the search plugin so that it indexes only some pages, "
                     "and where does the api_key setting go? ") * 20
    pathological = ("key=" * 500, "a" * 2000, "password: x " * 166, "-----BEGIN " * 180)
    print("\ntiming (best of 5 per question, median over questions):")
    print(f"  cases           {median_us(find_credential, texts):8.1f} µs")
    print(f"  2,000 chars     {median_us(find_credential, [long_question[:2000]]):8.1f} µs")
    print(f"  pathological    {max(median_us(find_credential, [p]) for p in pathological):8.1f} µs"
          " (worst of runs, '=', spaced keywords, PEM headers)")


if __name__ == "__main__":
    main()
