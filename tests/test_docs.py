"""The documentation site builds, and the generated references in docs/ match the code.

``mkdocs build --strict`` fails on a broken link or anchor and on a page left
out of the nav (``mkdocs.yml``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_the_site_builds_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"`make docs` fails:\n{done.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()
