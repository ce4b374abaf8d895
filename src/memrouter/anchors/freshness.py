"""Whether the code an anchor names changed since the memory was last changed or verified, read from git.

The baseline of a memory is the newer of the last commit that changed its
file and the commit its front matter says it was ``verified`` at; a memory
with uncommitted changes is its own baseline ("now"). For each anchor:

- its path is taken as the memory wrote it and followed through git's renames
  after the baseline (a renamed file is ``moved``, with the new path proposed);
- a file anchor is ``stale`` when the file's content differs from the
  baseline's, with the commits that touched it since;
- a symbol anchor compares the symbol's text alone (``memrouter.anchors.symbols``):
  a commit that only edits a sibling leaves it ``fresh``; the commits that
  changed the symbol and the diff of just the symbol are given; a symbol gone
  from its file is looked for in the files changed since (same dotted name, or
  the same name and text) and is ``moved`` when found, else ``broken``;
- a lines anchor is followed by its lines' content, not their numbers;
- a path gone (deleted, not renamed) is ``broken``; a commit anchor is
  ``fresh`` while the commit is in the history.

"Now" is the work tree, uncommitted edits included (said so in the result),
or the staging area for the pre-commit report. A file in a language without
a grammar is checked at file level, and the result says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memrouter.anchors.reading import MAX_PARSE, Blob, Repository
from memrouter.anchors.records import AnchorCheck
from memrouter.anchors.spec import EXPLICIT, Anchor
from memrouter.anchors.symbols import Definition, language_for
from memrouter.anchors.text import (
    Block,
    anchored_diff,
    block_of,
    file_level_note,
    find_definition,
    holds_block,
    is_binary,
    join_notes,
    lines_of,
    map_lines,
)

__all__ = ["Baseline", "Checker"]

WALK = 12  # versions of a file read to find which commits changed a symbol (the newest ones)
MOVE_CANDIDATES = 400  # files changed since the baseline searched for a symbol that left its file
_FAMILY = {"tsx": "typescript", "javascript": "typescript"}  # a symbol may move between these


@dataclass(frozen=True, slots=True)
class Baseline:
    """Where a memory's anchors are compared from: ``seq`` (None: now, the memory has uncommitted changes) and
    ``written``, the commit its text was last changed in (where its paths and line numbers are read)."""

    seq: int | None
    written: int | None


@dataclass
class Checker(Repository):
    """Checks anchors against one repository's history and work tree (see the module docstring)."""

    _touched_since: dict[int, list[str]] = field(default_factory=dict)

    # -- the memory's baseline ---------------------------------------------------
    def baseline(self, memory_path: str, verified: str | None) -> tuple[Baseline, list[str]]:
        """The baseline of the memory file at ``memory_path`` (see ``Baseline``) and notes about it."""
        notes: list[str] = []
        if self.uncommitted(memory_path) or not self.history.known(memory_path):
            notes.append("the memory has uncommitted changes: its anchors are taken as checked now")
            return Baseline(None, None), notes
        written = self.history.last_change(memory_path)
        seq = written
        if verified:
            at = self.history.seq_of(verified)
            if at is None:
                notes.append(f"verified: {verified} is no commit of this branch's history; ignored")
            elif written is None or at > written:
                seq = at
        return Baseline(seq, written), notes

    # -- one anchor --------------------------------------------------------------
    def check(self, anchor: Anchor, base: Baseline) -> AnchorCheck | None:
        """The anchor's state from ``base``; None for an inferred path that was no file then nor now (a memory
        may name a file it says is gone)."""
        fields = AnchorCheck(
            written=anchor.written, kind=anchor.kind, origin=anchor.origin, status="fresh", path=anchor.path,
            symbol=anchor.symbol, commit=anchor.commit, line=anchor.line,
            lines=f"L{anchor.lines[0]}-L{anchor.lines[1]}" if anchor.lines else None,
        )  # fmt: skip
        if anchor.problem is not None:
            return replace(fields, status="broken", note=anchor.problem)
        if anchor.commit is not None:
            return self._commit(anchor, fields)
        assert anchor.path is not None
        if base.seq is None:
            return self._now_only(anchor, fields)
        return self._against(anchor, base, fields)

    def _commit(self, anchor: Anchor, fields: AnchorCheck) -> AnchorCheck:
        assert anchor.commit is not None
        seq = self.history.seq_of(anchor.commit)
        if seq is not None:
            return replace(fields, status="fresh", commit=self.history.commit(seq))
        return replace(fields, status="broken", note=f"commit {anchor.commit} is not in this branch's history")

    def _now_only(self, anchor: Anchor, fields: AnchorCheck) -> AnchorCheck | None:
        """An anchor of a memory with uncommitted changes: it only has to exist now."""
        assert anchor.path is not None
        blob = self.now(anchor.path)
        if blob is None:
            if anchor.origin != EXPLICIT and not self.history.known(anchor.path):
                return None
            return replace(fields, status="broken", note=f"no file {anchor.path}")
        if anchor.symbol is not None:
            found, note = self._symbol_in(blob, anchor.path, anchor.symbol)
            if found is False:
                return replace(fields, status="broken", note=note)
            return replace(fields, status="fresh", note=note)
        if anchor.lines is not None and anchor.lines[1] > len(blob[1].splitlines()):
            return replace(fields, status="broken", note=f"{anchor.path} has fewer than {anchor.lines[1]} lines")
        return replace(fields, status="fresh")

    def _symbol_in(self, blob: Blob, path: str, symbol: str) -> tuple[bool | None, str | None]:
        """Whether ``symbol`` is defined in ``blob`` (None: cannot tell, and the note says why)."""
        language = language_for(path, blob[1][:200])
        if is_binary(blob[1]):
            return False, f"{path} is a binary file: it has no symbols (anchor the file itself)"
        if not language or not self.parsers.available(language):
            return None, file_level_note(path, language, self.parsers)
        found = self.definitions(blob, language) or {}
        if find_definition(found, symbol, language) is None:
            return False, f"no definition {symbol} in {path}"
        return True, None

    def _against(self, anchor: Anchor, base: Baseline, fields: AnchorCheck) -> AnchorCheck | None:
        assert anchor.path is not None and base.seq is not None
        start = base.written if base.written is not None else base.seq
        # The path as the memory wrote it, through the renames made before the baseline (a verification later).
        path = anchor.path
        for renamed, at in self.history.follow(anchor.path, start):
            if at > base.seq:
                break
            path = renamed
        begin = base.seq
        if not self.history.existed_at(path, begin):
            added = next((s for s in self.history.changed_after(path, begin) if self.history.existed_at(path, s)), None)
            if added is not None:
                begin = added  # written before its file was committed: compared from the commit that added it
            elif self.exists_now(path) and self.uncommitted(path):
                return self._uncommitted_new(anchor, path, fields)
            elif anchor.origin != EXPLICIT:
                return None  # named as gone, or never a file of this repository
            elif self.exists_now(path):
                pass  # a file git does not track: checked as it is now
            else:
                return replace(fields, status="broken", note=f"no file {path}, then or now")
        if (
            self.history.existed_at(path, begin) and not self.history.changed_after(path, begin)
            and not self.uncommitted(path) and (anchor.kind == "file" or (anchor.kind == "symbol" and anchor.origin != EXPLICIT))
        ):  # fmt: skip
            return fields  # untouched since the baseline (an explicit symbol or range is still looked for: it may be mistyped)
        chain = self.history.follow(path, begin)
        current = chain[-1][0] if chain else path
        moved_to = current if chain else None
        segments = [(path, begin), *chain]
        versions = self._versions(segments)
        now = self.now(current)
        if now is None and chain and self.now(path) is not None:  # renamed in history, back at its old path now
            current, moved_to, now = path, None, self.now(path)
        then: Blob | None = None
        then_id: str | None = None  # a file anchor needs no more than whether the blob is the same
        if self.history.existed_at(path, begin):
            if anchor.kind == "file":
                then_id = self.id_at(begin, path)
            else:
                then = self.at(begin, path)
                then_id = then[0] if then is not None else None
        if now is None:
            return self._gone(anchor, fields, path, begin, then, versions)
        commits = [seq for seq, _ in versions]
        uncommitted = self.uncommitted(current)
        if anchor.symbol is not None:
            return self._symbol(anchor, fields, path, current, moved_to, begin, then, now, versions, uncommitted)
        if anchor.lines is not None:
            return self._lines(anchor, fields, current, moved_to, base, begin, then, now, commits, uncommitted)
        same = then_id is not None and then_id == now[0]
        changed = () if same else tuple(self.history.commit(s) for s in commits)
        status = "fresh" if same else "stale"
        note = None
        if moved_to is not None:
            status = "moved" if same else "stale"
            note = f"renamed to {moved_to}" + ("" if same else " and changed")
        if status == "stale" and uncommitted:
            note = join_notes(note, "uncommitted edits count as now")
        return replace(
            fields,
            status=status,
            changed_in=changed,
            uncommitted=uncommitted and not same,
            moved_to=moved_to,
            note=note,
        )

    def _uncommitted_new(self, anchor: Anchor, path: str, fields: AnchorCheck) -> AnchorCheck:
        note = f"{path} is not committed yet: checked as it is now"
        return replace(fields, status="fresh", note=note, uncommitted=True)

    def _versions(self, segments: list[tuple[str, int]]) -> list[tuple[int, str]]:
        """(seq, the path then) of each commit after the first segment's seq that touched the file, following
        the renames in ``segments`` ([(path, from seq), (renamed path, rename seq), ...])."""
        found: list[tuple[int, str]] = []
        for index, (path, since) in enumerate(segments):
            until = segments[index + 1][1] if index + 1 < len(segments) else None
            for seq in self.history.changed_after(path, since):
                if until is not None and seq >= until:
                    break
                found.append((seq, path))
            if until is not None:
                found.append((until, segments[index + 1][0]))
        return sorted(set(found))

    def _short(self, seq: int) -> str:
        return self.history.commit(seq)[:7]

    def _gone(
        self, anchor: Anchor, fields: AnchorCheck, path: str, begin: int, then: Blob | None,
        versions: list[tuple[int, str]],
    ) -> AnchorCheck:  # fmt: skip
        """The file is gone now: a symbol may have moved to another file, else the anchor is broken."""
        gone_in = [self.history.commit(seq) for seq, _ in versions[-1:]] if versions else []
        uncommitted = self.uncommitted(path) and not versions
        if anchor.symbol is not None and then is not None:
            moved = self._elsewhere(anchor.symbol, path, begin, then, exclude={path})
            if moved is not None:
                return replace(fields,
                    status="moved", moved_to=moved, changed_in=tuple(gone_in), uncommitted=uncommitted,
                    note=f"{path} is gone; {anchor.symbol} is defined in {moved.split('#', 1)[0]} now"
                )  # fmt: skip
        where = "deleted in the work tree (uncommitted)" if uncommitted else "deleted"
        return replace(
            fields, status="broken", changed_in=tuple(gone_in), uncommitted=uncommitted, note=f"{path} was {where}"
        )

    # -- symbols ------------------------------------------------------------------
    def _symbol(
        self, anchor: Anchor, fields: AnchorCheck, path: str, current: str, moved_to: str | None, begin: int,
        then: Blob | None, now: Blob, versions: list[tuple[int, str]], uncommitted: bool,
    ) -> AnchorCheck:  # fmt: skip
        assert anchor.symbol is not None
        symbol = anchor.symbol
        if is_binary(now[1]):
            return replace(
                fields, status="broken", note=f"{current} is a binary file: it has no symbols (anchor the file itself)"
            )
        language = language_for(current, now[1][:200])
        if not language or not self.parsers.available(language):
            same = then is not None and then[0] == now[0]
            note: str | None = file_level_note(current, language, self.parsers)
            changed = () if same else tuple(self.history.commit(s) for s, _ in versions)
            status = ("moved" if moved_to else "fresh") if same else "stale"
            return replace(fields,
                status=status, changed_in=changed, uncommitted=uncommitted and not same,
                moved_to=f"{moved_to}#{symbol}" if moved_to else None, note=note
            )  # fmt: skip
        if len(now[1]) > MAX_PARSE or (then is not None and len(then[1]) > MAX_PARSE):
            same = then is not None and then[0] == now[0]
            return replace(fields,
                status=("moved" if moved_to else "fresh") if same else "stale",
                changed_in=() if same else tuple(self.history.commit(s) for s, _ in versions),
                uncommitted=uncommitted and not same, moved_to=f"{moved_to}#{symbol}" if moved_to else None,
                note=f"{current} is over {MAX_PARSE // 1_000_000} MB: checked at file level"
            )  # fmt: skip
        now_defs = self.definitions(now, language) or {}
        at_now = find_definition(now_defs, symbol, language)
        proposed = f"{moved_to}#{at_now[0]}" if moved_to and at_now else None
        if at_now is not None and then is not None and holds_block(then[1], block_of(now[1], at_now[1])):
            # The symbol's lines now are in the file as the memory saw it, whole and between the same
            # neighbours: unchanged, no second parse.
            touched = len(versions) + (1 if uncommitted else 0)
            note = f"{current} changed ({touched} {'change' if touched == 1 else 'changes'}); {symbol} did not"
            if moved_to is not None:
                note = f"renamed to {moved_to}; {note}"
            return replace(fields, status="moved" if moved_to else "fresh", moved_to=proposed, note=note)
        then_defs = self.definitions(then, language) or {} if then is not None else {}
        at_then = find_definition(then_defs, symbol, language)
        if at_then is None:
            # Not in the file when the memory was written: compared from the first version that defines it.
            first = self._first_defining(symbol, language, versions)
            if first is None:
                if at_now is None:
                    return replace(fields, status="broken", note=f"no definition {symbol} in {current}, then or now")
                note = f"{symbol} was defined after the memory was written, in uncommitted edits"
                return replace(fields, status="fresh", note=note, uncommitted=True, moved_to=proposed)
            begin, then = first
            at_then = find_definition(self.definitions(then, language) or {}, symbol, language)
            versions = [item for item in versions if item[0] > begin]
            assert at_then is not None
        assert then is not None
        if at_now is None:
            moved = self._elsewhere(symbol, current, begin, then, exclude={current, path})
            removed = self._symbol_changes(symbol, language, then, at_then[1], versions, until_gone=True)
            if moved is not None:
                return replace(fields,
                    status="moved", moved_to=moved, changed_in=removed, uncommitted=uncommitted,
                    note=f"{symbol} left {current}; it is defined in {moved.split('#', 1)[0]} now"
                )  # fmt: skip
            return replace(fields,
                status="broken", changed_in=removed, uncommitted=uncommitted and not removed,
                note=f"no definition {symbol} in {current} now"
            )  # fmt: skip
        if at_then[1].digest_in(then[1]) == at_now[1].digest_in(now[1]):
            note = None
            if then[0] != now[0]:
                touched = len(versions) + (1 if uncommitted else 0)
                note = f"{current} changed ({touched} {'change' if touched == 1 else 'changes'}); {symbol} did not"
            if moved_to is not None:
                note = join_notes(f"renamed to {moved_to}", note)
            return replace(fields, status="moved" if moved_to else "fresh", moved_to=proposed, note=note)
        changed = self._symbol_changes(symbol, language, then, at_then[1], versions)
        in_work_tree = uncommitted and self._changed_uncommitted(symbol, language, current, at_now[1].digest_in(now[1]))
        note = "uncommitted edits count as now" if in_work_tree else None
        if moved_to is not None:
            note = join_notes(f"renamed to {moved_to}", note)
        diff = anchored_diff(
            lines_of(then[1], at_then[1]), lines_of(now[1], at_now[1]),
            f"{path}#{symbol} @ {self._short(begin)}", f"{current}#{at_now[0]} now",
        )  # fmt: skip
        return replace(fields,
            status="stale", changed_in=changed, uncommitted=in_work_tree, moved_to=proposed, note=note, diff=diff
        )  # fmt: skip

    def _changed_uncommitted(self, symbol: str, language: str, path: str, now: str) -> bool:
        """Whether the uncommitted edits of ``path`` change ``symbol`` (against ``HEAD``)."""
        head = self.history.last
        if head == 0:
            return True
        committed = self.blobs.read(f"HEAD:{path}")
        if committed is None:
            return True
        found = find_definition(self.definitions(committed, language) or {}, symbol, language)
        return found is None or found[1].digest_in(committed[1]) != now

    def _first_defining(self, symbol: str, language: str, versions: list[tuple[int, str]]) -> tuple[int, Blob] | None:
        for seq, path in versions:
            blob = self.at(seq, path)
            if (
                blob is not None
                and find_definition(self.definitions(blob, language) or {}, symbol, language) is not None
            ):
                return seq, blob
        return None

    def _symbol_changes(
        self, symbol: str, language: str, then: Blob, at_then: Definition, versions: list[tuple[int, str]],
        *, until_gone: bool = False,
    ) -> tuple[str, ...]:  # fmt: skip
        """The commits among ``versions`` that changed ``symbol`` (or, ``until_gone``, removed it), oldest first.
        Only the newest ``WALK`` versions are read; a version still holding the symbol's lines verbatim is
        taken as not changing it, without a parse."""
        shown = versions[-WALK:]
        changed: list[str] = []
        previous_block: Block | None = block_of(then[1], at_then)
        previous = at_then.digest_in(then[1])
        if len(versions) > WALK:  # start from the version before the ones read
            seq, path = versions[-WALK - 1]
            start = self.at(seq, path)
            found = find_definition(self.definitions(start, language) or {}, symbol, language) if start else None
            if found is None:
                return tuple(self.history.commit(s) for s, _ in shown)
            assert start is not None
            previous, previous_block = found[1].digest_in(start[1]), block_of(start[1], found[1])
        self.prefetch(shown)
        for seq, path in shown:
            blob = self.at(seq, path)
            if blob is None:
                if previous:
                    changed.append(self.history.commit(seq))
                previous, previous_block = "", None
                continue
            if previous_block is not None and holds_block(blob[1], previous_block):
                continue  # the symbol's lines are there as they were, whole, between the same neighbours
            found = find_definition(self.definitions(blob, language) or {}, symbol, language)
            digest = found[1].digest_in(blob[1]) if found else ""
            if digest != previous:
                changed.append(self.history.commit(seq))
            previous = digest
            previous_block = block_of(blob[1], found[1]) if found else None
        return tuple(changed)

    def _touched_after(self, seq: int) -> list[str]:
        if seq not in self._touched_since:
            self._touched_since[seq] = sorted(
                path for path, events in self.history.events.items() if events and abs(events[-1]) > seq
            )
        return self._touched_since[seq]

    def _elsewhere(self, symbol: str, path: str, begin: int, then: Blob, exclude: set[str]) -> str | None:
        """``path#symbol`` moved to another file changed since ``begin``: the same dotted name there, or the same
        name with the same text. ``file#Symbol`` or None."""
        language = language_for(path, then[1][:200])
        if not language or not self.parsers.available(language):
            return None
        at_then = find_definition(self.definitions(then, language) or {}, symbol, language)
        leaf = symbol.rsplit(".", 1)[-1]
        family = _FAMILY.get(language, language)
        candidates = [
            candidate for candidate in [*self._touched_after(begin), *sorted(self.tree.changed), *sorted(self.tree.untracked)]
            if candidate not in exclude and _FAMILY.get(language_for(candidate) or "", language_for(candidate) or "") == family
        ][:MOVE_CANDIDATES]  # fmt: skip
        same_text: list[str] = []
        for candidate in dict.fromkeys(candidates):
            blob = self.now(candidate)
            if blob is None or leaf.encode() not in blob[1]:
                continue
            found = self.definitions(blob, language_for(candidate) or language) or {}
            exact = find_definition(found, symbol, language)
            if exact is not None:
                return f"{candidate}#{exact[0]}"
            if at_then is not None:
                same_text += [
                    f"{candidate}#{name}" for name, item in found.items()
                    if name.rsplit(".", 1)[-1] == leaf and item.digest_in(blob[1]) == at_then[1].digest_in(then[1])
                ]  # fmt: skip
        return same_text[0] if len(same_text) == 1 else None

    # -- lines --------------------------------------------------------------------
    def _lines(
        self, anchor: Anchor, fields: AnchorCheck, current: str, moved_to: str | None, base: Baseline,
        begin: int, then: Blob | None, now: Blob, commits: list[int], uncommitted: bool,
    ) -> AnchorCheck:  # fmt: skip
        assert anchor.lines is not None and anchor.path is not None
        first, last = anchor.lines
        if then is None:
            return replace(
                fields, status="fresh", note=f"{current} is newer than the memory: its lines are taken as now"
            )
        if base.written is not None and base.written < begin:  # line numbers are the written version's
            written = self.at(base.written, anchor.path)
            if written is not None:
                state, first, last = map_lines(written[1], then[1], first, last)
                if state == "gone":
                    return replace(fields, status="broken", note="the lines were gone at the verified commit")
        if last > len(then[1].splitlines()):
            return replace(fields, status="broken", note=f"{anchor.path} had fewer than {last} lines")
        state, new_first, new_last = map_lines(then[1], now[1], first, last)
        where = f"L{new_first}-L{new_last}"
        proposed = f"{moved_to or current}:{where}" if (moved_to or (new_first, new_last) != (first, last)) else None
        changed = tuple(self.history.commit(s) for s in commits) if state != "same" else ()
        if state == "same":
            note = f"now at {where}" if (new_first, new_last) != (first, last) else None
            if moved_to:
                note = join_notes(f"renamed to {moved_to}", note)
            status = "moved" if moved_to else "fresh"
            return replace(fields, status=status, moved_to=proposed if moved_to else None, note=note, lines=where)
        old_text = b"\n".join(then[1].splitlines()[first - 1 : last])
        if state == "gone":
            return replace(
                fields, status="broken", changed_in=changed, uncommitted=uncommitted, note="the lines are gone"
            )
        new_text = b"\n".join(now[1].splitlines()[new_first - 1 : new_last])
        diff = anchored_diff(
            old_text, new_text, f"{anchor.path}:L{first}-L{last} @ {self._short(begin)}", f"{current}:{where} now"
        )
        note = "uncommitted edits count as now" if uncommitted else None
        return replace(fields,
            status="stale", changed_in=changed, uncommitted=uncommitted, moved_to=proposed, note=note, diff=diff,
            lines=where,
        )  # fmt: skip
