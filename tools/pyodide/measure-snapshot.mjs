// Measures, in Pyodide under Node, what a memory snapshot would save a warm page load:
// the worker's boot as it is (start Python with the reduced stdlib, install our wheel,
// import docpilot_runtime.browser.worker) against a boot restored from a snapshot taken
// right after that import (Pyodide's experimental `_makeSnapshot` / `_loadSnapshot`).
// Interleaved runs, medians; the snapshot's size raw and gzipped; and whether the
// restored interpreter answers the credential check the same.
//
//   node tools/pyodide/measure-snapshot.mjs SITE_FILES_DIR [runs]
// SITE_FILES_DIR: a built site's docpilot/pyodide/ (the reduced stdlib, our wheel and lock
// file, Pyodide's own files), e.g. from `mkdocs build` of example-site.
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { loadPyodide } from "pyodide";

const dir = resolve(process.argv[2] || "");
const runs = Number(process.argv[3] || 5);
const lock = JSON.parse(readFileSync(join(dir, "docpilot-lock.json"), "utf8"));
const options = {
  lockFileContents: lock,
  packageBaseUrl: pathToFileURL(dir + "/").href,
  stdLibURL: join(dir, "docpilot-stdlib.zip"),
  packages: ["docpilot-browser"],
};
const QUESTION = "my token is ghp_R7x2Lq9Vz4Mw8Kc1Tb6Hn3Pd5Fy0Gs2Ja8Ue thanks";

// What the restored interpreter must still do: the credential check, and read the data
// files a turn reads lazily (the function words of every language).
function check(pyodide) {
  const worker = pyodide.pyimport("docpilot_runtime.browser.worker");
  const found = worker.check(QUESTION).toJs({ dict_converter: Object.fromEntries });
  const words = pyodide.runPython(
    "from docpilot_runtime.retrieve.followup import function_words; len(function_words())",
  );
  return `${found.credential?.kind ?? "none"}, ${words} function words`;
}

// The wheel's files live in the in-memory file system, which a snapshot does not hold:
// they are unpacked again (its modules, imported before the snapshot, are in it).
function unpackWheel(pyodide) {
  const wheel = lock.packages["docpilot-browser"].file_name;
  pyodide.unpackArchive(new Uint8Array(readFileSync(join(dir, wheel))), "wheel", {
    extractDir: pyodide.runPython("import site; site.getsitepackages()[0]"),
  });
}

async function plain() {
  const began = performance.now();
  const pyodide = await loadPyodide(options);
  pyodide.pyimport("docpilot_runtime.browser.worker");
  return { pyodide, ms: performance.now() - began };
}

// A snapshot may hold no JavaScript object Python refers to: our wheel is unpacked
// straight into site-packages (no package loader), and the import runs as Python code.
async function forSnapshot() {
  const { packages, ...bare } = options; // the lock file stays: the worker passes it
  const pyodide = await loadPyodide({ ...bare, _makeSnapshot: true });
  unpackWheel(pyodide);
  pyodide.runPython("import docpilot_runtime.browser.worker");
  return pyodide;
}

async function restored(snapshot) {
  const began = performance.now();
  const { packages, ...bare } = options;
  const pyodide = await loadPyodide({ ...bare, _loadSnapshot: snapshot });
  unpackWheel(pyodide);
  pyodide.pyimport("docpilot_runtime.browser.worker");
  return { pyodide, ms: performance.now() - began };
}

const made = await forSnapshot();
const began = performance.now();
const snapshot = made.makeMemorySnapshot();
const makeMs = performance.now() - began;
const gz = gzipSync(snapshot, { level: 6 }).length;
const expected = check((await plain()).pyodide);

const times = { plain: [], snapshot: [] };
let same = true;
for (let i = 0; i < runs; i++) {
  const a = await plain();
  times.plain.push(a.ms);
  const b = await restored(snapshot);
  times.snapshot.push(b.ms);
  same &&= check(b.pyodide) === expected;
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const load = (await import("node:os")).loadavg()[0];
console.log(JSON.stringify({
  runs,
  load: Number(load.toFixed(1)),
  plainMs: Math.round(median(times.plain)),
  snapshotMs: Math.round(median(times.snapshot)),
  ratio: Number((median(times.snapshot) / median(times.plain)).toFixed(3)),
  makeMs: Math.round(makeMs),
  snapshotBytes: snapshot.length,
  snapshotGzipBytes: gz,
  sameCheck: same,
  expected,
}));
