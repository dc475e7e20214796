"""The sharded static index answers exactly as the whole static.json does.

Every dev-set corpus is built by `mkdocs build` and indexed with no embedder (as static
mode reads it); each question of every half (with its history and page), of the
follow-up and multilingual sets of that corpus too, is asked of both paths in the
browser core (``browser.worker``), the sharded one fetching only what it names. The
results must be equal field for field (the turn id aside), and the files fetched must
be a part of the index, not all of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from devset_sites import DEVSETS_DIR, BuiltSites, devset_names
from docpilot_runtime.browser import worker
from docpilot_runtime.browser.install import write_sharded_index, write_static_index
from docpilot_runtime.bundle.schema import BundleError
from docpilot_runtime.bundle.shards import MANIFEST_NAME, SHARDS_DIR, shard_of


def _bodies(name: str) -> list[dict[str, Any]]:
    """Every question of the set's halves, its follow-up set and its multilingual set."""
    folders = [DEVSETS_DIR / name, DEVSETS_DIR / "followups" / name]
    folders.append(DEVSETS_DIR / "multilingual" / name)
    bodies = []
    for folder in folders:
        for half in sorted(folder.glob("*.jsonl")):
            for line in half.read_text(encoding="utf-8").splitlines():
                case = json.loads(line)
                body: dict[str, Any] = {
                    "question": case["question"],
                    "history": case.get("history", []),
                }
                if case.get("page"):
                    body["page"] = "/" + case["page"].lstrip("/")
                bodies.append(body)
    return bodies


def _ask_sharded(body: dict[str, Any], root: Path, fetched: dict[str, int]) -> dict[str, Any]:
    for _ in range(8):
        got: dict[str, Any] = json.loads(worker.ask_sharded(json.dumps(body)))
        if "need" not in got:
            return got
        assert got["need"], "asked for no file"
        for name in got["need"]:
            assert name not in fetched, f"{name} asked for twice"
            data = (root / name).read_bytes()
            fetched[name] = len(data)
            worker.add_file(name, data)
    raise AssertionError(f"still asking for files after 8 rounds: {body}")


def _without_turn_id(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "turn_id"}


@pytest.mark.parametrize("name", devset_names())
def test_sharded_index_answers_every_dev_set_question_like_the_whole_file(
    name: str, built_sites: BuiltSites, tmp_path: Path
) -> None:
    site, bundle = built_sites.indexed_copy(name, tmp_path)
    static = write_static_index(site, bundle)
    manifest = write_sharded_index(site, bundle, precompress=False)
    root = site / "docpilot" / SHARDS_DIR
    worker.load_static(static.read_bytes())
    worker.load_manifest(manifest.read_bytes())
    bodies = _bodies(name)
    assert len(bodies) >= 20
    fetched: dict[str, int] = {}
    kinds = set()
    for body in bodies:
        expected = json.loads(worker.ask_static(json.dumps(body)))
        got = _ask_sharded(body, root, fetched)
        assert _without_turn_id(got) == _without_turn_id(expected), body
        kinds.add(got["kind"])
    assert {"passages", "refusal"} <= kinds
    index_bytes = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert sum(fetched.values()) < index_bytes, "every file was fetched: nothing was saved"


def test_shard_files_are_content_addressed_and_equal_bundles_give_equal_files(
    built_sites: BuiltSites, tmp_path: Path
) -> None:
    site, bundle = built_sites.indexed_copy("httpx", tmp_path)
    root = site / "docpilot" / SHARDS_DIR
    write_sharded_index(site, bundle)
    first = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    (root / "t" / "stale.bin").write_bytes(b"old")
    write_sharded_index(site, bundle)
    again = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert again == first, "a rebuild changed a file or kept a stale one"
    import hashlib

    named = [p for p in first if p.name != MANIFEST_NAME and p.suffix in (".bin", ".json")]
    assert len(named) > 3
    for path in named:
        assert path.stem == hashlib.sha256(first[path]).hexdigest()[:20], path
        assert path.with_name(path.name + ".gz").is_file(), f"{path} has no .gz sibling"
    manifest = json.loads(first[root / MANIFEST_NAME])
    shards = manifest["lexical"]["shards"]
    # A word and the corpus words it could be a cognate of share a shard.
    assert shard_of("système", len(shards)) == shard_of("systemd", len(shards))


def test_a_broken_shard_is_named_in_the_error(built_sites: BuiltSites, tmp_path: Path) -> None:
    site, bundle = built_sites.indexed_copy("uvicorn", tmp_path)
    manifest = write_sharded_index(site, bundle, precompress=False)
    worker.load_manifest(manifest.read_bytes())
    need = json.loads(worker.ask_sharded(json.dumps({"question": "How do I run uvicorn?"})))
    name = need["need"][0]
    with pytest.raises(BundleError, match=name.split("/")[-1]):
        worker.add_file(name, b"DPS1" + b"\0" * 20)
