"""Fixtures of the answer tests: example-site loaded once per module, and the question
most of them ask (with the excerpts its first message carries)."""

from __future__ import annotations

from pathlib import Path

import pytest
from docpilot_runtime.retrieve.site import Site
from docpilot_runtime.shared.types import AskRequest
from docpilot_runtime.sites.loader import load_site
from model_turns import QUESTION


@pytest.fixture(scope="module")
def site(example_site: Path) -> Site:
    return load_site(example_site, "/")


@pytest.fixture(scope="module")
def primed(site: Site) -> list[str]:
    """The ids of the excerpts the first message carries for QUESTION, in order."""
    return [site.bundle.units[u].id for u in site.retrieve(AskRequest(QUESTION)).model_order()]


@pytest.fixture(params=["anthropic", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)
