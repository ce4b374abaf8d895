"""Anthropic's memory tool over memrouter's store, side by side with the SDK's own reference implementation.

Random command sequences (hypothesis) run on ``MemrouterMemoryTool`` and on
the SDK's ``BetaLocalFilesystemMemoryTool``, each over its own empty folder:
every answer and every error is the same, word for word, and so are the two
trees after each command. The only commands allowed to differ are the ones
memrouter refuses on purpose, each checked to be one of them, and after which
nothing has changed: the write guard (a secret, a near-copy of another
memory, by the guard's own rule over every file), and file names a memory
cannot have (no text suffix, ``x.txt.md``, upper case in a new name, a file
where a folder is named).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memrouter.core.names import validate_name
from memrouter.guard.duplicates import Candidate, find_duplicate
from memrouter.guard.secrets import find_secrets
from memrouter.router import Router
from memrouter.store.parse import parse_memory
from memrouter.testing.guard_sets import fake

if TYPE_CHECKING:
    from anthropic.tools import BetaLocalFilesystemMemoryTool as Reference
    from anthropic.tools import ToolError

    from memrouter.anthropic_memory import MemrouterMemoryTool, _memory_name, _shown


@pytest.fixture(autouse=True, scope="module")
def _sdk() -> None:
    """Import the SDK (about 2 s) when these tests run, not in every pytest worker that merely collects them."""
    global Reference, ToolError, MemrouterMemoryTool, _memory_name, _shown
    from anthropic.tools import BetaLocalFilesystemMemoryTool as Reference
    from anthropic.tools import ToolError

    from memrouter.anthropic_memory import MemrouterMemoryTool, _memory_name, _shown


# A small tree, so that commands meet the files earlier ones made: paths of files and folders, then
# the paths memrouter refuses for a new file on purpose (see memrouter.anthropic_memory), then escapes.
FILES = [
    "/memories/a.md", "/memories/b.txt", "/memories/notes/a.md", "/memories/notes/c.xml", "/memories/proj/todo.md",
    "/memories/notes/deep/log.json", "/memoriesx/a.md",
]  # fmt: skip
FOLDERS = ["/memories", "/memories/", "/memories/notes", "/memories/proj", "/memories/notes/deep", "/memories/a-b"]
ODD = ["/memories/Upper.md", "/memories/noext", "/memories/b.txt.md", "/memories/pic.png", "/memories/a.md/x.md"]
ESCAPES = ["/memories/../x.md", "/memories/notes/../../etc.md", "/etc/passwd", "/tmp/x.md", "/memories/../memories"]
WORDS = ["alpha", "beta", "line", "x y", "\n", "é", "中", "- item", "# Title"]

texts = st.one_of(
    st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
    st.text(st.characters(codec="utf-8", categories=["L", "N", "P", "Zs"]) | st.just("\n"), max_size=40),
)


def draw_command(data: st.DataObject, before: dict[str, str | None]) -> dict[str, Any]:
    """One command, mostly on what the tree holds now: its files, its folders, and words of its texts."""
    held = [f"/memories/{path}" for path, text in before.items() if text is not None]
    folders = [f"/memories/{path}" for path, text in before.items() if text is None]
    mine = st.sampled_from(held) if held else st.sampled_from(FILES)
    files = st.sampled_from(FILES) | mine
    paths = st.one_of(
        mine,
        mine,
        mine,
        mine,
        files,
        st.sampled_from(FOLDERS + folders),
        st.sampled_from(ODD),
        st.sampled_from(ESCAPES),
    )
    words = sorted({word for text in before.values() if text for word in text.replace("\n", " ").split()})
    olds = st.sampled_from(words) if words else st.sampled_from(WORDS)
    kind = data.draw(st.sampled_from(["view", "create", "create", "str_replace", "insert", "delete", "rename"]))
    if kind == "view":
        window = data.draw(st.none() | st.lists(st.integers(-1, 6), min_size=2, max_size=2))
        return {"command": "view", "path": data.draw(paths), **({"view_range": window} if window else {})}
    if kind == "create":
        return {"command": "create", "path": data.draw(files | paths), "file_text": data.draw(texts)}
    if kind == "str_replace":
        old = data.draw(olds | olds | st.sampled_from(WORDS) | texts)
        return {"command": "str_replace", "path": data.draw(paths), "old_str": old, "new_str": data.draw(texts)}
    if kind == "insert":
        line = data.draw(st.integers(0, 2) | st.integers(-1, 5))
        return {"command": "insert", "path": data.draw(paths), "insert_line": line, "insert_text": data.draw(texts)}
    if kind == "delete":
        return {"command": "delete", "path": data.draw(paths)}
    return {"command": "rename", "old_path": data.draw(paths), "new_path": data.draw(paths)}


def answer(tool: Any, command: dict[str, Any]) -> tuple[str, str]:
    """What the tool answers: ``("ok", text)``, ``("error", message)`` for a ToolError, ``("crash", type)``."""
    try:
        return "ok", _folder_sizes_left_out(str(tool.call(command)))
    except ToolError as exc:
        return "error", str(exc)
    except Exception as exc:  # the reference lets some OS errors through (a folder where a file is)
        return "crash", type(exc).__name__


def _folder_sizes_left_out(listing: str) -> str:
    """A folder listing with its folders' sizes blanked: a folder's size is the file system's (4.0K on ext4;
    on tmpfs it grows with each entry, hidden ones too, and memrouter's folder holds its hidden write folder)."""
    if not listing.startswith("Here're the files and directories"):
        return listing
    header, *lines = listing.split("\n")
    return "\n".join(
        [header]
        + [f"(folder)\t{path}" if index == 0 or path.endswith("/") else f"{size}\t{path}"
           for index, (size, _, path) in enumerate(line.partition("\t") for line in lines)]
    )  # fmt: skip


def tree(root: Path, shown: Any = lambda name: name) -> dict[str, str | None]:
    """Every folder (None) and file (its text) under ``root`` as the client names them; dot entries left out."""
    found: dict[str, str | None] = {}
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        base = Path(folder).relative_to(root).as_posix()
        for name in subfolders:
            found[f"{base}/{name}".removeprefix("./")] = None
        for name in names:
            if not name.startswith("."):
                found[f"{base}/{shown(name)}".removeprefix("./")] = (Path(folder) / name).read_text(encoding="utf-8")
    return found


@contextmanager
def side_by_side() -> Iterator[tuple[MemrouterMemoryTool, Any, Path, Path]]:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        ours_root = base / "project" / ".serena" / "memories"
        ours_root.mkdir(parents=True)
        reference = Reference(base_path=str(base / "reference"))
        with Router.open(root=ours_root, index_dir=base / "index", watch=False) as router:
            yield MemrouterMemoryTool(router), reference, ours_root, reference.memory_root


def refusal(command: dict[str, Any], message: str) -> str | None:
    """Which of memrouter's own refusals an error is: ``"guard"``, ``"name"``, or None for any other error. Only
    the message's start is read, since an error may echo the command's text (an ``old_str`` of "memrouter")."""
    if re.match(r"memory .+? refused by the write guard: ", message, re.DOTALL):
        return "guard"
    for path in (command.get(key) for key in ("path", "new_path")):
        if path and message.startswith(f"{path}: memrouter "):
            return "name"
        if path and message.startswith(f"{path}: /memories/") and message.endswith(" is a file, not a folder"):
            return "name"
    return None


def written_text(command: dict[str, Any], before: dict[str, str | None]) -> str | None:
    """The file text a write command would store, from the reference tree (None: it writes no text)."""
    kind = command["command"]
    if kind == "create":
        return str(command["file_text"])
    if kind not in ("str_replace", "insert"):
        return None
    current = before.get(command["path"].removeprefix("/memories/"))
    if current is None:
        return None
    if kind == "str_replace":
        return current.replace(command["old_str"], command["new_str"])
    lines = current.split("\n")[:-1] if current.endswith("\n") else current.split("\n")
    lines.insert(command["insert_line"], command["insert_text"].rstrip("\n"))
    return "\n".join(lines) + ("" if "\n".join(lines).endswith("\n") else "\n")


def guard_may_refuse(command: dict[str, Any], before: dict[str, str | None]) -> bool:
    """Whether the write guard's own rules refuse this write: a secret, or a near-copy of another file."""
    text = written_text(command, before)
    if text is None:
        return False
    if find_secrets(text):
        return True
    target = _memory_name(command["path"].removeprefix("/memories/")) or ""
    mine = parse_memory(target, target, text)
    others = [
        Candidate(name, memory.title, memory.body)
        for path, content in before.items()
        if content is not None and (name := _memory_name(path)) and name != target
        for memory in [parse_memory(name, name, content)]
    ]
    return find_duplicate(mine.body, mine.title, others) is not None


def refused_name(command: dict[str, Any], before: dict[str, str | None]) -> bool:
    """Whether the command names a new file or folder memrouter cannot keep (see the module docstring)."""
    path = command.get("path") if command["command"] == "create" else command.get("new_path")
    relative = (path or "").removeprefix("/memories").strip("/")
    if not relative:
        return False
    parts = relative.split("/")
    if any(_memory_name(part) is not None or part.endswith(".md") for part in parts[:-1]):
        return True  # a folder named like a file
    moving_folder = command["command"] == "rename" and before.get(command["old_path"].removeprefix("/memories/"), "")
    if moving_folder is None:  # a folder, to a name that is a file's, or not memrouter's
        return _memory_name(relative) is not None or parts[-1].endswith(".md") or not _valid(relative)
    name = _memory_name(relative)
    return name is None or not _valid(name)


def _valid(name: str) -> bool:
    try:
        return validate_name(name, strict=True) == name
    except Exception:
        return False


def step_alike(sides: tuple[MemrouterMemoryTool, Any, Path, Path], command: dict[str, Any], step: int) -> list[str]:
    """Run ``command`` on both sides and check they agree, or that memrouter refused it on purpose and changed
    nothing (then the reference does not run it). Returns what happened, for Hypothesis's statistics."""
    ours, reference, ours_root, reference_root = sides
    before = tree(reference_root)
    mine = answer(ours, command)
    happened = [f"{command['command']}: {mine[0]}"]
    refused = refusal(command, mine[1]) if mine[0] == "error" else None
    if refused is not None:
        happened.append(f"refused: {refused}")
        if refused == "guard":
            assert guard_may_refuse(command, before), (step, command, mine)
        else:
            assert refused_name(command, before) or "is a file, not a folder" in mine[1], (step, command, mine)
        assert tree(ours_root, _shown) == before, (step, command)  # refused: nothing changed
        return happened
    theirs = answer(reference, command)
    if theirs[0] == "crash":
        assert mine[0] == "error", (step, command, mine, theirs)
    else:
        assert mine == theirs, (step, command)
    assert tree(ours_root, _shown) == tree(reference_root), (step, command, mine)
    return happened


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_same_answers_and_files_as_the_sdk_reference(data: st.DataObject) -> None:
    with side_by_side() as sides:
        for step in range(data.draw(st.integers(1, 30), label="steps")):
            for happened in step_alike(sides, draw_command(data, tree(sides[3])), step):
                event(happened)  # --hypothesis-show-statistics: what the sequences exercise


# Sequences the property found failing once, kept so they run every time.
FOUND = {
    "an error echoing the word memrouter is an error, not a refusal": [
        {"command": "create", "path": "/memories/a.md", "file_text": ""},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "memrouter", "new_str": ""},
    ],
}


@pytest.mark.parametrize("commands", FOUND.values(), ids=FOUND.keys())
def test_sequences_once_found_failing_stay_alike(commands: list[dict[str, Any]]) -> None:
    with side_by_side() as sides:
        for step, command in enumerate(commands):
            step_alike(sides, command, step)


@pytest.mark.parametrize(
    "command",
    [
        {"command": "view", "path": "/memories/../secrets.md"},
        {"command": "view", "path": "/etc/passwd"},
        {"command": "create", "path": "/memories/../../outside.md", "file_text": "x"},
        {"command": "create", "path": "/memories/notes/../../outside.md", "file_text": "x"},
        {"command": "create", "path": "/memoriesevil/../../outside.md", "file_text": "x"},
        {"command": "str_replace", "path": "/memories/../project/x.md", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": "../x.md", "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": "/memories/.."},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/../../a.md"},
        {"command": "view", "path": "/memories/link/x.md"},
        {"command": "create", "path": "/memories/link/new.md", "file_text": "x"},
    ],
)
def test_paths_that_leave_the_memories_are_refused_as_the_sdk_refuses_them(command: dict[str, Any]) -> None:
    with side_by_side() as (ours, reference, ours_root, reference_root):
        outside = ours_root.parent.parent / "outside"
        outside.mkdir()
        (ours_root / "link").symlink_to(outside, target_is_directory=True)
        (reference_root / "link").symlink_to(outside, target_is_directory=True)
        (ours_root / "a.md").write_text("# A\n")
        (reference_root / "a.md").write_text("# A\n")
        mine, theirs = answer(ours, command), answer(reference, command)
        assert mine == theirs and mine[0] == "error"
        assert "would escape /memories directory" in mine[1] or "Path must start with /memories" in mine[1]
        assert list(outside.iterdir()) == [] and not (ours_root.parent.parent.parent / "outside.md").exists()
        assert tree(ours_root, _shown) == tree(reference_root)


def test_writes_pass_the_guard_and_reach_the_index_and_the_audit_log() -> None:
    with side_by_side() as (ours, _, root, _):
        answered = ours.call({"command": "create", "path": "/memories/billing/retries.md",
                              "file_text": "# Retries\n\nThe billing client retries 504s three times with jitter.\n"})  # fmt: skip
        assert answered == "File created successfully at: /memories/billing/retries.md"
        hits = ours.router.search("billing retries jitter", mode="lexical")
        assert [hit.name for hit in hits][:1] == ["billing/retries"]
        found = json.loads(ours.search("retries jitter"))
        assert found[0]["path"] == "/memories/billing/retries.md" and found[0]["title"] == "Retries"
        secret = fake("ghp", __import__("random").Random(7))
        with pytest.raises(ToolError, match="write guard"):
            ours.call({"command": "create", "path": "/memories/keys.md", "file_text": f"token {secret}\n"})
        with pytest.raises(ToolError, match="write guard"):
            ours.call({"command": "str_replace", "path": "/memories/billing/retries.md", "old_str": "three times",
                       "new_str": f"with {secret}"})  # fmt: skip
        with pytest.raises(ToolError, match="duplicate"):
            ours.call({"command": "create", "path": "/memories/copy.md",
                       "file_text": "# Retries\n\nThe billing client retries 504s three times with jitter.\n"})  # fmt: skip
        assert not (root / "keys.md").exists() and not (root / "copy.md").exists()
        assert "three times" in (root / "billing/retries.md").read_text()
        ours.call({"command": "rename", "old_path": "/memories/billing", "new_path": "/memories/payments"})
        assert [hit.name for hit in ours.router.search("billing retries jitter", mode="lexical")][:1] == [
            "payments/retries"
        ]
        ours.call({"command": "delete", "path": "/memories/payments/retries.md"})
        assert ours.router.search("billing retries jitter", mode="lexical") == []
        audit = (ours.router.config.index_dir / "audit.jsonl").read_text().splitlines()
        lines = [json.loads(line) for line in audit]
        assert {line["who"] for line in lines} == {"agent:claude"}
        assert list(dict.fromkeys(line["op"] for line in lines)) == ["save", "rename", "delete"]


def test_text_files_keep_their_names_and_other_names_are_explained() -> None:
    with side_by_side() as (ours, _, root, _):
        ours.call({"command": "create", "path": "/memories/progress.xml", "file_text": "<task>port</task>\n"})
        assert (root / "progress.xml.md").read_text() == "<task>port</task>\n"
        listing = ours.call({"command": "view", "path": "/memories"})
        assert listing.endswith("\t/memories/progress.xml") and ".xml.md" not in listing
        for path, words in [
            ("/memories/notes", "name the file with .md"),
            ("/memories/image.png", "name the file with .md"),
            ("/memories/progress.xml.md", "name it /memories/progress.md"),
            ("/memories/Notes.md", "each segment must match"),
            ("/memories/progress.xml/inner.md", "is a file, not a folder"),
        ]:
            with pytest.raises(ToolError) as refused:
                ours.call({"command": "create", "path": path, "file_text": "x"})
            assert words in str(refused.value), path
        assert sorted(path.name for path in root.iterdir() if not path.name.startswith(".")) == ["progress.xml.md"]


def test_a_search_tool_for_the_runner() -> None:
    with side_by_side() as (ours, _, _, _):
        ours.call({"command": "create", "path": "/memories/ci.txt", "file_text": "Flaky tests are quarantined.\n"})
        tool = ours.search_tool()
        assert tool.name == "memory_search" and tool.to_dict()["input_schema"]["required"] == ["query"]
        found = json.loads(str(tool.call({"query": "flaky quarantined"})))
        assert found[0]["path"] == "/memories/ci.txt"
