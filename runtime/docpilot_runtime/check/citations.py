"""Citation markers: which excerpt each marker in the model's text names, and its number.

A model cites an excerpt as ``[[ID]]`` (the id it was handed), or as ``[n]`` when the
n-th id is known: the n-th entry of its `answer` call's ``citations`` array, or the n-th
excerpt of a prompt that numbers its excerpts (``numbered``). A marker counts only when
the turn really emitted that id; the survivors are numbered ``1..k`` in the order a
reader meets them and invented ones are removed with the space before them.

Small models miss a bracket: ``[[ID]``, ``[ID]]`` and ``[/page/#anchor]`` count as
markers when they name an id the turn emitted, and are left as written otherwise (so
ordinary bracketed text is never eaten); ``[[2]]`` and ``[1, 3]`` name numbers.

Markers are found in the raw text before it is parsed and stand in for themselves as
placeholders, so that a marker inside code stays verbatim and a marker outside it can
never pair with a bracket the parser sees.

Pure Python (standard library).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from docpilot_runtime.reply.passages import page_title_of, preview
from docpilot_runtime.shared.markdown_tree import Node

MARKER_SPAN = 300  # longest marker body: one id, or several separated by commas
_BODY = r"([^\[\]\n]{1,%d})".replace("%d", str(MARKER_SPAN))
_ID = r"\[?\[\[" + _BODY + r"\]\]\]?"  # a stray third bracket goes with the marker
# "list[0]" is code-like text, not a marker; "[1, 3]" names two.
_NUMBERS = r"(?<!\w)\[(\d{1,3}(?:[ \t]*,[ \t]*\d{1,3})*)\](?!\()"
# A bracket short or a single bracket round a page id: markers only for emitted ids.
_SHORT_CLOSE = r"\[\[" + _BODY + r"\](?!\])"
_SHORT_OPEN = r"(?<![\[\w])\[" + _BODY + r"\]\](?!\])"
_SINGLE_PAGE = r"(?<![\[\w])\[(/[^\[\]\s]{0,%d})\](?![(\[\]])".replace("%d", str(MARKER_SPAN))
_MARKER = re.compile(
    r"[ \t]*(?:" + "|".join((_ID, _NUMBERS, _SHORT_CLOSE, _SHORT_OPEN, _SINGLE_PAGE)) + ")"
)
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
        """``numbered`` is what ``[n]`` names: the answer call's ``citations`` array, or
        the excerpts in the order a numbering prompt gave them."""
        self.emitted = emitted
        self.numbered = [c if isinstance(c, str) else "" for c in numbered]
        self.numbers: dict[str, int] = {}
        self.dropped: list[str] = []
        self._markers: list[_Marker] = []

    def _drop(self, cid: str) -> None:
        if cid not in self.dropped:
            self.dropped.append(cid)

    def _resolve(self, match: re.Match[str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(emitted ids, invented ids) a marker names; None when it is no marker after all
        (a short bracket round something this turn never emitted)."""
        body, numbers = match.group(1), match.group(2)
        tolerant = next((g for g in match.groups()[2:] if g is not None), None)
        if tolerant is not None:
            wanted = [part.strip() for part in tolerant.split(",") if part.strip()]
            if not wanted or any(cid not in self.emitted for cid in wanted):
                return None
            return tuple(dict.fromkeys(wanted)), ()
        if body is not None:
            wanted = [part.strip() for part in body.split(",") if part.strip()]
            if len(wanted) == 1 and wanted[0].isdigit() and wanted[0] not in self.emitted:
                numbers = wanted[0]  # [[2]]: a number in the id's brackets
            else:
                kept = [cid for cid in dict.fromkeys(wanted) if cid in self.emitted]
                return tuple(kept), tuple(cid for cid in wanted if cid not in self.emitted)
        kept_ids: list[str] = []
        invented: list[str] = []
        for number in re.split(r"[ \t]*,[ \t]*", numbers or ""):
            index = int(number) - 1
            listed = self.numbered[index] if 0 <= index < len(self.numbered) else ""
            if listed in self.emitted:
                kept_ids.append(listed)
            else:
                invented.append(listed or f"[{number}]")
        return tuple(dict.fromkeys(kept_ids)), tuple(invented)

    def mark(self, raw: str) -> str:
        """``raw`` with every marker replaced by a placeholder (see `expand`)."""

        def replace(match: re.Match[str]) -> str:
            written = match.group(0)
            resolved = self._resolve(match)
            if resolved is None:
                return written
            space = written[: len(written) - len(written.lstrip(" \t"))]
            self._markers.append(_Marker(written, space, *resolved))
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
