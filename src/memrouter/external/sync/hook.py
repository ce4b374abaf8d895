"""Install and remove memrouter's git pre-commit hook.

The hook is a small POSIX ``sh`` script in the repository's hooks folder
(``git rev-parse --git-path hooks``, so ``core.hooksPath`` is honoured). It
imports ``memrouter_queue.py`` (a copy of ``memrouter.external.sync.queue_hook``,
stdlib only, its bytecode cached beside it) with ``python -S``, which queues the staged memory changes and,
when the commit changes a file a memory is anchored to (the list ``memrouter verify`` keeps), runs
``memrouter verify --staged`` to report the memories the commit makes stale; it never fails; whatever happens there, the hook itself ends with ``exit 0``. A
pre-commit hook that was already there is kept as ``pre-commit.pre-memrouter``
and run after the queueing step, its verdict passed on unchanged (the only
way the commit can still be refused is by that hook). ``uninstall`` removes
only what ``install`` wrote and puts the earlier hook back.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from memrouter.core.errors import InvalidInput
from memrouter.external.sync import queue_hook
from memrouter.external.sync.queue import git_toplevel, memories_prefix

__all__ = ["HOOK_MARKER", "HookResult", "hooks_dir", "install_hook", "uninstall_hook"]

HOOK_MARKER = "# memrouter-hook v1"
HOOK_NAME = "pre-commit"
CHAINED_NAME = "pre-commit.pre-memrouter"
HELPER_NAME = "memrouter_queue.py"

_SCRIPT = """#!/bin/sh
{marker}
# Queues staged memory changes for `memrouter sync --from-queue` and reports the memories the commit makes
# stale (when it changes a file a memory is anchored to); never blocks a commit.
# Written by `memrouter hook install`; `memrouter hook uninstall` removes it.
hook_dir=$(dirname "$0")
py={python}
[ -x "$py" ] || py=$(command -v python3 2>/dev/null)
if [ -n "$py" ] && [ -f "$hook_dir/{helper}" ]; then
    "$py" -S -c 'import sys; sys.path[0] = sys.argv[1]; import memrouter_queue; memrouter_queue.main(sys.argv[2:])' \
        "$hook_dir" {prefix} {queue} --report </dev/null >/dev/null || :
fi
if [ -x "$hook_dir/{chained}" ]; then
    exec "$hook_dir/{chained}" "$@"
fi
exit 0
"""


@dataclass(frozen=True, slots=True)
class HookResult:
    """What ``install_hook`` or ``uninstall_hook`` did."""

    action: str
    hook: Path
    chained: Path | None = None

    def to_dict(self) -> dict[str, str | None]:
        """A JSON-ready view."""
        return {"action": self.action, "hook": str(self.hook), "chained": str(self.chained) if self.chained else None}


def hooks_dir(toplevel: Path) -> Path:
    """The folder git runs hooks from for the repository at ``toplevel``."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--git-path", "hooks"], cwd=toplevel, capture_output=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InvalidInput(f"cannot find the git hooks folder of {toplevel}") from exc
    folder = Path(os.fsdecode(done.stdout.strip()))
    return folder if folder.is_absolute() else (toplevel / folder).resolve()


def _is_ours(path: Path) -> bool:
    try:
        return HOOK_MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _write_executable(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.chmod(0o755)
    os.replace(temporary, path)


def install_hook(root: Path, queue_path: Path, *, python: str | None = None) -> HookResult:
    """Write the pre-commit hook for the repository holding the memories ``root``.

    ``queue_path`` is where the hook queues changes (stored relative to the
    repository when it lies inside it); ``python`` is the interpreter it
    tries first (default: the running one), then ``python3`` on ``PATH``.
    """
    toplevel = git_toplevel(root)
    prefix = memories_prefix(root, toplevel)
    folder = hooks_dir(toplevel)
    folder.mkdir(parents=True, exist_ok=True)
    hook, chained = folder / HOOK_NAME, folder / CHAINED_NAME
    action = "installed"
    if hook.exists() and not _is_ours(hook):
        if chained.exists():
            raise InvalidInput(f"both {hook} and {chained} exist; move one of them away first")
        os.replace(hook, chained)
        action = "installed (existing hook chained)"
    elif hook.exists():
        action = "updated"
    queue = queue_path.resolve()
    try:
        queue_arg = queue.relative_to(toplevel).as_posix()
    except ValueError:
        queue_arg = str(queue)

    helper_source = Path(queue_hook.__file__).read_text(encoding="utf-8")
    _write_executable(folder / HELPER_NAME, helper_source)
    _write_executable(
        hook,
        _SCRIPT.format(
            marker=HOOK_MARKER,
            python=shlex.quote(python or sys.executable),
            helper=HELPER_NAME,
            prefix=shlex.quote(prefix),
            queue=shlex.quote(queue_arg),
            chained=CHAINED_NAME,
        ),
    )
    return HookResult(action, hook, chained if chained.exists() else None)


def uninstall_hook(root: Path) -> HookResult:
    """Remove memrouter's hook (only if the current one is ours) and restore a chained one."""
    toplevel = git_toplevel(root)
    folder = hooks_dir(toplevel)
    hook, chained = folder / HOOK_NAME, folder / CHAINED_NAME
    if not _is_ours(hook):
        return HookResult("not installed", hook)
    hook.unlink()
    helper = folder / HELPER_NAME
    if helper.exists():
        helper.unlink()
    cached = folder / "__pycache__"
    for compiled in cached.glob("memrouter_queue.*.pyc") if cached.is_dir() else ():
        compiled.unlink()
    if cached.is_dir() and not any(cached.iterdir()):
        cached.rmdir()
    if chained.exists():
        os.replace(chained, hook)
        return HookResult("removed (earlier hook restored)", hook, None)
    return HookResult("removed", hook)
