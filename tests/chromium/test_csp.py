"""The widget under the Content-Security-Policy the runtime sends with every page: the
themed page, the widget and static mode's Pyodide worker work, and the browser reports
no violation of the policy."""

from __future__ import annotations

from browsing import Reader
from docpilot_runtime.settings.headers import HeaderSettings

COVERED = "How do I exclude a page from the assistant?"

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def watch_violations(reader: Reader) -> list[str]:
    """Violations the page reports, plus console lines about the policy (workers too)."""
    console: list[str] = []
    reader.page.add_init_script(RECORD_VIOLATIONS)

    def on_console(message: object) -> None:
        text = str(getattr(message, "text", ""))
        if "Content Security Policy" in text:
            console.append(text)

    reader.page.on("console", on_console)
    return console


def violations(reader: Reader, console: list[str]) -> list[str]:
    reported: list[str] = reader.page.evaluate("window.__cspViolations")
    return reported + console


def test_the_widget_answers_under_the_page_policy(reader: Reader, base_url: str) -> None:
    console = watch_violations(reader)
    response = reader.page.goto("/reference/cli/")
    assert response is not None
    policy = response.headers["content-security-policy"]
    assert "'wasm-unsafe-eval'" in policy and "frame-ancestors 'self'" in policy
    reader.open_panel()
    reader.ask(COVERED)
    assert reader.wait_answer().get_attribute("data-kind") == "passages"
    assert violations(reader, console) == []


def test_static_mode_runs_pyodide_under_the_default_page_policy(
    reader: Reader, static_server: str
) -> None:
    console = watch_violations(reader)
    response = reader.page.goto(f"{static_server}/reference/cli/")
    assert response is not None
    assert response.headers["content-security-policy"] == HeaderSettings().page_csp()
    reader.open_panel()
    reader.ask(COVERED)
    assert reader.wait_answer().get_attribute("data-kind") == "passages"
    assert violations(reader, console) == []
