"""The bundle schema: round trips, the version refusal, and a fuzzed decoder whose every
failure is a BundleError naming the file and the field."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from docpilot_runtime.bundle.read import decode_static, parse_bundle
from docpilot_runtime.bundle.schema import (
    WRITTEN_BY,
    Anchor,
    Bundle,
    BundleError,
    EmbedderInfo,
    Gate,
    GateParams,
    Page,
    SiteInfo,
    UnitRecord,
    Vectors,
)
from docpilot_runtime.bundle.write import encode_bundle, encode_static
from docpilot_runtime.retrieve.lexical import LexicalDoc, build_lexical
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WHERE = "site/docpilot/bundle.msgpack"
DIMS = 64
TEXTS = [
    ("Installation", "Install the package with pip on Python 3.11 or later."),
    ("API keys", "Send the key in the X-API-Key header; keys come from the dashboard."),
    ("Docker", "Run the container image with docker run and mount the config file."),
    ("Pricing", "The open-source edition is free; support plans cost extra."),
]


def _bundle() -> Bundle:
    units = tuple(
        UnitRecord(f"/p{i % 2}/#s{i}", f"/p{i % 2}/#s{i}", title, (f"Page {i % 2}",), text, i % 2)
        for i, (title, text) in enumerate(TEXTS)
    )
    lexical = build_lexical([LexicalDoc(u.title, " ".join(u.breadcrumb), u.text) for u in units])
    anchors = {n: Anchor(0.1, 0.6) for n in ("lexical_strength", "lexical_margin")}
    gate = GateParams(
        {"lexical_strength": 0.7, "lexical_margin": 0.3}, anchors, 0.4, {"covered": 3}
    )
    return Bundle(
        path=WHERE,
        hash="",
        version=2,
        generator="docpilot test",
        site=SiteInfo("Acme", "https://acme.example/"),
        embedder=EmbedderInfo("wordllama", "m", DIMS, bytes(4 * DIMS)),
        vectors=Vectors("word-major", DIMS, len(units), bytes(range(8 * len(units)))),
        pages=tuple(
            Page(f"/p{i}/", f"Page {i}", frozenset({f"s{i}", "top"}), (f"s{i}", "top"))
            for i in range(2)
        ),
        units=units,
        lexical=lexical,
        gate=Gate("test", lexical=gate),
        tools=({"name": "status", "endpoint": "https://acme.example/status"},),
        actions=({"name": "signup", "url": "https://acme.example/signup"},),
    )


RAW = encode_bundle(_bundle())
DATA = msgpack.unpackb(RAW, raw=False)


def _repack(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)  # type: ignore[no-any-return]


def _error(data: Any) -> str:
    with pytest.raises(BundleError) as caught:
        parse_bundle(_repack(data), WHERE)
    message = str(caught.value)
    assert message.startswith(WHERE + ": "), message
    return message


def test_encode_then_parse_gives_the_same_bundle_and_the_same_bytes() -> None:
    decoded = parse_bundle(RAW, WHERE)
    assert dataclasses.replace(decoded, hash="") == _bundle()
    assert decoded.pages[0].id_order == ("s0", "top")
    assert encode_bundle(decoded) == RAW


def test_units_are_stored_column_wise() -> None:
    assert set(DATA["units"]) == {"id", "url", "title", "breadcrumb", "text", "page"}
    assert DATA["units"]["text"] == [text for _, text in TEXTS]


def test_a_unit_lacking_text_names_the_field() -> None:
    data = copy.deepcopy(DATA)
    data["units"]["text"].pop(3)
    message = _error(data)
    assert "'units.text'" in message and "expected one per unit (4" in message
    data["units"]["text"] = [*DATA["units"]["text"][:3], None]
    assert "'units.text[3]' should be a string, found NoneType" in _error(data)
    del data["units"]["text"]
    assert "'units.text' should be a list, but it is missing" in _error(data)


def test_another_schema_version_is_refused_naming_its_writer_and_asking_for_a_rebuild() -> None:
    message = _error({**DATA, "version": 1})
    assert f"schema version 1 (written by {WRITTEN_BY[1]})" in message
    assert "rebuild the site" in message
    assert "not written by any docpilot release" in _error({**DATA, "version": 99})


def test_static_index_is_the_bundle_minus_vectors_and_decodes_back() -> None:
    bundle = dataclasses.replace(parse_bundle(RAW, WHERE), path="x")
    text = encode_static(bundle)
    static = decode_static(text, "static.json")
    assert static.units == bundle.units and static.lexical == bundle.lexical
    assert static.hash == bundle.hash and static.vectors is None and static.embedder is None
    broken = json.loads(text)
    broken["lexical"]["tfs"] = "not base64!"
    with pytest.raises(
        BundleError, match=r"static\.json: field 'lexical\.tfs' is not valid base64"
    ):
        decode_static(json.dumps(broken), "static.json")


# --- Fuzzing -------------------------------------------------------------------------------

# Fields a bundle may leave out (the decoder then uses a default).
OPTIONAL = {
    ("generator",),
    ("site", "url"),
    ("embedder", "model"),
    ("embedder", "center"),
    ("gate",),
    ("gate", "method"),
    ("gate", "lexical"),
    ("gate", "lexical", "samples"),
    ("tools",),
    ("actions",),
}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every map key and list index in the decoded bundle, as a path from the top."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:2]):  # two entries of each list are enough
            yield (*path, i)
            yield from _paths(item, (*path, i))


PATHS = sorted(_paths(DATA), key=repr)
KEY_PATHS = [p for p in PATHS if isinstance(p[-1], str)]


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        data = data[step]
    return data


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return 3.5
    if isinstance(value, str):
        return 7
    if isinstance(value, int | float):
        return "seven"
    if isinstance(value, bytes):
        return ["not", "bytes"]
    if isinstance(value, list):
        return {"not": "a list"}
    return ["not a map"]


def _names(path: tuple[Any, ...]) -> list[str]:
    return [p for p in path if isinstance(p, str)]


@pytest.mark.parametrize("path", KEY_PATHS, ids=lambda p: ".".join(map(str, p)))
def test_a_missing_required_field_is_named(path: tuple[Any, ...]) -> None:
    data = copy.deepcopy(DATA)
    del _parent(data, path)[path[-1]]
    extra = path[0] in ("tools", "actions") and path[-1] != "name"
    entry = len(path) == 4 and path[2] in ("samples", "weights")  # fewer entries: still valid
    if path in OPTIONAL or extra or entry:
        parse_bundle(_repack(data), WHERE)
        return
    if path[0] in ("format", "version"):
        assert path[0] in _error(data)
        return
    assert repr(path[-1])[1:-1] in _error(data)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: ".".join(map(str, p)))
def test_a_value_of_the_wrong_type_is_named(path: tuple[Any, ...]) -> None:
    data = copy.deepcopy(DATA)
    parent = _parent(data, path)
    original = parent[path[-1]]
    parent[path[-1]] = _wrong_type(original)
    if path[:1] in {("tools",), ("actions",)} and len(path) > 2 and path[-1] != "name":
        parse_bundle(_repack(data), WHERE)  # owner-declared extras: tools.py checks them
        return
    message = _error(data)
    named = _names(path)
    assert any(name in message for name in named[-1:] or named), (path, message)


@pytest.mark.parametrize("field", ["bits", "center"])
@pytest.mark.parametrize("delta", [-8, -1, 1, 8])
def test_a_vector_block_of_the_wrong_size_is_named(field: str, delta: int) -> None:
    data = copy.deepcopy(DATA)
    part = data["vectors"] if field == "bits" else data["embedder"]
    part[field] = part[field][:delta] if delta < 0 else part[field] + bytes(delta)
    assert f"'{'vectors' if field == 'bits' else 'embedder'}.{field}' holds" in _error(data)


@pytest.mark.parametrize("block", ["offsets", "docs", "tfs", "lengths"])
def test_a_lexical_block_of_the_wrong_size_is_named(block: str) -> None:
    data = copy.deepcopy(DATA)
    data["lexical"][block] = data["lexical"][block][:-1]
    assert f"lexical.{block}" in _error(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=len(RAW) - 1))
def test_a_truncated_file_is_a_bundle_error(cut: int) -> None:
    with pytest.raises(BundleError, match=f"^{WHERE}: "):
        parse_bundle(RAW[:cut], WHERE)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, len(RAW) - 1), st.integers(1, 255)), min_size=1, max_size=4)
)
def test_random_byte_flips_decode_or_fail_as_a_bundle_error(flips: list[tuple[int, int]]) -> None:
    raw = bytearray(RAW)
    for at, mask in flips:
        raw[at] ^= mask
    try:
        bundle = parse_bundle(bytes(raw), WHERE)
    except BundleError as exc:
        assert str(exc).startswith(WHERE + ": ")
    else:
        assert len(bundle.units) == len(bundle.lexical.lengths) // 4


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(PATHS),
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=True),
        st.text(max_size=5),
        st.binary(max_size=9),
        st.lists(st.integers(-1000, 1000), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(-1000, 1000), max_size=2),
    ),
)
def test_any_value_anywhere_decodes_or_fails_as_a_bundle_error(
    path: tuple[Any, ...], value: Any
) -> None:
    data = copy.deepcopy(DATA)
    _parent(data, path)[path[-1]] = value
    try:
        parse_bundle(_repack(data), WHERE)
    except BundleError as exc:
        assert str(exc).startswith(WHERE + ": ")


def test_docpilot_ask_on_a_unit_lacking_text_exits_naming_the_field(tmp_path: Path) -> None:
    data = copy.deepcopy(DATA)
    data["units"]["text"][3] = None
    target = tmp_path / "site" / "docpilot" / "bundle.msgpack"
    target.parent.mkdir(parents=True)
    target.write_bytes(_repack(data))
    docpilot = Path(sys.executable).with_name("docpilot")
    done = subprocess.run(
        [str(docpilot), "ask", str(tmp_path / "site"), "hello"], capture_output=True, text=True
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "'units.text[3]' should be a string" in done.stderr
    assert "Traceback" not in done.stderr
