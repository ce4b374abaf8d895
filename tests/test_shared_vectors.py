"""The shared vector file: each text embedded once across worktrees, nothing lost under concurrent writers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from memrouter.index.sqlite.shared_vectors import SharedVectors, text_hash


class CountingEmbedder:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> list[bytes]:
        self.texts.extend(texts)
        return [text_hash(text).encode()[:8] for text in texts]


def test_two_worktrees_embed_each_text_once(tmp_path: Path) -> None:
    path = tmp_path / "common" / "memrouter" / "vectors.sqlite"
    counting = CountingEmbedder()
    first, second = SharedVectors(path), SharedVectors(path)
    texts = ["alpha", "beta", "gamma", "beta"]
    got_first = first.embed("m1", 2, texts, counting)
    got_second = second.embed("m1", 2, [*texts, "delta"], counting)
    assert counting.texts == ["alpha", "beta", "gamma", "delta"]
    assert got_second[:4] == got_first
    second.embed("m2", 2, ["alpha"], counting)  # another model embeds again
    assert counting.texts[-1] == "alpha" and len(counting.texts) == 5
    first.close()
    second.close()


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memrouter.index.sqlite.shared_vectors import SharedVectors
    store = SharedVectors(Path(sys.argv[1]))
    me = int(sys.argv[2])
    for n in range(40):
        texts = [f"own {me} {n}", f"common {n}"]
        store.embed("m", 1, texts, lambda missing: [t.encode() for t in missing])
    store.close()
    """
)


def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(me)]) for me in range(6)]
    assert [proc.wait(timeout=120) for proc in procs] == [0] * 6
    store = SharedVectors(path)
    wanted = [text_hash(f"own {me} {n}") for me in range(6) for n in range(40)]
    wanted += [text_hash(f"common {n}") for n in range(40)]
    found = store.lookup("m", wanted)
    assert len(found) == len(wanted) == 280
    assert found[text_hash("common 3")] == b"common 3"
    store.close()
