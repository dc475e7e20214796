"""Citation markers: which excerpt each marker in the model's text names, and its number.

A model cites an excerpt as ``[[ID]]`` (the id it was handed), or, when its `answer`
call lists the ids in a ``citations`` array, as ``[n]`` (the array's n-th entry). A
marker counts only when the turn really emitted that id; the survivors are numbered
``1..k`` in the order a reader meets them and invented ones are removed with the space
before them. Markers are found in the raw text before it is parsed and stand in for
themselves as placeholders, so that a marker inside code stays verbatim and a marker
outside it can never pair with a bracket the parser sees.

Pure Python (standard library).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from docpilot_runtime.reply.passages import page_title_of, preview
from docpilot_runtime.shared.markdown_tree import Node

MARKER_SPAN = 300  # longest marker body: one id, or several separated by commas
_ID = r"\[\[([^\[\]\n]{1,%d})\]\]".replace("%d", str(MARKER_SPAN))
_BARE_NUMBER = r"(?<!\w)\[(\d{1,3})\](?!\()"  # "list[0]" is code-like text, not a marker
_MARKER = re.compile(r"[ \t]*(?:" + _ID + "|" + _BARE_NUMBER + ")")
# Private-use characters: stripped from model text first, so only ours exist.
PRIVATE = re.compile("[\ue000-\uf8ff]")
_OPEN, _CLOSE = "\ue000", "\ue001"
_PLACEHOLDER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")


@dataclass(frozen=True)
class Source:
    """An excerpt this turn emitted: a unit (with its page url) or a site tool's reply."""

    id: str
    url: str  # "" for a site tool's observation: it has no page
    title: str
    page_title: str = ""
    excerpt: str = ""


def unit_source(uid: str, url: str, title: str, breadcrumb: Sequence[str], text: str) -> Source:
    """The source a bundle unit is cited as."""
    return Source(uid, url, title, page_title_of(title, breadcrumb), preview(text))


@dataclass(frozen=True)
class _Marker:
    original: str  # the marker as written, with the space before it
    space: str
    ids: tuple[str, ...]  # the emitted ids it names (none when it names nothing)
    invented: tuple[str, ...]  # what it names that this turn never emitted


class Citations:
    """Markers across one answer: numbers in first-seen order, dropped ids, and the
    placeholders of the piece being read."""

    def __init__(self, emitted: Mapping[str, Source], numbered: Sequence[str] = ()) -> None:
        """``numbered`` is the answer call's ``citations`` array: what ``[n]`` names."""
        self.emitted = emitted
        self.numbered = [c if isinstance(c, str) else "" for c in numbered]
        self.numbers: dict[str, int] = {}
        self.dropped: list[str] = []
        self._markers: list[_Marker] = []

    def _drop(self, cid: str) -> None:
        if cid not in self.dropped:
            self.dropped.append(cid)

    def _resolve(
        self, written: str, body: str | None, number: str | None
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(emitted ids, invented ids) a marker names."""
        if body is not None:
            wanted = [part.strip() for part in body.split(",") if part.strip()]
        else:
            index = int(number or 0) - 1
            listed = self.numbered[index] if 0 <= index < len(self.numbered) else ""
            if not listed:
                return (), (written.strip(),)
            wanted = [listed]
        kept = [cid for cid in dict.fromkeys(wanted) if cid in self.emitted]
        return tuple(kept), tuple(cid for cid in wanted if cid not in self.emitted)

    def mark(self, raw: str) -> str:
        """``raw`` with every marker replaced by a placeholder (see `expand`)."""

        def replace(match: re.Match[str]) -> str:
            written = match.group(0)
            space = written[: len(written) - len(written.lstrip(" \t"))]
            ids, invented = self._resolve(written, match.group(1), match.group(2))
            self._markers.append(_Marker(written, space, ids, invented))
            return f"{_OPEN}{len(self._markers) - 1}{_CLOSE}"

        return _MARKER.sub(replace, PRIVATE.sub("", raw))

    def expand(self, text: str) -> list[Node]:
        """A text run's nodes: placeholders of valid markers become numbered citations
        (one citation repeated with only space between is shown once), the others
        vanish with the space before them."""
        nodes: list[Node] = []
        last = 0
        previous: int | None = None
        for match in _PLACEHOLDER.finditer(text):
            marker = self._markers[int(match.group(1))]
            before = text[last : match.start()]
            last = match.end()
            if before.strip():
                previous = None
            for cid in marker.invented:
                self._drop(cid)
            numbers = [self.numbers.setdefault(cid, len(self.numbers) + 1) for cid in marker.ids]
            numbers = [n for i, n in enumerate(numbers) if i or n != previous]
            if not numbers:
                if before.strip():
                    nodes.append(before)
                continue
            if before or marker.space:
                nodes.append(before + (marker.space if previous is None else ""))
            for n in numbers:
                nodes.append({"t": "cite", "n": n})
            previous = numbers[-1]
        if last < len(text):
            nodes.append(text[last:])
        return nodes

    def snapshot(self) -> tuple[dict[str, int], list[str], int]:
        """The numbering state, to be put back after a provisional reading."""
        return dict(self.numbers), list(self.dropped), len(self._markers)

    def restore(self, saved: tuple[dict[str, int], list[str], int]) -> None:
        self.numbers, self.dropped = dict(saved[0]), list(saved[1])
        del self._markers[saved[2] :]

    def verbatim(self, text: str) -> str:
        """A code's text with its placeholders back to the markers as written."""
        return _PLACEHOLDER.sub(lambda m: self._markers[int(m.group(1))].original, text)

    def source(self, n: int) -> Source:
        for cid, number in self.numbers.items():
            if number == n:
                return self.emitted[cid]
        raise KeyError(n)
