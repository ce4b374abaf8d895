"""The janitor on a small seeded set: real memories, edited copies, planted contradictions (properties, not timings)."""

from __future__ import annotations

from pathlib import Path

from helpers import write

from memrouter import Router
from memrouter.testing.janitor_seed import seeded_set


def test_planted_duplicates_and_contradictions_are_found_then_applied_once(corpus_1026: Path, tmp_path: Path) -> None:
    paths = sorted(corpus_1026.rglob("*.md"))[::8]  # about 130 memories from every folder
    originals = {str(p.relative_to(corpus_1026).with_suffix("")).lower(): p.read_text() for p in paths}
    seeded = seeded_set(originals, seed=3, contradictions=12)
    root = tmp_path / "memories"
    for name, text in seeded.memories.items():
        write(root, name, text)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        report = router.janitor()
        groups = [set(f.names) for f in report.findings if f.reason in ("duplicate", "near_duplicate")]
        found = [pair for pair in seeded.duplicate_pairs if any(set(pair) <= group for group in groups)]
        assert len(found) >= 0.95 * len(seeded.duplicate_pairs)
        reported = {frozenset((p["a"], p["b"])) for f in report.findings if f.reason == "near_duplicate" for p in f.evidence["pairs"]}  # fmt: skip
        planted = {frozenset(pair) for pair in seeded.duplicate_pairs}
        assert len(reported & planted) >= 0.9 * len(reported)
        conflicts = {f.names for f in report.findings if f.reason == "contradiction"}
        caught = [
            (old, new) for old, new in seeded.contradictions if (old, new) in conflicts or (f"copies/{old}", new) in conflicts
        ]  # fmt: skip
        assert len(caught) >= 0.8 * len(seeded.contradictions)

        proposals = {p.name: p for p in report.proposals}
        for old, copy in seeded.duplicate_pairs:  # the copies are newer: the originals point at them (or a newer note)
            if old in proposals:
                assert proposals[old].superseded_by in (copy, *(n for o, n in seeded.contradictions if o == old))
        applied = router.janitor(apply=True)
        assert sum(p.applied for p in applied.proposals) == len(report.proposals)
        assert router.janitor().proposals == ()  # idempotent
        assert sorted(p.name for p in router.list()) == sorted(seeded.memories)  # nothing deleted
