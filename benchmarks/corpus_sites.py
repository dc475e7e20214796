"""The dev-set corpora every quality script measures, and how each is built.

One list, read by ``bench_gate``, ``bench_lexical``, ``bench_conversation``,
``bench_gate_signals``, ``bench_dense``, ``bench_lexical_variants`` and ``bench_languages``:
the sets made only from real threads first (``devsets.THREAD_SETS``, issue 23), then the
older hand-written ones, which are reported apart and never pooled with the real ones.
Each corpus is built with ``mkdocs build`` from its own ``mkdocs.yml`` (example-site's, or
the reduced one under ``benchmarks/corpora/<name>/``) with the DocPilot plugin switched on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEVSETS = HERE / "devsets"
sys.path.insert(0, str(DEVSETS))
from devsets import THREAD_SETS  # noqa: E402

REAL: tuple[str, ...] = THREAD_SETS
HAND_WRITTEN: tuple[str, ...] = ("example-site", "httpx", "starlette", "uvicorn")
CORPORA: tuple[str, ...] = (*REAL, *HAND_WRITTEN)
SPLITS = ("tune", "test")
# Sites whose docs are not in English (their questions are in the site's language).
SITE_LANGUAGE = {"1panel": "zh"}


def group_of(corpus: str) -> str:
    """"real" for a set made only from threads, "hand-written" for the older ones."""
    return "real" if corpus in REAL else "hand-written"


def corpus_config(corpus: str) -> Path:
    return (
        ROOT / "example-site" / "mkdocs.yml"
        if corpus == "example-site"
        else (HERE / "corpora" / corpus / "mkdocs.yml")
    )


def plugin_config(corpus: str, embedder: str | None, workdir: Path) -> Path:
    """The corpus's mkdocs.yml with the DocPilot plugin on (``embedder`` None: default)."""
    source = corpus_config(corpus)
    text = source.read_text(encoding="utf-8")
    option = f"embedder: {embedder}" if embedder else "{}"
    if corpus == "example-site":
        marker = "  - docpilot:\n"
        replacement = marker + (f"      {option}\n" if embedder else "")
    else:
        marker = "plugins:\n- search\n"
        replacement = marker + (f"- docpilot:\n    {option}\n" if embedder else "- docpilot\n")
    if text.count(marker) != 1 or text.count("docs_dir: docs\n") != 1:
        raise SystemExit(f"{source} changed shape: update plugin_config()")
    text = text.replace(marker, replacement)
    text = text.replace("docs_dir: docs\n", f"docs_dir: {source.parent / 'docs'}\n")
    path = workdir / f"{corpus}-{embedder or 'default'}" / "mkdocs.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build(corpus: str, embedder: str | None, workdir: Path, reuse: bool = False) -> Path:
    """Build the corpus under ``workdir`` (``reuse``: keep a bundle an earlier run built
    there; only safe when nothing the build reads has changed since)."""
    # Absolute: mkdocs reads a relative --site-dir against the config file's folder.
    config = plugin_config(corpus, embedder, workdir.resolve())
    site_dir = config.parent / "site"
    if reuse and (site_dir / "docpilot" / "bundle.msgpack").is_file():
        return site_dir
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    command = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)]
    done = subprocess.run(
        [*command, "--site-dir", str(site_dir)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"mkdocs build -f {config} failed:\n{done.stderr[-3000:]}")
    return site_dir
