"""git's 3-way line merge of three texts (``git merge-file``), and the settings of a merge driver.

``merge_lines`` merges what two sides made of a common ancestor line by line,
as git merges a file: the lines only one side changed are taken from it, and
where both changed the same lines the result holds ordinary conflict markers
with both versions. ``driver_config``, ``set_driver_config`` and ``remove_driver_config`` read,
write and remove a merge driver's ``merge.<name>.*`` settings in the repository's git config.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from memrouter.repo.tree import collect, start

__all__ = ["LABELS", "MergedLines", "driver_config", "merge_lines", "remove_driver_config", "set_driver_config"]

# The names the conflict markers give the three versions: ours, the common ancestor, theirs.
LABELS = ("ours", "base", "theirs")


class MergedLines:
    """The result of a line merge: the merged bytes and how many places conflict (0: clean)."""

    __slots__ = ("conflicts", "data")

    def __init__(self, data: bytes, conflicts: int) -> None:
        self.data = data
        self.conflicts = conflicts


def merge_lines(
    ours: bytes, base: bytes, theirs: bytes, *, labels: tuple[str, str, str] = LABELS, marker_size: int = 7
) -> MergedLines:
    """``ours`` and ``theirs`` merged line by line from ``base`` by ``git merge-file`` (``GitError`` when git
    cannot merge them, binary data say)."""
    with tempfile.TemporaryDirectory(prefix="memrouter-merge-") as folder:
        paths = [Path(folder) / name for name in ("ours", "base", "theirs")]
        for path, data in zip(paths, (ours, base, theirs), strict=True):
            path.write_bytes(data)
        process = start(
            Path(folder), "merge-file", "-p", f"--marker-size={marker_size}",
            "-L", labels[0], "-L", labels[1], "-L", labels[2], *(str(path) for path in paths),
        )  # fmt: skip
        # git merge-file exits with the number of conflicts (at most 127), and above that on an error.
        output = collect(process, "merge-file", ok=tuple(range(128)), timeout=60.0)
    return MergedLines(output, process.returncode)


def driver_config(top: Path, name: str) -> dict[str, str]:
    """The ``merge.<name>.*`` settings of the repository at ``top`` (key after the driver's name -> value)."""
    process = start(top, "config", "--null", "--get-regexp", f"^merge\\.{name}\\.")
    output = collect(process, "config", ok=(0, 1))  # 1: none set
    found: dict[str, str] = {}
    for entry in output.decode("utf-8", "replace").split("\0"):
        key, _, value = entry.partition("\n")
        if key:
            found[key.removeprefix(f"merge.{name}.")] = value
    return found


def set_driver_config(top: Path, name: str, settings: dict[str, str]) -> None:
    """Set ``merge.<name>.<key>`` to each value of ``settings`` in the repository's shared git config."""
    for key, value in settings.items():
        collect(start(top, "config", f"merge.{name}.{key}", value), "config")


def remove_driver_config(top: Path, name: str) -> bool:
    """Remove every ``merge.<name>.*`` setting of the repository; False when there was none."""
    if not driver_config(top, name):
        return False
    collect(start(top, "config", "--remove-section", f"merge.{name}"), "config")
    return True
