"""Browser tests of ``memrouter ui``: the real command in a subprocess, driven by Playwright in Debian's Chromium.

Run with ``make test-ui`` (it installs Chromium, Playwright and axe-core when
missing); plain ``make test`` leaves this folder out. A missing browser is
an error, never a skip. Screenshots go to ``.artifacts/ui/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from uibrowser import CHROMIUM, Served, start_ui, stop_ui
from uiproject import ui_project


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("ui")
    project, root, first = ui_project(base)
    server, address = start_ui(root, base / "idx")
    try:
        yield Served(address.rstrip("/"), project, root, base / "idx", first)
    finally:
        stop_ui(server)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"no Chromium at {CHROMIUM}: run `make test-ui` (it installs Debian's chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    try:
        yield page
    finally:
        context.close()
