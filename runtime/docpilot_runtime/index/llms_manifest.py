"""The site root's `llms.txt` points agents at the other languages' and versions' own
`llms.txt`, as `docpilot/manifest.json` lists them.

Each language build writes `llms.txt` beside its own bundle (`/de/llms.txt` for German);
the root's file, of the default language, ends with a section linking every other one.
It is rewritten after each entry the manifest records, whichever language builds last,
and only while the root's file is ours (its hash is the one `write_agent_files` recorded).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from docpilot_runtime.bundle.schema import BUNDLE_DIR
from docpilot_runtime.bundle.write import write_atomic
from docpilot_runtime.index.llms_txt import LLMS_TXT, RECORD_NAME, site_link
from docpilot_runtime.index.manifest import ManifestEntry

OTHERS_HEADING = "## Other languages and versions"


def link_other_bundles(site_root: Path, entries: list[ManifestEntry], site_url: str = "") -> bool:
    """Replace the root llms.txt's closing section with links to every other entry's
    llms.txt; whether the file changed. A file we did not write is left alone."""
    target = site_root / LLMS_TXT
    record_path = site_root / BUNDLE_DIR / RECORD_NAME
    try:
        text = target.read_text(encoding="utf-8")
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(record, dict) or record.get(LLMS_TXT) != _digest(text.encode("utf-8")):
        return False
    body = text.split(f"\n{OTHERS_HEADING}\n", 1)[0].rstrip("\n") + "\n"
    links = []
    for entry in entries:
        sub = entry.prefix.strip("/")
        if entry.prefix == "/" or not (site_root / sub / LLMS_TXT).is_file():
            continue
        label = ", ".join(p for p in (entry.language, entry.version) if p) or sub
        links.append(f"- [{label}]({site_link(f'/{sub}/{LLMS_TXT}', site_url)})")
    if links:
        body += f"\n{OTHERS_HEADING}\n\n" + "\n".join(links) + "\n"
    if body == text:
        return False
    payload = body.encode("utf-8")
    write_atomic(target, payload)
    record[LLMS_TXT] = _digest(payload)
    write_atomic(record_path, (json.dumps(record, sort_keys=True, indent=1) + "\n").encode())
    return True


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
