"""Read a GGUF file's metadata (its key/value header) with the standard library only.

The weights come from registry packages whose names say nothing about what they hold, so
what names the model is the file itself: `general.name` and `general.architecture` in its
header. Arrays (the tokenizer's 150k strings) are skipped, recording only their length.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

MAGIC = b"GGUF"
MAX_KEYS = 10_000  # a real header has a few dozen; more means the file is not GGUF
MAX_STRING = 1 << 24

# GGUF value types: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
_SCALARS: dict[int, str] = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9

Value = int | float | bool | str | tuple[str, int]  # an array is ("array", length)


class GGUFError(ValueError):
    """The file is not a GGUF file we can read."""


def _read(f: BinaryIO, size: int, path: Path) -> bytes:
    data = f.read(size)
    if len(data) != size:
        raise GGUFError(f"{path}: ends inside its GGUF header")
    return data


def _unpack(f: BinaryIO, fmt: str, path: Path) -> int | float | bool:
    value: int | float | bool = struct.unpack(fmt, _read(f, struct.calcsize(fmt), path))[0]
    return value


def _string(f: BinaryIO, path: Path) -> str:
    size = int(_unpack(f, "<Q", path))
    if size > MAX_STRING:
        raise GGUFError(f"{path}: a header string of {size} bytes (limit {MAX_STRING})")
    return _read(f, size, path).decode("utf-8", errors="replace")


def _skip_array(f: BinaryIO, kind: int, count: int, path: Path) -> None:
    if kind == _STRING:
        for _ in range(count):
            f.seek(int(_unpack(f, "<Q", path)), 1)
    elif kind in _SCALARS:
        f.seek(struct.calcsize(_SCALARS[kind]) * count, 1)
    else:
        raise GGUFError(f"{path}: an array of unsupported GGUF type {kind}")


def read_metadata(path: Path) -> dict[str, Value]:
    """The header's key/value pairs (arrays as ``("array", length)``)."""
    with path.open("rb") as f:
        if _read(f, 4, path) != MAGIC:
            raise GGUFError(f"{path}: not a GGUF file (no GGUF magic at the start)")
        version = int(_unpack(f, "<I", path))
        if version < 2:
            raise GGUFError(f"{path}: GGUF version {version} is too old (need 2 or later)")
        _unpack(f, "<Q", path)  # tensor count
        count = int(_unpack(f, "<Q", path))
        if count > MAX_KEYS:
            raise GGUFError(f"{path}: {count} metadata keys (limit {MAX_KEYS})")
        out: dict[str, Value] = {}
        for _ in range(count):
            key = _string(f, path)
            kind = int(_unpack(f, "<I", path))
            if kind == _ARRAY:
                item_kind = int(_unpack(f, "<I", path))
                length = int(_unpack(f, "<Q", path))
                _skip_array(f, item_kind, length, path)
                out[key] = ("array", length)
            elif kind == _STRING:
                out[key] = _string(f, path)
            elif kind in _SCALARS:
                out[key] = _unpack(f, _SCALARS[kind], path)
            else:
                raise GGUFError(f"{path}: key {key!r} has unknown GGUF type {kind}")
        out["gguf.version"] = version
        return out
