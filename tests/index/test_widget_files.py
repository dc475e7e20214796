"""The widget's files go through MkDocs' file collection: a plugin or hook that runs after
DocPilot's (a minifier, Material's privacy plugin) sees `docpilot/docpilot.js` and the
rest as files of the build, and what it makes of them is what the site holds: no copy
written after the build undoes it."""

from __future__ import annotations

from corpora import SiteFactory, mkdocs_build

# A hook (MkDocs runs hooks after the plugins) that lists the widget files it is handed and
# marks each script and stylesheet, as a minifier or a privacy filter would rewrite them.
HOOK = '''
from pathlib import Path

def on_files(files, config):
    seen = sorted(f.dest_uri for f in files if f.dest_uri.startswith("docpilot/"))
    Path(config.config_file_path).with_name("seen.txt").write_text("\\n".join(seen))
    for f in files:
        if f.dest_uri.startswith("docpilot/") and f.dest_uri.endswith((".js", ".css")):
            f.content_string = f.content_string + "\\n/* seen by a later plugin */\\n"
    return files
'''


def test_the_widget_s_files_are_files_of_the_build(make_site: SiteFactory) -> None:
    config = make_site({"index.md": "# Home\n\nThe handbook.\n"}, plugin={"embedder": "none"},
                       hooks=["hook.py"])
    (config.parent / "hook.py").write_text(HOOK, encoding="utf-8")
    mkdocs_build(config)
    seen = (config.parent / "seen.txt").read_text(encoding="utf-8").split()
    assert {"docpilot/docpilot.js", "docpilot/docpilot.css", "docpilot/worker.js"} <= set(seen)
    site = config.parent / "site" / "docpilot"
    for name in ("docpilot.js", "docpilot.css", "worker.js"):
        assert (site / name).read_text(encoding="utf-8").endswith("/* seen by a later plugin */\n"), name
    assert (site / "bundle.msgpack").is_file(), "the bundle is still written after the build"
