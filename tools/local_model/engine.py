"""The engine process: llama.cpp's HTTP server (xllamacpp) hosting one GGUF model.

Started by `control.start` with the pinned engine on PYTHONPATH; not meant to be run by
hand. It listens on loopback only, on the port asked for (0: a free one the kernel
picks, so parallel runs cannot collide), writes ``{"base_url", "pid"}`` to the ready
file once the model is loaded and the server listens, and exits on SIGTERM or SIGINT
(logging who sent it).
The server keeps llama-server's own defaults (sampling temperature 0.8 unless a request
says otherwise), so what a client sees is what a real llama-server would send.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

PROMPT_CACHE_MIB = 1024  # llama-server keeps up to 8 GiB of old prompts by default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--alias", required=True, help="the model id /v1/models reports")
    parser.add_argument("--ready", required=True, type=Path)
    parser.add_argument("--state", required=True, help="the state file (names this process)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--sse-ping", type=int, default=30, help="seconds (llama-server's 30)")
    args = parser.parse_args()

    # Blocked before the server's threads start, so they inherit the mask and only
    # sigwaitinfo below takes the signal (and can say who sent it).
    stopping = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stopping)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model)
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.offline = True  # never reach a model hub
    params.ui = False
    params.cache_ram_mib = PROMPT_CACHE_MIB
    params.sse_ping_interval = args.sse_ping
    server = xllamacpp.Server(params)  # returns once the model is loaded and it listens

    ready = {"base_url": server.listening_address.rstrip("/") + "/v1", "pid": os.getpid()}
    partial = args.ready.with_name(args.ready.name + ".partial")
    partial.write_text(json.dumps(ready), encoding="utf-8")
    partial.rename(args.ready)
    info = signal.sigwaitinfo(stopping)
    try:
        sender = Path(f"/proc/{info.si_pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        sender = b"?"
    print(f"engine: stopping on signal {info.si_signo} from pid {info.si_pid} "
          f"({sender.decode(errors='replace')[:300]})", file=sys.stderr, flush=True)
    del server  # its destructor stops the HTTP server and frees the model


if __name__ == "__main__":
    main()
