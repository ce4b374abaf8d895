"""Reading blobs and blob ids from one repository's object store (``memrouter.repo.tree.BlobReader``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memrouter.repo.tree import BlobReader


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_blob_ids_come_without_the_blobs_and_agree_with_them(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    git(tmp_path, "init", "-q", str(repo))
    (repo / "src" / "a.py").write_text("A = 1\n")
    (repo / "src" / "with space.py").write_text("B = 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "src" / "a.py").write_text("A = 2\n")
    git(repo, "commit", "-qam", "second")
    second = git(repo, "rev-parse", "HEAD")
    with BlobReader(repo) as blobs:
        specs = [f"{first}:src/a.py", f"{second}:src/a.py", f"{first}:src/with space.py"]
        blobs.read_ids(specs)
        assert [blobs.blob_id(spec) for spec in specs] == [git(repo, "rev-parse", spec) for spec in specs]
        assert blobs.blob_id(specs[0]) != blobs.blob_id(specs[1])
        # No blob there: a missing path (with a space, as git echoes it back), a folder, a bad spec.
        for spec in (f"{first}:src/gone file.py", f"{first}:src", "", "two\nlines"):
            assert blobs.blob_id(spec) is None
        for spec in (f"{first}:src/gone file.py", f"{first}:src/gone", f"{first}:src"):
            assert blobs.read(spec) is None
        assert blobs.read(f"{first}:src/with space.py") == (blobs.blob_id(specs[2]), b"B = 2\n")
        # A blob read whole gives its id as well; the ids agree.
        found = blobs.read(specs[1])
        assert found is not None and found[0] == blobs.blob_id(specs[1])
        assert blobs._checker is None  # a few ids were read with their blobs: no second git process
        # A list longer than a pipe's buffer is written while the answers are read.
        many = [f"{second}:src/a.py:{number}" for number in range(3000)] + [f"{second}:src/a.py"]
        blobs.read_ids(many)
        assert blobs.blob_id(many[-1]) == blobs.blob_id(specs[1])
        assert all(blobs.blob_id(spec) is None for spec in many[:-1])
        assert blobs._checker is not None
        # Once it runs, a single id is asked of it (the blob is not read).
        assert blobs.blob_id("HEAD~1:src/with space.py") == git(repo, "rev-parse", f"{first}:src/with space.py")
        assert "HEAD~1:src/with space.py" not in blobs._known
