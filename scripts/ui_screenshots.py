"""Refresh the web UI's screenshots in docs/ (``docs/ui-<page>.png``), one per page.

Starts ``memrouter ui`` over the browser tests' small project (``tests/uiproject.py``) in a temporary folder,
opens each page in Debian's Chromium through Playwright (``make test-ui`` installs both) at a small window, and
writes the images in 64 colours so they stay small in the repository::

    .venv/bin/python scripts/ui_screenshots.py            # all pages
    .venv/bin/python scripts/ui_screenshots.py new edit   # some
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
sys.path.insert(0, str(REPO / "tests"))

from uibrowser import CHROMIUM, start_ui, stop_ui  # noqa: E402
from uiproject import ui_project  # noqa: E402

WINDOW = {"width": 1100, "height": 680}


def _new(page: Any) -> None:
    page.get_by_label("Name").fill("decisions/queues")
    page.get_by_label("Tags").fill("jobs")
    page.get_by_label("Text (markdown; front matter allowed)").fill("# Queues\n\nBackground jobs run on arq.\n")
    page.get_by_role("button", name="Check").click()
    page.locator(".verdict").wait_for()


def _edit(page: Any) -> None:
    text = page.locator("#content").input_value()
    page.fill("#content", text.rstrip("\n") + "\n\nSign every commit.\n")
    page.get_by_role("button", name="Check").click()
    page.locator(".verdict").wait_for()


PAGES: dict[str, tuple[str, Callable[[Any], None] | None]] = {
    "landing": ("/", None),
    "search": ("/?q=PostgreSQL+orders&mode=lexical", None),
    "memory": ("/memory/decisions/database", None),
    "new": ("/new", _new),
    "edit": ("/edit/conventions/commits", _edit),
    "review": ("/review", None),
    "graph": ("/graph?name=decisions/database&open=adr/adr-001", None),
    "timeline": ("/timeline", None),
    "health": ("/health", None),
}


def main(wanted: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    unknown = sorted(set(wanted) - set(PAGES))
    if unknown:
        print(f"unknown pages {unknown}: choose from {sorted(PAGES)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        _, root, _ = ui_project(Path(folder))
        server, address = start_ui(root, Path(folder) / "idx")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
                for name in wanted or list(PAGES):
                    path, act = PAGES[name]
                    page = browser.new_context(viewport=WINDOW).new_page()
                    page.goto(address.rstrip("/") + path)
                    if act is not None:
                        act(page)
                    target = DOCS / f"ui-{name}.png"
                    page.screenshot(path=str(target), full_page=False)
                    _quantize(target)
                    print(f"{target.relative_to(REPO)}: {target.stat().st_size // 1024} KB")
                    page.context.close()
                browser.close()
        finally:
            stop_ui(server)
    return 0


def _quantize(path: Path) -> None:
    """The image in 64 colours (pngquant when installed; else left as Chromium wrote it)."""
    try:
        subprocess.run(["pngquant", "--force", "--output", str(path), "64", str(path)], check=True)
    except FileNotFoundError:
        print("pngquant is not installed: the image is left in full colour", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
