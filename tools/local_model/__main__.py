"""``python -m local_model install|start|stop|status|models`` (PYTHONPATH=tools).

scripts/local-model.sh runs this with the project's Python. `start` prints only the
engine's base_url (…/v1) on stdout, so ``URL=$(scripts/local-model.sh start)`` works;
everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .catalogue import DEFAULT_MODEL, MODELS
from .control import TOOLS_DIR, EngineError, start, status, stop
from .install import InstallError, cache_root, engine_dir, model_path

DEFAULT_STATE = TOOLS_DIR.parent / ".cache" / "local-model" / "engine.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="local-model", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("install", "start"):
        one = sub.add_parser(name)
        one.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(MODELS))
        one.add_argument("--verify", action="store_true",
                         help="hash the cached GGUF again instead of trusting its stamp")
    run = sub.choices["start"]
    run.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    run.add_argument("--threads", type=int, default=1,
                     help="1 on a busy machine: 2 threads collapse when other work runs")
    run.add_argument("--parallel", type=int, default=1, help="slots (each gets ctx/parallel)")
    run.add_argument("--port", type=int, default=0, help="0: a free loopback port")
    for name in ("start", "stop", "status"):
        (sub.choices.get(name) or sub.add_parser(name)).add_argument(
            "--state", type=Path, default=DEFAULT_STATE, help="the pid/state file")
    sub.add_parser("models")
    args = parser.parse_args(argv)

    try:
        if args.command == "models":
            for model in MODELS.values():
                print(f"{model.key}\t{model.size / 1e6:.0f} MB\t{model.origin}\t{model.licence}")
            return 0
        if args.command == "install":
            began = time.monotonic()
            where = engine_dir()
            path = model_path(MODELS[args.model], verify=args.verify)
            print(f"engine {where}\nmodel {path}\n({time.monotonic() - began:.1f} s; "
                  f"cache {cache_root()})", file=sys.stderr)
            return 0
        if args.command == "start":
            running = start(args.state, args.model, ctx=args.ctx, threads=args.threads,
                            parallel=args.parallel, port=args.port, verify=args.verify)
            print(f"{running.model} (pid {running.pid}, log {running.log})", file=sys.stderr)
            print(running.base_url)
            return 0
        if args.command == "status":
            found = status(args.state)
            if found is None:
                print(f"not running ({args.state})", file=sys.stderr)
                return 1
            print(json.dumps(found.as_json()))
            return 0
        pid = stop(args.state)
        print(f"stopped pid {pid}" if pid else f"nothing running ({args.state})",
              file=sys.stderr)
        return 0
    except (InstallError, EngineError) as exc:
        print(f"local-model: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
