// Runs DocPilot's browser/edge core tests under Pyodide in Node: the CPython 3.14 for
// wasm32 that the widget's worker runs, with the same standard library.
//
//   node tools/pyodide/run-tests.mjs [pytest arguments]   (default: CORE_TESTS)
//
// Needs the npm `pyodide` package (`npm ci`) and pytest's wheels in
// .cache/pyodide-wheels/ (scripts/test.sh downloads them; see requirements.txt here).
// Exits with pytest's exit code; pytest's summary line is the last thing printed.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const WHEELS = join(ROOT, ".cache", "pyodide-wheels");
// The shared core's tests: none needs numpy, MkDocs or a built site.
const CORE_TESTS = [
  "tests/screen/test_credentials.py",
  "tests/screen/test_social.py",
  "tests/screen/test_screening.py",
  "tests/screen/test_credential_disguises.py",
  "tests/check/test_validate.py",
  "tests/answer/test_memory.py",
  "tests/retrieve/test_gate.py",
  "tests/retrieve/test_tokenize.py",
  "tests/check/test_markdown_tree.py",
  "tests/pyodide",
];

// The pinned wheels named in requirements.txt ("name==version"), found in the cache.
const files = readdirSync(WHEELS, { withFileTypes: true }).map((entry) => entry.name);
const wheels = readFileSync(join(ROOT, "tools/pyodide/requirements.txt"), "utf8")
  .split("\n")
  .filter((line) => /^[A-Za-z]/.test(line))
  .map((line) => {
    const [name, version] = line.trim().split("==");
    const prefix = `${name.replace(/-/g, "_")}-${version}-`;
    const file = files.find((f) => f.toLowerCase().startsWith(prefix) && f.endsWith(".whl"));
    if (!file) throw new Error(`${WHEELS} has no wheel for ${line.trim()}: run scripts/test.sh`);
    return join(WHEELS, file);
  });

const began = performance.now();
const pyodide = await loadPyodide();
await pyodide.loadPackage(wheels, { messageCallback: () => {} });
pyodide.mountNodeFS("/repo", ROOT); // the work tree, read in place
const seconds = ((performance.now() - began) / 1000).toFixed(1);
console.log(`Pyodide ${pyodide.version} (Python ${pyodide.runPython("import sys; sys.version.split()[0]")}) ready in ${seconds} s`);

const args = process.argv.slice(2);
pyodide.globals.set("ARGS", pyodide.toPy(args.length ? args : CORE_TESTS));
const code = pyodide.runPython(`
import os, sys
sys.dont_write_bytecode = True  # leave no wasm-compiled .pyc files in the work tree
os.chdir("/repo")
sys.path[:0] = ["/repo/runtime", "/repo/tools/pyodide"]
import pytest
# --noconftest: tests/conftest.py builds sites with MkDocs, which is not here.
int(pytest.main([*ARGS, "-p", "pyodide_plugin", "-p", "no:cacheprovider", "--noconftest"]))
`);
process.exitCode = code;
