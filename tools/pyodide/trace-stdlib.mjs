// Lists the standard-library modules the widget's worker needs under Pyodide, so the
// reduced stdlib zip (docpilot_runtime/pyodide_core.py, STDLIB_MODULES) holds only them.
//
//   node tools/pyodide/trace-stdlib.mjs <site>/docpilot [stdlib.zip]
//
// Boots the npm `pyodide` package as the worker does (our lock file, our wheel from
// <site>/docpilot/pyodide/), loads static.json, runs the credential check on a question
// with and without a secret and asks two static-mode questions, then prints, one a line,
// every module loaded from the standard library's zip. With a second argument, Pyodide
// boots with that zip instead of its own (stdLibURL), and the same steps must succeed:
// that is the check that a reduced zip is enough (tests/browser/test_static_assets.py runs it).
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadPyodide } from "pyodide";

const [site, stdlib] = process.argv.slice(2);
if (!site) throw new Error("usage: trace-stdlib.mjs <site>/docpilot [stdlib.zip]");
const own = resolve(site, "pyodide");
const lock = JSON.parse(readFileSync(join(own, "docpilot-lock.json"), "utf8"));
const pyodide = await loadPyodide({
  lockFileContents: lock,
  packageBaseUrl: `${own}/`,
  packages: ["docpilot-browser"],
  ...(stdlib ? { stdLibURL: resolve(stdlib) } : {}),
});
pyodide.globals.set("STATIC", readFileSync(join(site, "static.json"), "utf8"));
const out = pyodide.runPython(`
import json, sys
from docpilot_runtime.browser import worker as browser
browser.load_static(STATIC, "/", "static.json")
assert browser.check("how do I install it?").get("credential") is None
found = browser.check("my key is sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kM9n" + " why 401?")
assert found.get("credential"), found
for question in ("How do I install the plugin?", "zzqx unrelated words"):
    result = json.loads(browser.ask_static(json.dumps({"question": question})))
    assert "error" not in result, result
root = next(entry for entry in sys.path if entry.endswith(".zip")) + "/"
names = sorted(
    name for name, module in list(sys.modules.items())
    if (getattr(module, "__file__", None) or "").startswith(root)
    or getattr(getattr(module, "__spec__", None), "origin", None) == "frozen"
)
"\\n".join(names)
`);
console.log(out);
