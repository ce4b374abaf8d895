"""Ten copies of the 1026-memory corpus in one PostgreSQL database: no operation of one project sees another's rows.

Builds ``--projects`` copies of ai-agents-1026 (every memory ends with its
project's marker word, as in ``bench_load.py``, plus one memory of its own,
``only/pNN``, naming the project's own ADR), starts a real PostgreSQL 18 with
pgvector, indexes every copy into the one database (hashing embedder, so
dense search runs in the database too), then runs ``--operations`` random
operations, each on a random project, through each project's ``Router`` and
``Team`` as ``memrouter serve --projects`` opens them:

- search (lexical, semantic, hybrid) for a corpus question, or for another
  project's marker word (must find nothing);
- list and get (the names and count of the project's own rows);
- the graph: ``related`` and ``get_entity`` of the project's own memory and
  ADR (another project's must be unknown);
- the team channel: set, list, add and claim tasks (every record the project
  sees carries its own number).

Every answer is checked against what the project itself holds; a row of
another project anywhere is counted. Also checked in SQL: each project's
rows number its own memories. Prints the counts per operation and the
rows of another project found (0 is the target).

    .venv/bin/python benchmarks/bench_isolation.py [--projects 10] [--operations 2000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import CORPUS, QUERIES  # noqa: E402 - benchmarks run as scripts
from bench_load import make_projects

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.errors import NotFound
from memrouter.core.records import replace
from memrouter.team import Team
from memrouter.testing.postgres_server import running_postgres


def own_memory(number: int) -> str:
    return (
        f"# Only project {number}\n\nThe records of project {number}: see ADR-{900 + number} and [[adr-index]].\n\n"
        f"Project marker: markerp{number:02d}\n"
    )


def check(
    project: int, routers: list[Router], teams: list[Team], held: int, rng: random.Random, seen: Counter[str]
) -> int:
    """One random operation on ``project`` (which holds ``held`` memories); how many rows of another project
    (or missing rows of its own) it returned."""
    router, team, key = routers[project], teams[project], f"p{project:02d}"
    other = rng.choice([n for n in range(len(routers)) if n != project])
    kind = rng.choice(("search", "marker", "list", "get", "graph", "team"))
    seen[kind] += 1
    foreign = 0
    if kind == "search":
        hits = router.search(rng.choice(QUERIES), limit=10, mode=rng.choice(("lexical", "semantic", "hybrid")),
                             content=True)  # fmt: skip
        foreign += sum(f"marker{key}" not in (hit.content or "") for hit in hits)
    elif kind == "marker":  # another project's own word: only its rows hold it
        word = f"markerp{other:02d}"
        lexical = router.search(word, limit=10, mode="lexical", content=True)
        hybrid = router.search(word, limit=10, mode="hybrid", content=True)  # dense always answers something
        foreign += len(lexical) + sum(word in (hit.content or "") for hit in hybrid)
    elif kind == "list":
        names = {summary.name for summary in router.list()}
        foreign += len({name for name in names if name.startswith("only/") and name != f"only/p{project:02d}"})
        foreign += abs(len(names) - held)
    elif kind == "get":
        name = rng.choice(sorted(summary.name for summary in router.list()))
        try:
            foreign += f"marker{key}" not in router.get(name).text
        except NotFound:  # listed, yet not among the project's own files
            foreign += 1
    elif kind == "graph":
        related = {r.name for r in router.related(f"only/p{project:02d}", depth=2)}
        foreign += len({name for name in related if name.startswith("only/") and name != f"only/p{project:02d}"})
        entity = router.get_entity(f"ADR-{900 + project}")
        foreign += sum(relation.memory != f"only/p{project:02d}" for relation in entity.relations)
        try:
            router.get_entity(f"ADR-{900 + other}")
            foreign += 1
        except NotFound:
            pass
    else:
        team.team_set(f"bench/{rng.randrange(5)}", {"project": project})
        team.task_add(f"{key} task", {"project": project}, agent_id="bench")
        if rng.random() < 0.5:
            team.task_claim("bench")
        foreign += sum(v.value != {"project": project} for v in team.team_list("bench/"))
        foreign += sum(t.payload != {"project": project} for t in team.task_list())
    return foreign


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--operations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp, running_postgres() as server:
        folders = make_projects(args.corpus, Path(tmp), args.projects, "hybrid")
        started = time.perf_counter()
        routers, teams = [], []
        for number, folder in enumerate(folders.values()):
            root = folder / ".serena" / "memories"
            (root / "only").mkdir()
            (root / "only" / f"p{number:02d}.md").write_text(own_memory(number), encoding="utf-8")
            (folder / "memrouter.toml").write_text(
                f'[index]\nurl = "{server.url}"\nproject = "p{number:02d}"\n[embed]\nbackground = false\n',
                encoding="utf-8",
            )
            config = Config.load(root=root, index_dir=Path(tmp) / f"idx{number}")
            router = Router(replace(config, embedder="hash"), watch=False)
            router.refresh(embed=True)
            router.publish()
            routers.append(router)
            teams.append(router.team())
            teams[-1].register("bench", [f"p{number:02d}"])
        held = len(routers[0].list())
        print(f"{args.projects} projects x {held} memories indexed into one database "
              f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
        seen: Counter[str] = Counter()
        found: Counter[str] = Counter()
        started = time.perf_counter()
        for _ in range(args.operations):
            before = seen.copy()
            rows = check(rng.randrange(args.projects), routers, teams, held, rng, seen)
            found[next(iter(seen - before))] += rows
        foreign = sum(found.values())
        took = time.perf_counter() - started
        import psycopg

        with psycopg.connect(server.url) as conn:
            counts = dict(conn.execute("SELECT project, count(*) FROM memories GROUP BY project").fetchall())
        fell_back = [w for router in routers for w in router.warnings if "PostgreSQL" in w]
        for router in routers:
            router.close()
    print(f"{args.operations} operations in {took:.1f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items())))
    print(f"rows per project in the database: {sorted(set(counts.values()))} ({len(counts)} projects)")
    print(f"rows of another project returned: {foreign} {dict(found)}; answers from the local index instead: "
          f"{len(fell_back)}")  # fmt: skip
    sys.exit(1 if foreign or fell_back else 0)


if __name__ == "__main__":
    main()
