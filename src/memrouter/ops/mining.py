"""An evaluation set nobody wrote for it: questions and answers mined from a repository's history.

A repository that keeps its memories in git already pairs questions with
answers (``memrouter eval --from-git REPO``):

- ``commit``: the subject of a commit (a pull request's title, when merged by
  squashing) that changed one memory and at most ``max_files`` files in all
  asks for that memory;
- ``mention``: the subject of a commit whose message names memories (by name,
  by path or by the last part of a nested name) asks for them;
- ``revision``: the first new lines of a memory's later revision ask for the
  version before it.

Each pair is asked of the memories as one *snapshot* commit holds them: a
few commits spread over the history of the memories folder, the last one the
newest that holds any. A ``commit`` or ``mention`` pair is asked of the first
snapshot at or after its commit that still holds the memory (under its name
then, renames followed); a ``revision`` pair of the last snapshot before the
revision, whose text lacks the lines asked.

Filters, each counted per kind: ``trivial`` (the query repeats the memory's
name or title: 80% of its terms or more), ``generic`` (a subject seen in three
commits or more, numbers aside, as machine-made ones are, or under three words of content),
``gone`` (no snapshot holds the memory any more), ``elsewhere`` (the query
names another memory, as a new row of a keyword index does: it asks for that
one), ``crowded`` (a message
naming more than ``max_mentions`` memories lists them rather than asks for
them) and ``duplicate``.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrouter.core.errors import InvalidInput
from memrouter.index.text import query_terms
from memrouter.repo.commits import Commit, commits, is_repository, read_files, read_tree
from memrouter.store.parse import first_heading

__all__ = ["KINDS", "MinedPair", "MinedSet", "MiningOptions", "Snapshot", "mine", "snapshot_texts"]

KINDS = ("commit", "mention", "revision")
FILTERS = ("trivial", "generic", "gone", "elsewhere", "crowded", "duplicate")
# A query repeating this share of a memory's name or title terms is trivial.
TRIVIAL_SHARE = 0.8
# A subject seen in this many commits is machine-made ("[auto] config", "Update memories").
GENERIC_REPEATS = 3
MIN_TERMS = 3

_CONVENTIONAL = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*(?:[a-z]+(?:\([^)]*\))?!?:\s*)?", re.IGNORECASE)
_PR_NUMBER = re.compile(r"\s*\((?:#\d+(?:,\s*)?)+\)\s*$")
_TOKEN = re.compile(r"[\w./-]+", re.UNICODE)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_MARKUP = re.compile(r"[`*_>#|]+")


@dataclass(frozen=True, slots=True)
class MiningOptions:
    """Where the memories are and how pairs are chosen (see the module docstring)."""

    folder: str = ".serena/memories"
    snapshots: int = 4
    max_files: int = 10
    max_mentions: int = 5
    revision_words: int = 32

    def __post_init__(self) -> None:
        if not self.folder.strip("/") or ".." in self.folder.split("/"):
            raise InvalidInput(f"--folder {self.folder!r} must be a folder inside the repository")
        if not 1 <= self.snapshots <= 50:
            raise InvalidInput("snapshots must be between 1 and 50")
        if self.max_files < 1 or self.max_mentions < 1 or self.revision_words < 4:
            raise InvalidInput("max_files and max_mentions must be >= 1, revision_words >= 4")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A commit whose memories pairs are asked of, and how many memories it holds."""

    commit: str
    time: int
    memories: int


@dataclass(frozen=True, slots=True)
class MinedPair:
    """One mined question: its ``kind``, the memories that answer it, the snapshot it is asked of and the
    commit it came from."""

    id: str
    kind: str
    query: str
    expected: tuple[str, ...]
    snapshot: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "query": self.query, "expected": list(self.expected),
            "snapshot": self.snapshot, "source": self.source,
        }  # fmt: skip


@dataclass
class MinedSet:
    """What ``mine`` found in one repository: the snapshots, the kept pairs and the counts per kind
    (``mined``, each filter, ``kept``)."""

    repository: str
    folder: str
    snapshots: list[Snapshot]
    pairs: list[MinedPair]
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def for_snapshot(self, commit: str) -> list[MinedPair]:
        return [pair for pair in self.pairs if pair.snapshot == commit]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: a golden file (``queries``) with the snapshots and counts beside it."""
        return {
            "repository": self.repository,
            "folder": self.folder,
            "snapshots": [{"commit": s.commit, "time": s.time, "memories": s.memories} for s in self.snapshots],
            "counts": self.counts,
            "queries": [pair.to_dict() for pair in self.pairs],
        }


def mine(repo: Path | str, options: MiningOptions | None = None) -> MinedSet:
    """Mine ``repo``'s history for evaluation pairs (see the module docstring)."""
    options = options or MiningOptions()
    repo = Path(repo)
    if not repo.is_dir() or not is_repository(repo):
        raise InvalidInput(f"{repo} is not a git repository")
    history = commits(repo, options.folder)
    prefix = options.folder.strip("/") + "/"
    walk = _Walk(history, prefix)
    chosen = walk.snapshot_indexes(options.snapshots)
    if not chosen:
        raise InvalidInput(f"no commit of {repo} holds a memory under {prefix}")
    sets = walk.states(chosen)
    snapshots = [Snapshot(history[i].sha, history[i].time, len(sets[i])) for i in chosen]
    miner = _Miner(repo, history, walk, chosen, sets, options, prefix)
    return MinedSet(str(repo), prefix.rstrip("/"), snapshots, *miner.pairs())


def snapshot_texts(repo: Path | str, snapshot: str, folder: str) -> dict[str, str]:
    """The memories ``snapshot`` holds: name -> text (``.md`` files under ``folder``)."""
    return {path[: -len(".md")]: text for path, text in read_tree(Path(repo), snapshot, folder).items()}


class _Walk:
    """The memories folder through the history: which names each commit changed, and the renames."""

    def __init__(self, history: list[Commit], prefix: str) -> None:
        self.history = history
        self.prefix = prefix
        # per commit: (status, name, old name) for each memory it changed
        self.changes: list[list[tuple[str, str | None, str | None]]] = []
        self.counts: list[int] = []
        present: set[str] = set()
        for commit in history:
            mine = []
            for change in commit.changes:
                name, old = self.name_of(change.path), self.name_of(change.old_path)
                if name is None and old is None:
                    continue
                mine.append((change.status, name, old))
                _apply(present, change.status, name, old)
            self.changes.append(mine)
            self.counts.append(len(present))

    def name_of(self, path: str | None) -> str | None:
        if path is None or not path.startswith(self.prefix) or not path.endswith(".md"):
            return None
        return path[len(self.prefix) : -len(".md")]

    def snapshot_indexes(self, wanted: int) -> list[int]:
        """``wanted`` commits spread over the folder's history, from the first holding a quarter of its
        largest count to the last holding any memory."""
        touching = [i for i, mine in enumerate(self.changes) if mine and self.counts[i] > 0]
        if not touching:
            return []
        last = touching[-1]
        floor = max(self.counts) / 4
        start = next(i for i in touching if self.counts[i] >= floor)
        span = [i for i in touching if start <= i <= last]
        if wanted == 1 or len(span) == 1:
            return [last]
        picks = {span[round(j * (len(span) - 1) / (wanted - 1))] for j in range(wanted)}
        return sorted(picks)

    def states(self, indexes: list[int]) -> dict[int, frozenset[str]]:
        """The memory names after each of ``indexes``."""
        present: set[str] = set()
        wanted, found = set(indexes), {}
        for i, mine in enumerate(self.changes):
            for status, name, old in mine:
                _apply(present, status, name, old)
            if i in wanted:
                found[i] = frozenset(present)
        return found

    def forward(self, name: str, start: int, end: int) -> str | None:
        """``name`` after commit ``start`` as it is called after commit ``end`` (renames followed; None:
        deleted on the way)."""
        for i in range(start + 1, end + 1):
            for status, new, old in self.changes[i]:
                if old == name and status == "R":
                    if new is None:
                        return None
                    name = new
                elif new == name and status == "D":
                    return None
        return name


def _apply(present: set[str], status: str, name: str | None, old: str | None) -> None:
    if status == "D" and name is not None:
        present.discard(name)
        return
    if old is not None:
        present.discard(old)
    if name is not None:
        present.add(name)


class _Miner:
    """The three kinds of pair over one walk (see the module docstring)."""

    def __init__(
        self, repo: Path, history: list[Commit], walk: _Walk, chosen: list[int], sets: dict[int, frozenset[str]],
        options: MiningOptions, prefix: str,
    ) -> None:  # fmt: skip
        self.repo, self.history, self.walk, self.chosen, self.sets = repo, history, walk, chosen, sets
        self.options, self.prefix = options, prefix
        self.counts = {kind: dict.fromkeys(("mined", *FILTERS, "kept"), 0) for kind in KINDS}
        subjects = Counter(_shape(commit.subject) for commit in history)
        tags = Counter(_tag(commit.subject) for commit in history)
        self.generic = {subject for subject, seen in subjects.items() if seen >= GENERIC_REPEATS}
        # a bracketed tag that a tool puts on its commits ("[auto] ..."): every subject carrying it
        self.machine = {tag for tag, seen in tags.items() if tag and seen >= GENERIC_REPEATS}
        self.machine_made = {commit.sha for commit in history if _tag(commit.subject) in self.machine}
        self._texts: dict[str, dict[str, str]] = {}
        self._written_by = {
            commit.sha: {name for _, name, _ in walk.changes[i] if name is not None} for i, commit in enumerate(history)
        }

    def pairs(self) -> tuple[list[MinedPair], dict[str, dict[str, int]]]:
        candidates = [*self._commit_and_mention(), *self._revisions()]
        kept: list[MinedPair] = []
        seen: set[tuple[str, tuple[str, ...], str]] = set()
        for pair in candidates:
            counts = self.counts[pair.kind]
            counts["mined"] += 1
            reason = self._filtered(pair)
            key = (pair.query.lower(), pair.expected, pair.snapshot)
            if reason is None and key in seen:
                reason = "duplicate"
            if reason is not None:
                counts[reason] += 1
                continue
            seen.add(key)
            counts["kept"] += 1
            kept.append(pair)
        return kept, self.counts

    # -- commit and mention ----------------------------------------------------------------
    def _commit_and_mention(self) -> Iterable[MinedPair]:
        present: set[str] = set()
        for i, commit in enumerate(self.history):
            mine = self.walk.changes[i]
            for status, name, old in mine:
                _apply(present, status, name, old)
            query = _clean_subject(commit.subject)
            changed = {name for status, name, _ in mine if name is not None and status != "D"}
            single = len(mine) == 1 and len(changed) == 1 and len(commit.changes) <= self.options.max_files
            if single:
                yield self._asked("commit", query, tuple(changed), i, commit)
            named = [name for name in self._mentions(commit.body, present) if name not in changed]
            if not named:
                continue
            if len(named) > self.options.max_mentions:
                self.counts["mention"]["mined"] += 1
                self.counts["mention"]["crowded"] += 1
                continue
            yield self._asked("mention", query, tuple(sorted(named)), i, commit)

    def _asked(self, kind: str, query: str, names: tuple[str, ...], index: int, commit: Commit) -> MinedPair:
        """The pair asked of the first snapshot at or after ``index`` holding every one of ``names``
        (``snapshot`` empty when none does: filtered as gone)."""
        for snapshot in self.chosen:
            if snapshot < index:
                continue
            moved = [self.walk.forward(name, index, snapshot) for name in names]
            if all(name is not None and name in self.sets[snapshot] for name in moved):
                found = tuple(sorted(name for name in moved if name is not None))
                return MinedPair(
                    _pair_id(kind, commit.sha, found), kind, query, found, self.history[snapshot].sha, commit.sha
                )
        return MinedPair(_pair_id(kind, commit.sha, names), kind, query, names, "", commit.sha)

    def _mentions(self, body: str, present: set[str]) -> list[str]:
        """The memories ``body`` names: a name, a path under the folder, or the last part of a nested name
        that only one memory has (names of one word are not looked for)."""
        if not body:
            return []
        by_stem: dict[str, list[str]] = {}
        for name in present:
            by_stem.setdefault(name.rsplit("/", 1)[-1], []).append(name)
        named: set[str] = set()
        for token in _TOKEN.findall(body):
            token = token.strip("./-")
            if token.startswith(self.prefix):
                token = token[len(self.prefix) :]
            token = token.removesuffix(".md")
            if len(re.split(r"[-_/]", token)) < 2:
                continue
            if token in present:
                named.add(token)
            elif len(by_stem.get(token, ())) == 1:
                named.add(by_stem[token][0])
        return sorted(named)

    # -- revision ----------------------------------------------------------------------------
    def _revisions(self) -> Iterable[MinedPair]:
        """For each snapshot and memory it holds, the first later commit that modified it."""
        asked: list[tuple[int, int, str]] = []  # (snapshot index, commit index, name)
        for position, snapshot in enumerate(self.chosen):
            end = self.chosen[position + 1] if position + 1 < len(self.chosen) else len(self.history) - 1
            done: set[str] = set()
            for i in range(snapshot + 1, end + 1):
                for status, name, _ in self.walk.changes[i]:
                    if status == "M" and name in self.sets[snapshot] and name not in done:
                        done.add(name)
                        asked.append((snapshot, i, name))
                    elif name is not None:
                        done.add(name)  # renamed or deleted and added again: no longer the same text
        paths = [(self.history[s].sha, self._path(n)) for s, _, n in asked]
        paths += [(self.history[i].sha, self._path(n)) for _, i, n in asked]
        texts = read_files(self.repo, paths)
        for snapshot, index, name in asked:
            before = texts.get((self.history[snapshot].sha, self._path(name)))
            after = texts.get((self.history[index].sha, self._path(name)))
            if before is None or after is None:
                continue
            query = _new_lines(before, after, self.options.revision_words)
            commit = self.history[index]
            yield MinedPair(
                _pair_id("revision", commit.sha, (name,)), "revision", query, (name,), self.history[snapshot].sha,
                commit.sha,
            )  # fmt: skip

    def _path(self, name: str) -> str:
        return f"{self.prefix}{name}.md"

    # -- filters -----------------------------------------------------------------------------
    def _filtered(self, pair: MinedPair) -> str | None:
        if len(query_terms(pair.query)) < MIN_TERMS:
            return "generic"
        if pair.kind != "revision" and (_shape(pair.query) in self.generic or pair.source in self.machine_made):
            return "generic"
        if not pair.snapshot:
            return "gone"
        terms = set(query_terms(pair.query))
        texts = self._snapshot(pair.snapshot)
        for name in pair.expected:
            if _repeats(terms, name.replace("/", " ").replace("-", " ").replace("_", " ")):
                return "trivial"
            title = first_heading(texts.get(name, ""))
            if title and _repeats(terms, title):
                return "trivial"
        known = set(texts) | self._written_by.get(pair.source, set())  # a new memory may be named before it exists
        if set(self._mentions(pair.query, known)) - set(pair.expected):
            return "elsewhere"
        return None

    def _snapshot(self, commit: str) -> dict[str, str]:
        if commit not in self._texts:
            self._texts[commit] = snapshot_texts(self.repo, commit, self.prefix)
        return self._texts[commit]


def _repeats(terms: set[str], text: str) -> bool:
    """Whether ``terms`` hold at least ``TRIVIAL_SHARE`` of ``text``'s terms."""
    wanted = query_terms(text)
    return bool(wanted) and sum(term in terms for term in wanted) >= TRIVIAL_SHARE * len(wanted)


def _shape(subject: str) -> str:
    """What repeats in machine-made subjects: the cleaned subject, lower-cased, numbers left out."""
    return " ".join(re.sub(r"\d+", " ", _clean_subject(subject).lower()).split())


def _tag(subject: str) -> str:
    """A subject's leading bracketed tag, lower-cased ("" when it has none)."""
    found = re.match(r"\s*(\[[^\]]*\])", subject)
    return found.group(1).lower() if found else ""


def _clean_subject(subject: str) -> str:
    """A subject without its conventional-commit type, bracketed tags and trailing pull-request number."""
    text = _PR_NUMBER.sub("", subject)
    return _CONVENTIONAL.sub("", text, count=1).strip() or subject.strip()


def _new_lines(before: str, after: str, words: int) -> str:
    """The first ``words`` words of ``after``'s lines that ``before`` lacks (code blocks and markup left out)."""
    old = {_plain(line) for line in before.splitlines()}
    taken: list[str] = []
    fenced = False
    for line in after.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        plain = _plain(line)
        if fenced or not plain or plain in old or set(plain) <= set("-:| "):
            continue
        taken += plain.split()
        if len(taken) >= words:
            break
    return " ".join(taken[:words])


def _plain(line: str) -> str:
    text = _URL.sub("", _LINK.sub(r"\1", line))
    text = re.sub(r"^\s*(?:[-*+]|\d+\.)\s+", "", text)
    text = re.sub(r"\[[ xX]\]\s*", "", text)
    words = [word for word in _MARKUP.sub(" ", text).split() if word.count("/") < 2]  # paths are not words
    return " ".join(words)


def _pair_id(kind: str, sha: str, names: tuple[str, ...]) -> str:
    digest = hashlib.sha1("\x00".join(names).encode("utf-8")).hexdigest()[:6]
    return f"{kind}-{sha[:10]}-{digest}"
