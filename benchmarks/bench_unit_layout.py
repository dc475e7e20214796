"""Unit records column-wise (schema 2) against row-wise (schema 1), on one bundle.

The same bundle's units are re-packed as one map per unit (the old layout) and both are
decoded in turns, interleaved so that a loaded machine slows both alike: msgpack unpack
alone, and the whole read (old: unpack + sha256 + one UnitRecord per map, as the old
reader did; new: ``parse_bundle``, which also checks every field).

Run: ``.venv/bin/python benchmarks/bench_unit_layout.py BUNDLE.msgpack [RUNS]`` (the 10k
bundle is what ``bench_build.py --only-10k`` writes under benchmarks/out/bench_build/), or
``--smoke``: a 40-page synthetic site indexed lexical-only in a temporary folder, 3 runs.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
from docpilot_runtime.bundle.read import parse_bundle
from docpilot_runtime.bundle.schema import UnitRecord, bundle_path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from synthetic_site import write_synthetic_site  # noqa: E402


def smoke_bundle() -> bytes:
    """A small real bundle: 40 synthetic pages, indexed with no embedder."""
    from docpilot_runtime.index.build import index_site
    from docpilot_runtime.settings.index import IndexOptions, embedder_spec

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        write_synthetic_site(site, 40)
        index_site(site, IndexOptions(embedder=embedder_spec("none", "smoke"), site_name="S"))
        return bundle_path(site).read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("bundle", nargs="?", type=Path, help="a bundle.msgpack")
    parser.add_argument("runs", nargs="?", type=int, default=9)
    parser.add_argument("--smoke", action="store_true", help="a 40-page bundle, 3 runs")
    args = parser.parse_args()
    if args.smoke:
        raw, runs = smoke_bundle(), 3
    elif args.bundle is None:
        parser.error("give a bundle.msgpack, or --smoke")
    else:
        raw, runs = args.bundle.read_bytes(), args.runs
    data = msgpack.unpackb(raw, raw=False)
    columns = data["units"]
    rows = [
        dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)
    ]
    row_raw: bytes = msgpack.packb({**data, "units": rows}, use_bin_type=True)

    def old_reader() -> list[UnitRecord]:
        decoded: Any = msgpack.unpackb(row_raw, raw=False, strict_map_key=True)
        hashlib.sha256(row_raw).hexdigest()
        return [
            UnitRecord(
                u["id"], u["url"], u["title"], tuple(u["breadcrumb"]), u["text"], int(u["page"])
            )
            for u in decoded["units"]
        ]

    cases: dict[str, Callable[[], object]] = {
        "row-wise: unpack + sha256 + records (old reader)": old_reader,
        "column-wise: parse_bundle (checked)": lambda: parse_bundle(raw, "bundle"),
        "row-wise: msgpack unpack only": lambda: msgpack.unpackb(row_raw, raw=False),
        "column-wise: msgpack unpack only": lambda: msgpack.unpackb(raw, raw=False),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            gc.collect()
            start = time.perf_counter()
            case()
            times[name].append((time.perf_counter() - start) * 1000)
    print(
        f"{len(columns['id']):,} units; {len(row_raw):,} bytes row-wise, {len(raw):,} "
        f"column-wise; {runs} interleaved runs; load average {os.getloadavg()[0]:.1f}"
    )
    print("\n| read | median | min |\n|---|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.1f} ms | {min(values):.1f} ms |")


if __name__ == "__main__":
    main()
