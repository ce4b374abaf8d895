"""Install and remove memrouter's merge driver for memory files (``memrouter hook install``).

Two settings make git merge memory files with ``memrouter hook --merge-driver``:
the driver in the repository's git config (``merge.memrouter.driver``, in the
config every worktree of the repository shares) and a line of the
``.gitattributes`` file at the repository's top that sends the memories
folder's markdown files to it (``<folder>/**/*.md merge=memrouter``). Both
are written only when missing, so installing twice changes nothing; removing
takes out exactly those. The ``.gitattributes`` line is a file of the work
tree: commit it so every clone and branch has it (a clone without the driver
configured merges those files as git always does).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from memrouter.external.sync.queue import git_toplevel, memories_prefix
from memrouter.repo.merge import driver_config, remove_driver_config, set_driver_config

__all__ = ["DRIVER", "MergeSetup", "driver_command", "install_merge_driver", "uninstall_merge_driver"]

DRIVER = "memrouter"
ATTRIBUTES = ".gitattributes"
COMMENT = "# memrouter: merge memory files field by field (`memrouter hook install`)"


@dataclass(frozen=True, slots=True)
class MergeSetup:
    """What installing or removing the merge driver did, and where."""

    action: str
    attributes: Path
    pattern: str
    driver: str

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready view."""
        return {"action": self.action, "attributes": str(self.attributes), "pattern": self.pattern,
                "driver": self.driver}  # fmt: skip


def driver_command(python: str | None = None) -> str:
    """The command git runs (through ``sh``) to merge a memory file (``python``: the interpreter, default the
    running one). When the interpreter cannot be run any more (its venv moved or removed: the shell's exit 126
    or 127), git's own 3-way merge of the file runs instead, so both sides stay in it, with conflict markers."""
    return (
        f"{shlex.quote(python or sys.executable)} -m memrouter hook --merge-driver %O %A %B %P"
        " || { status=$?; [ $status -lt 126 ] && exit $status; git merge-file -L ours -L base -L theirs %A %O %B; }"
    )


def attributes_line(prefix: str) -> str:
    """The ``.gitattributes`` line sending the markdown files under ``prefix`` to the driver."""
    pattern = f"{prefix}/**/*.md" if prefix else "*.md"
    if any(char in pattern for char in ' \t"\\'):
        pattern = '"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{pattern} merge={DRIVER}"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _write(path: Path, lines: list[str]) -> None:
    temporary = path.with_name(f".{path.name}.memrouter.tmp")
    temporary.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    os.replace(temporary, path)


def install_merge_driver(root: Path, *, python: str | None = None) -> MergeSetup:
    """Configure the merge driver for the repository holding the memories folder ``root`` and add its
    ``.gitattributes`` line; what is already there is left as it is."""
    top = git_toplevel(root)
    line = attributes_line(memories_prefix(root, top))
    command = driver_command(python)
    attributes = top / ATTRIBUTES
    changed = False
    if driver_config(top, DRIVER).get("driver") != command:
        set_driver_config(top, DRIVER, {"name": "memrouter memory files", "driver": command})
        changed = True
    lines = _lines(attributes)
    if line not in lines:
        _write(attributes, [*lines, COMMENT, line])
        changed = True
    return MergeSetup("installed" if changed else "already installed", attributes, line, command)


def uninstall_merge_driver(root: Path) -> MergeSetup:
    """Remove the merge driver's git config and its ``.gitattributes`` lines (the file too, if nothing else is
    left in it)."""
    top = git_toplevel(root)
    line = attributes_line(memories_prefix(root, top))
    attributes = top / ATTRIBUTES
    command = driver_config(top, DRIVER).get("driver", "")
    removed = remove_driver_config(top, DRIVER) if "--merge-driver" in command else False
    lines = _lines(attributes)
    kept = [text for text in lines if text not in (COMMENT, line)]
    if kept != lines:
        removed = True
        if any(text.strip() for text in kept):
            _write(attributes, kept)
        else:
            attributes.unlink()
    return MergeSetup("removed" if removed else "not installed", attributes, line, command)
