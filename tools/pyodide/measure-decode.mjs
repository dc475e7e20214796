// Measures, in Pyodide under Node, how long static mode takes to turn a site's index
// into a searchable one, both ways it could ship (the numbers behind browser.py's choice):
//   msgpack: load msgpack's Pyodide wheel, parse_bundle(bundle.msgpack) + LexicalIndex
//   json:    browser.load_static(static.json) (json.loads, base64, LexicalIndex)
//
//   node tools/pyodide/measure-decode.mjs MSGPACK_WHEEL SITE_DIR...
// Each SITE_DIR is a built site with docpilot/bundle.msgpack and docpilot/static.json.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const [wheel, ...sites] = process.argv.slice(2);
const pyodide = await loadPyodide();
let began = performance.now();
await pyodide.loadPackage(wheel, { messageCallback: () => {} });
console.log(`loadPackage(msgpack wheel): ${(performance.now() - began).toFixed(0)} ms`);
pyodide.mountNodeFS("/repo", fileURLToPath(new URL("../../", import.meta.url)));
const measure = pyodide.runPython(`
import statistics, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, "/repo/runtime")
from docpilot_runtime.browser import worker as browser
from docpilot_runtime.bundle.schema import parse_bundle
from docpilot_runtime.retrieve.lexical import LexicalIndex

def timed(fn, runs=7):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times[0], statistics.median(times[1:])

def measure(raw, text):
    raw = raw.to_bytes()
    via_msgpack = timed(lambda: LexicalIndex(parse_bundle(raw, "bundle").lexical))
    via_json = timed(lambda: browser.load_static(text))
    return [len(raw), len(text.encode()), *via_msgpack, *via_json]
measure
`);
for (const site of sites) {
  const raw = new Uint8Array(readFileSync(`${site}/docpilot/bundle.msgpack`));
  const text = readFileSync(`${site}/docpilot/static.json`, "utf8");
  const [bytes, chars, mFirst, mMedian, jFirst, jMedian] = measure(raw, text).toJs();
  console.log(
    `${site}: bundle ${(bytes / 1024).toFixed(0)} KiB, static.json ${(chars / 1024).toFixed(0)} KiB; ` +
      `msgpack first ${mFirst.toFixed(1)} ms, median ${mMedian.toFixed(1)} ms; ` +
      `json first ${jFirst.toFixed(1)} ms, median ${jMedian.toFixed(1)} ms`,
  );
}
