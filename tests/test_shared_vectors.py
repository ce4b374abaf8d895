"""The shared vector file: each text embedded once across worktrees and processes (claims), nothing lost under
concurrent writers, a stale claim taken over, a failed one dropped."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

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


RACER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from memrouter.index.sqlite.shared_vectors import SharedVectors

    path, log, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])

    def embed(texts):
        with open(log, "a") as out:  # one write per batch: lines of processes never mix
            out.write("".join(f"{text}\\n" for text in texts))
        time.sleep(0.001 * len(texts))  # a model's cost: without claims, each process would embed every text
        return [text.encode() for text in texts]

    store = SharedVectors(path)
    while not go.exists():
        time.sleep(0.005)
    got = store.embed("m", 1, [f"text {n}" for n in range(600)], embed)
    assert got == [f"text {n}".encode() for n in range(600)]
    store.close()
    """
)


def test_processes_missing_the_same_texts_at_once_embed_each_once(tmp_path: Path) -> None:
    path, log, go = tmp_path / "vectors.sqlite", tmp_path / "embedded.log", tmp_path / "go"
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(path), str(log), str(go)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(6)]  # fmt: skip
    time.sleep(0.5)  # let them open the file; then all start at once (correctness does not depend on it)
    go.touch()
    outputs = [racer.communicate(timeout=300) for racer in racers]
    assert [racer.returncode for racer in racers] == [0] * 6, [err.decode() for _, err in outputs]
    counts = Counter(log.read_text().splitlines())
    assert len(counts) == 600 and set(counts.values()) == {1}  # every text embedded, each by one process
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 0  # every claim dropped once stored


def _claim(path: Path, text: str, host: str, pid: int, at: float) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO claims VALUES ('m', ?, ?, ?, 'other', ?)", (text_hash(text), host, pid, at))


def test_a_stale_claim_is_taken_over_and_a_live_one_waited_for_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    store = SharedVectors(path, wait_limit=0.3)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = os.uname().nodename
    _claim(path, "dead owner", host, gone.pid, time.time())  # its process is gone
    _claim(path, "old claim", "elsewhere", 1, time.time() - 10_000)  # not renewed for too long
    counting = CountingEmbedder()
    store.embed("m", 1, ["dead owner", "old claim"], counting)
    assert counting.texts == ["dead owner", "old claim"] and store.waits == 0
    _claim(path, "held", "elsewhere", 1, time.time())  # live, on another host: waited for, up to the limit
    assert store.embed("m", 1, ["held"], counting) == [text_hash("held").encode()[:8]]
    assert counting.texts[-1] == "held" and store.waits > 0
    store.close()


def test_a_failed_embedding_drops_its_claims(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    store = SharedVectors(path)

    def broken(texts: list[str]) -> list[bytes]:
        raise RuntimeError("the model fell over")

    with pytest.raises(RuntimeError):
        store.embed("m", 1, [f"t{n}" for n in range(600)], broken)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 0
    counting = CountingEmbedder()
    store.embed("m", 1, ["t1"], counting)  # nobody waits for a claim the failure left
    assert counting.texts == ["t1"] and store.waits == 0
    store.close()


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memrouter.index.sqlite.shared_vectors import SharedVectors

    path, claimed, release = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])

    def slow(texts):
        claimed.touch()
        while not release.exists():
            time.sleep(0.01)
        return [b"from the holder" for _ in texts]

    store = SharedVectors(path)
    store.embed("m", 1, ["shared text"], slow)
    store.close()
    """
)


def test_a_process_waits_for_the_vector_another_is_embedding(tmp_path: Path) -> None:
    path, claimed, release = tmp_path / "vectors.sqlite", tmp_path / "claimed", tmp_path / "release"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(claimed), str(release)])
    try:
        for _ in range(3000):
            if claimed.exists() or holder.poll() is not None:
                break
            time.sleep(0.01)
        assert claimed.exists()
        store = SharedVectors(path)
        counting = CountingEmbedder()
        got: list[list[bytes]] = []
        waiter = threading.Thread(target=lambda: got.append(store.embed("m", 1, ["shared text"], counting)))
        waiter.start()
        for _ in range(3000):
            if store.waits:
                break
            time.sleep(0.01)
        release.touch()
        waiter.join(timeout=60)
        assert got == [[b"from the holder"]] and counting.texts == [] and store.waits > 0
        store.close()
    finally:
        release.touch()
        assert holder.wait(timeout=60) == 0


def test_a_repository_s_file_stays_open_between_batches_and_closes_with_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memrouter.embed import get_embedder
    from memrouter.index.sqlite import shared_vectors

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    opened: list[Path] = []
    original = shared_vectors.SharedVectors.__init__

    def counted(self: SharedVectors, path: Path, **options: float) -> None:
        opened.append(path)
        original(self, path, **options)

    monkeypatch.setattr(shared_vectors.SharedVectors, "__init__", counted)
    repository = shared_vectors.RepositoryVectors(tmp_path)
    embedder = get_embedder("hash")
    first = repository.embed("hash", embedder, ["alpha", "beta"])
    again = repository.embed("hash", embedder, ["beta", "gamma"])
    assert len(opened) == 1  # opening takes a write transaction: once, not once a batch
    assert (first[1] == again[0]).all()
    repository.close()
    with sqlite3.connect(opened[0]) as conn:  # what the batches stored is in the file
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 3
    repository.embed("hash", embedder, ["delta"])
    assert len(opened) == 2  # closed means closed: the next batch opens the file again
    repository.close()
