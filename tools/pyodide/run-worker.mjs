// Calls a Python Workers entry module (Cloudflare's `on_fetch(request, env)`) under
// Pyodide in Node, as the platform would, with the built site as its static assets.
//
//   node tools/pyodide/run-worker.mjs WORKER_SRC SITE_DIR REQUESTS_JSON
//
// WORKER_SRC holds entry.py and the modules it imports; REQUESTS_JSON is a list of
// {method, path, body?}. Prints one JSON line: [{status, contentType, body}, ...].
import { readFile } from "node:fs/promises";
import { join, normalize } from "node:path";
import { loadPyodide } from "pyodide";

const [src, site, requestsJson] = process.argv.slice(2);
const requests = JSON.parse(requestsJson);

// The ASSETS binding: a fetch that answers from the site directory, 404 for the rest.
const ASSETS = {
  async fetch(input) {
    const url = new URL(typeof input === "string" ? input : input.url);
    let path = normalize(decodeURIComponent(url.pathname));
    if (path.endsWith("/")) path += "index.html";
    try {
      const bytes = await readFile(join(site, path));
      return new Response(bytes, { status: 200 });
    } catch {
      return new Response("not found", { status: 404 });
    }
  },
};
const env = { ASSETS, DOCPILOT_PREFIX: "/" };

const pyodide = await loadPyodide();
pyodide.mountNodeFS("/worker", src);
pyodide.runPython(`import sys; sys.dont_write_bytecode = True; sys.path.insert(0, "/worker")`);
const entry = pyodide.pyimport("entry");

const results = [];
try {
  for (const { method, path, body } of requests) {
    const request = new Request(new URL(path, "https://docs.example"), { method, body });
    const response = await entry.on_fetch(request, env);
    results.push({
      status: response.status,
      contentType: response.headers.get("content-type"),
      body: await response.text(),
    });
  }
} catch (error) {
  // Python's traceback alone (uncaught, Node would print the minified Pyodide line too).
  console.error(String(error?.message ?? error));
  process.exit(1);
}
console.log(JSON.stringify(results));
