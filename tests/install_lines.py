"""Every install line the documentation gives an owner, as written.

Read from README.md, example-site/docs and example-site/deploy (the GitHub Pages
workflow, the Dockerfile, the systemd unit): in Markdown, the lines of fenced code blocks
and the inline code spans of prose (joined across wrapped lines); in the other files,
every line. A command is a ``pip install``, ``pip wheel`` or ``pip download`` that names
at least one requirement. Until the first release is on the index, DocPilot itself comes
from the repository (``git+`` the project's Repository URL) or from a built wheel; the
tests stand a locally built sdist in for the repository (`stand_in`)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from corpora import EXAMPLE_SITE, ROOT

REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "urls"
]["Repository"]
SOURCES = (
    ROOT / "README.md",
    *sorted((EXAMPLE_SITE / "docs").rglob("*.md")),
    *sorted(p for p in (EXAMPLE_SITE / "deploy").iterdir() if p.is_file()),
)
_COMMAND = re.compile(r"(?:python3? -m )?(?:\S*/)?pip\s+(?:install|wheel|download)\b[^`\n#]*")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"`([^`]+)`")
_GIT = re.compile(r"git\+(https://[^\s\"'@]+)(@[\w.-]+)?")


@dataclass(frozen=True)
class InstallLine:
    command: str  # whitespace collapsed
    where: tuple[str, ...]  # "path:line" of every place it is written

    @property
    def verb(self) -> str:
        return re.search(r"pip\s+(\w+)", self.command).group(1)  # type: ignore[union-attr]

    @property
    def kind(self) -> str:
        """``prepare`` (pip wheel/download), ``fresh`` (DocPilot itself, into a new
        environment) or ``addition`` (an extra, a reinstall, a tool: into an existing one)."""
        if self.verb != "install":
            return "prepare"
        adds = re.search(r"--force-reinstall|--upgrade|\bdocpilot\[", self.command)
        if adds or "docpilot" not in self.command:
            return "addition"
        return "fresh"


def _commands(text: str) -> list[str]:
    found = []
    for match in _COMMAND.finditer(text):
        # A venv's pip named by path (/srv/x/.venv/bin/pip) is the active venv's pip.
        command = re.sub(r"^\S*/bin/pip ", "pip ", " ".join(match.group(0).split()))
        arguments = command.split(re.search(r"pip (\w+)", command).group(0), 1)[1].split()  # type: ignore[union-attr]
        if any(not a.startswith("-") for a in arguments):
            found.append(command)
    return found


def _markdown(text: str) -> list[tuple[int, str]]:
    """(line, command) from fenced blocks (line by line) and prose code spans."""
    found: list[tuple[int, str]] = []
    fenced = False
    paragraph: list[str] = []
    start = 0

    def flush() -> None:
        for span in _SPAN.findall(" ".join(paragraph)):
            found.extend((start, c) for c in _commands(span))
        paragraph.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            flush()
            fenced = not fenced
        elif fenced:
            found.extend((number, c) for c in _commands(line))
        elif not line.strip():
            flush()
        else:
            if not paragraph:
                start = number
            paragraph.append(line.strip())
    flush()
    return found


def documented_install_lines() -> list[InstallLine]:
    """Each distinct command once, in the order first written, with every place."""
    places: dict[str, list[str]] = {}
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".md":
            found = _markdown(text)
        else:
            found = [(n, c) for n, line in enumerate(text.splitlines(), 1) for c in _commands(line)]
        for number, command in found:
            places.setdefault(command, []).append(f"{path.relative_to(ROOT)}:{number}")
    return [InstallLine(command, tuple(where)) for command, where in places.items()]


def stand_in(command: str, artifact: Path) -> str:
    """``command`` with the repository (``git+REPOSITORY[@ref]``) replaced by a built
    sdist or wheel: CI cannot reach the repository's host."""
    for match in _GIT.finditer(command):
        if match.group(1) != REPOSITORY:
            raise AssertionError(f"{command!r} installs from {match.group(1)}, not {REPOSITORY}")
    return _GIT.sub(artifact.as_uri(), command)


__all__ = ["REPOSITORY", "SOURCES", "InstallLine", "documented_install_lines", "stand_in"]
