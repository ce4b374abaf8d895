"""The web UI's pages over a real Router and a real git repository, driven through Starlette's TestClient."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from uiproject import ui_project

from memrouter import Router
from memrouter.ui.app import create_app

BASE = "http://127.0.0.1:8766"


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, str]:
    return ui_project(tmp_path)


@pytest.fixture
def router(project: tuple[Path, Path, str], tmp_path: Path) -> Iterator[Router]:
    with Router.open(root=project[1], index_dir=tmp_path / "idx", watch=False) as router:
        yield router


@pytest.fixture
def client(router: Router) -> TestClient:
    return TestClient(create_app(router, reviewer="user:Reviewer Rita"), base_url=BASE)


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field in the page"
    return found.group(1)


def _article(html: str) -> str:
    """The rendered memory text of a memory page."""
    return html.split('<article class="body"', 1)[1].split("</article>", 1)[0]


def test_search_shows_hits_with_snippet_and_why(client: TestClient) -> None:
    page = client.get("/", params={"q": "PostgreSQL orders", "mode": "lexical"})
    assert page.status_code == 200
    assert 'href="/memory/decisions/database"' in page.text
    assert "lexical #1" in page.text and "<mark>PostgreSQL</mark>" in page.text


def test_search_without_a_mode_runs_the_configured_one_as_the_agents_do(client: TestClient, router: Router) -> None:
    """The page ranks as the CLI and MCP do: the project's ``[search] mode`` (hybrid by default), said so."""
    query = "PostgreSQL orders"
    page = client.get("/", params={"q": query})
    assert page.status_code == 200
    assert router.config.search.mode == "hybrid"
    assert '<input type="radio" name="mode" value="hybrid" checked>' in page.text
    shown = [hit.name for hit in router.search(query, 20) if f'href="/memory/{hit.name}"' in page.text]
    assert shown and sorted(shown, key=lambda name: page.text.index(f'href="/memory/{name}"')) == shown


def test_search_filters_reach_the_router(client: TestClient) -> None:
    page = client.get("/", params={"q": "database", "mode": "lexical", "prefix": "adr/"})
    assert 'href="/memory/adr/adr-001"' in page.text and 'href="/memory/decisions/database"' not in page.text
    page = client.get("/", params={"q": "database", "mode": "lexical", "kind": "adr"})
    assert 'href="/memory/decisions/database"' in page.text and 'href="/memory/adr/adr-001"' not in page.text


def test_time_travel_searches_and_reads_the_older_text(client: TestClient, project: tuple[Path, Path, str]) -> None:
    first = project[2]
    page = client.get("/", params={"q": "MySQL", "mode": "lexical", "as_of": first})
    assert f'href="/memory/decisions/database?as_of={first}"' in page.text
    assert "0 results" in client.get("/", params={"q": "MySQL", "mode": "lexical"}).text  # today's text has none
    slider = re.search(r"data-commits='([^']*)'", client.get("/").text)
    assert slider is not None
    commits = json.loads(html.unescape(slider.group(1)))
    assert [c["commit"] for c in commits] == [first[:7], commits[1]["commit"]] and "first decisions" in commits[0][
        "label"
    ]
    old = _article(client.get("/memory/decisions/database", params={"as_of": first}).text)
    assert "We use MySQL for orders." in old and "PostgreSQL 16" not in old
    now = _article(client.get("/memory/decisions/database").text)
    assert "PostgreSQL 16" in now and "MySQL" not in now


def test_memory_page_shows_fields_provenance_history_and_neighbours(
    client: TestClient, project: tuple[Path, Path, str]
) -> None:
    page = client.get("/memory/decisions/database")
    assert page.status_code == 200
    assert "<dt>kind</dt><dd>adr</dd>" in page.text
    # one fields panel: the provenance's author and dates in it, said to come from git, never a second panel
    assert page.text.count('<dl class="fields">') == 1 and "Provenance" not in page.text
    assert re.search(r"<dt>author</dt><dd>[^<]*Ada[^<]* <span class=\"meta\">\(from git\)</span></dd>", page.text)
    assert re.search(r"<dt>updated</dt><dd>2026-02-10[^<]*<span class=\"meta\">\(from git\)", page.text)
    # paths as the repository names them, never the disk's
    relative = (project[1] / "decisions" / "database.md").relative_to(project[0]).as_posix()
    assert f"<dt>path</dt><dd>{relative}</dd>" in page.text and f" · {relative} · " in page.text
    assert str(project[0]) not in page.text
    assert (
        page.text.count('class="history"') == 1 and "move to PostgreSQL" in page.text and "first decisions" in page.text
    )
    assert '<span class="del">-We use MySQL for orders.</span>' in page.text
    assert '<span class="add">+We use PostgreSQL 16 for orders, see ADR-001.</span>' in page.text
    assert "relates_to" in page.text or "links_to" in page.text


def test_a_snippet_is_escaped_before_its_matches_are_marked(client: TestClient) -> None:
    page = client.get("/", params={"q": "hostile script", "mode": "lexical"})
    snippets = re.findall(r'<p class="snippet">(.*?)</p>', page.text, re.S)
    assert snippets and all("<script" not in s and "<img" not in s for s in snippets)
    assert any("&lt;<mark>script</mark>&gt;" in s and "&lt;img src=x" in s for s in snippets)


def test_hostile_memory_is_rendered_inert(client: TestClient) -> None:
    page = client.get("/memory/notes/hostile")
    assert page.status_code == 200
    body = _article(page.text)
    assert "<script>window" not in body and "&lt;script&gt;" in body
    assert "<img" not in body and "&lt;img src=x onerror=" in body
    assert 'href="javascript:' not in body and 'href="data:' not in body and "[click me](javascript:" in body
    assert re.findall(r"<script[^>]*>", page.text) == [
        re.search(r'<script src="/static/ui\.js\?v=\w+" defer>', page.text)[0]
    ]
    assert "script-src 'self'" in page.headers["content-security-policy"]


def _nodes(page: str) -> dict[str, str]:
    """The drawn nodes of a graph page: name -> the class of its element."""
    return {
        html.unescape(name): classes
        for classes, name in re.findall(r'<(?:a|g) class="(node[^"]*)"[^>]* data-node="([^"]*)"', page)
    }


def test_graph_page_draws_the_neighbourhood_and_opens_a_node(client: TestClient) -> None:
    page = client.get("/graph", params={"name": "decisions/database"})
    assert page.status_code == 200 and "<svg" in page.text
    nodes = _nodes(page.text)
    assert set(nodes) == {"decisions/database", "adr/adr-001", "conventions/commits"}
    assert "centre" in nodes["decisions/database"]
    labels = re.findall(r'<text class="edge-label"[^>]*>([^<]*)</text>', page.text)
    assert sorted(map(html.unescape, labels)) == ["← links_to", "→ mentions, ← relates_to"]
    opening = html.unescape(re.search(r'href="([^"]*)" data-node="adr/adr-001"', page.text).group(1))  # type: ignore[union-attr]
    assert opening == "/graph?name=decisions%2Fdatabase&open=adr%2Fadr-001"
    opened = client.get(opening).text
    nodes = _nodes(opened)
    assert "opened" in nodes["adr/adr-001"] and "dangling-node" in nodes["missing/note"]
    assert "missing/note (dangling)" in opened
    assert re.search(r'<g class="[^"]*dangling-node" data-node="missing/note"', opened)  # drawn, not a link to open
    fragment = client.get("/graph/drawing", params=[("name", "decisions/database"), ("open", "adr/adr-001")])
    assert fragment.status_code == 200 and "<html" not in fragment.text and _nodes(fragment.text) == nodes
    closing = html.unescape(re.search(r'href="([^"]*)" data-node="adr/adr-001"', opened).group(1))  # type: ignore[union-attr]
    assert closing == "/graph?name=decisions%2Fdatabase" and "missing/note" not in client.get(closing).text


def test_review_queue_approve_through_the_router(client: TestClient, router: Router) -> None:
    page = client.get("/review")
    assert "review/cache-ttl" in page.text and "Approve review/cache-ttl" in page.text
    memory = router.get("review/cache-ttl")
    done = client.post(
        "/review/approve",
        data={"csrf": _csrf(page.text), "name": "review/cache-ttl", "expected_hash": memory.hash},
        follow_redirects=False,
    )
    assert done.status_code == 303
    approved = router.get("review/cache-ttl")
    assert approved.status == "active" and approved.verified_by == "user:Reviewer Rita"
    assert [e.op for e in router.audit(name="review/cache-ttl")][-1] == "approve"
    assert "Nothing pending review" in client.get("/review").text


def test_reject_needs_a_reason_and_a_stale_hash_conflicts(client: TestClient, router: Router) -> None:
    csrf = _csrf(client.get("/review").text)
    stale = client.post("/review/approve", data={"csrf": csrf, "name": "review/cache-ttl", "expected_hash": "0" * 64})
    assert stale.status_code == 409
    no_reason = client.post("/review/reject", data={"csrf": csrf, "name": "review/cache-ttl"})
    assert no_reason.status_code == 400
    assert router.get("review/cache-ttl").status == "pending_review"
    done = client.post("/review/reject", data={"csrf": csrf, "name": "review/cache-ttl", "reason": "a guess"})
    assert done.status_code == 200 and "Nothing pending review" in done.text  # followed the 303
    assert [e.verdict for e in router.audit(name="review/cache-ttl")][-1] == "rejected"


def test_team_board_and_its_live_fragment(client: TestClient, router: Router) -> None:
    team = router.team()
    team.register("builder", capabilities=["python"], branch="feat-parser", worktree="/src/wt-parser")
    team.register("reviewer")
    task = team.task_add("Write the parser")
    team.task_claim("builder", lease_seconds=300)
    team.handoff("builder", "reviewer", {"next": "review"})
    page = client.get("/team")
    assert 'data-events="/team/events"' in page.text and 'data-live="/team/live"' in page.text
    assert "builder" in page.text and "Write the parser" in page.text
    assert "branch feat-parser" in page.text and "/src/wt-parser" in page.text  # where it works
    assert "from branch feat-parser" in page.text  # the handoff says where the work is
    fragment = client.get("/team/live")
    assert "<html" not in fragment.text and task.id in fragment.text and "left" in fragment.text


def test_static_files_are_versioned_and_cached(client: TestClient) -> None:
    page = client.get("/").text
    stylesheet = re.search(r'href="(/static/ui\.css\?v=\w{12})"', page)
    assert stylesheet is not None
    response = client.get(stylesheet.group(1))
    assert response.status_code == 200 and "max-age" in response.headers["cache-control"]
    assert "max-age" not in client.get("/").headers.get("cache-control", "")


def test_timeline_and_health(client: TestClient, router: Router) -> None:
    router.save("# Fresh note\n\nSomething new about deploys.\n", name="notes/fresh")
    timeline = client.get("/timeline")
    assert timeline.status_code == 200 and 'href="/memory/notes/fresh"' in timeline.text
    commits = timeline.text.split('<ol class="commits">', 1)[1].split("</ol>", 1)[0]
    assert commits.index("move to PostgreSQL") < commits.index("first decisions")
    assert re.search(
        r'<span class="change-created">created</span> <a href="/memory/notes/hostile\?as_of=\w+">', commits
    )
    assert re.search(
        r'<span class="change-changed">changed</span> <a href="/memory/decisions/database\?as_of=', commits
    )
    health = client.get("/health")
    assert health.status_code == 200 and "memories" in health.text and "None configured" in health.text
    assert client.get("/health", params={"janitor": "1"}).status_code == 200


def test_sprint_board_promotes_through_the_router(client: TestClient, router: Router) -> None:
    router.lifecycle.start("2026-w48", weeks=2, goal="ship the UI")
    memory = router.save("# Caching research\n\nRedis versus an in-process LRU.\n", kind="research")
    assert memory.channel == "sprint"
    page = client.get("/timeline")
    assert "ship the UI" in page.text and 'class="days-left">' in page.text
    board = page.text.split('class="sprint-board"', 1)[1].split("</ul>", 1)[0]
    assert f"Promote {memory.name} to long-term" in board and "/_sprint" not in board
    form = {"csrf": _csrf(page.text), "name": memory.name, "expected_hash": "f" * 64}
    assert client.post("/sprint/promote", data=form).status_code == 409
    assert router.get(memory.name).superseded_by is None
    assert client.post("/sprint/promote", data={**form, "csrf": "forged"}).status_code == 403
    done = client.post("/sprint/promote", data={**form, "expected_hash": memory.hash}, follow_redirects=False)
    assert done.status_code == 303
    promoted = router.get(memory.name)
    assert promoted.superseded_by is not None and router.get(promoted.superseded_by).channel == "long_term"
    assert "promote" in [entry.op for entry in router.audit(name=memory.name)]


def test_sprint_board_archives_through_the_router_at_the_hash_shown(client: TestClient, router: Router) -> None:
    router.lifecycle.start("2026-w48", weeks=2, goal=None)
    memory = router.save("# Dead end\n\nThe queue rewrite went nowhere.\n", kind="research")
    page = client.get("/timeline")
    assert f"Archive {memory.name}" in page.text.split('class="sprint-board"', 1)[1].split("</ul>", 1)[0]
    form = {"csrf": _csrf(page.text), "name": memory.name, "expected_hash": "f" * 64}
    assert client.post("/sprint/archive", data=form).status_code == 409  # changed since the page was read
    assert client.post("/sprint/archive", data={**form, "csrf": "forged"}).status_code == 403
    assert router.get(memory.name).status == "active"
    done = client.post("/sprint/archive", data={**form, "expected_hash": memory.hash}, follow_redirects=False)
    assert done.status_code == 303 and router.get(memory.name).status == "archived"
    assert f"Archive {memory.name}" not in client.get("/timeline").text
    assert (
        client.post("/sprint/archive", data={**form, "expected_hash": router.get(memory.name).hash}).status_code == 409
    )


def test_memory_page_shows_its_sync_state_per_service(project: tuple[Path, Path, str], tmp_path: Path) -> None:
    (project[0] / "memrouter.toml").write_text('[backends.forgetful]\nurl = "http://127.0.0.1:9/mcp"\ntimeout = 1\n')
    with Router.open(root=project[1], index_dir=tmp_path / "idx2", watch=False) as router:
        client = TestClient(create_app(router), base_url=BASE)
        page = client.get("/memory/decisions/database")
        health = client.get("/health")
    assert (
        health.status_code == 200 and "forgetful: <strong>down</strong>" in health.text and "last error" in health.text
    )
    assert page.status_code == 200
    assert "<h2>External services</h2>" in page.text and "<dt>forgetful</dt>" in page.text
    assert 'class="sync-missing">missing' in page.text


def test_edit_saves_through_the_router_as_the_person(client: TestClient, router: Router) -> None:
    page = client.get("/edit/conventions/commits")
    before = router.get("conventions/commits")
    text = "# Commit messages\r\n\r\nUse the imperative mood. Keep the subject under 72 characters.\r\n"
    form = {"csrf": _csrf(page.text), "name": before.name, "expected_hash": before.hash, "content": text}
    done = client.post("/edit", data=form, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/memory/conventions/commits"
    after = router.get("conventions/commits")
    assert "under 72 characters" in after.text and "\r" not in after.text
    entry = router.audit(name="conventions/commits")[-1]
    assert entry.actor == "user:Reviewer Rita" and entry.before == before.hash and entry.after == after.hash


def test_health_shows_background_embedding_progress(project: tuple[Path, Path, str], tmp_path: Path) -> None:
    import time

    (project[0] / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n', encoding="utf-8")
    with Router.open(root=project[1], index_dir=tmp_path / "idx-bg", watch=False) as router:
        client = TestClient(create_app(router), base_url=BASE)
        assert "in the background" not in client.get("/health").text
        router.embed_in_background()
        deadline = time.monotonic() + 60  # a liveness bound, not a speed test
        while router.status()["dense"]["pending_memories"] and time.monotonic() < deadline:
            time.sleep(0.05)
        page = client.get("/health").text
    assert "0 waiting" in page and "in the background:" in page and "so far" in page


def test_the_landing_page_shows_recent_channels_pending_and_stale(client: TestClient, router: Router) -> None:
    page = client.get("/").text
    assert 'id="q"' in page and "Recently changed" in page  # the search form, then what there is
    recent = page.split('<ol class="recent">', 1)[1].split("</ol>", 1)[0]
    assert 'href="/memory/decisions/database"' in recent and "review/cache-ttl" not in recent
    assert "<dt>long_term</dt><dd>5</dd>" in page
    pending = page.split("<h2>Pending review</h2>", 1)[1].split("<h2>", 1)[0]
    assert 'href="/memory/review/cache-ttl">Cache TTL guess</a>' in pending and "Review 1 memory" in pending
    assert "No memory's anchored code has changed." in page


def test_the_landing_page_lists_a_memory_whose_anchored_code_changed(
    project: tuple[Path, Path, str], tmp_path: Path
) -> None:
    from helpers import commit, write

    source = project[0] / "billing.py"
    source.write_text("def charge():\n    return 1\n", encoding="utf-8")
    write(project[1], "notes/charging", "---\nanchors: [billing.py#charge]\n---\n# Charging\n\nCharge once.\n")
    commit(project[0], "charging", "2026-03-01T10:00:00+00:00")
    source.write_text("def charge():\n    return 2\n", encoding="utf-8")
    commit(project[0], "charge twice", "2026-03-02T10:00:00+00:00")
    with Router.open(root=project[1], index_dir=tmp_path / "sidx", watch=False) as router:
        page = TestClient(create_app(router), base_url=BASE).get("/").text
    stale = page.split("<h2>Stale</h2>", 1)[1]
    assert 'href="/memory/notes/charging"' in stale and "billing.py" in stale


def test_a_new_memory_shows_the_guards_verdict_before_it_is_saved(
    client: TestClient, project: tuple[Path, Path, str]
) -> None:
    root = project[1]
    csrf = _csrf(client.get("/new").text)
    fields = {"csrf": csrf, "name": "decisions/queues", "title": "Queues", "kind": "adr", "tags": "jobs, redis",
              "content": "# Queues\n\nWe run background jobs on arq with Redis.\n"}  # fmt: skip
    checked = client.post("/new", data={**fields, "action": "check"})
    assert checked.status_code == 200 and "The write guard: it would be saved" in checked.text
    assert "We run background jobs on arq" in checked.text.split("<textarea", 1)[1]  # the text stays in the form
    assert not (root / "decisions" / "queues.md").exists()  # a check writes nothing
    saved = client.post("/new", data={**fields, "action": "save"}, follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == "/memory/decisions/queues"
    text = (root / "decisions" / "queues.md").read_text(encoding="utf-8")
    assert "kind: adr" in text and "jobs" in text and "author: user:Reviewer Rita" in text
    assert client.post("/new", data={**fields, "action": "save"}).status_code == 409  # never over another


def test_a_refused_new_memory_writes_nothing_and_keeps_the_text(
    client: TestClient, project: tuple[Path, Path, str]
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    fields = {"csrf": _csrf(client.get("/new").text), "name": "notes/deploy-key",
              "content": f"# Deploy key\n\nThe token is {token}\n"}  # fmt: skip
    checked = client.post("/new", data={**fields, "action": "check"})
    assert checked.status_code == 200 and "it would be refused, nothing is written" in checked.text
    assert token not in checked.text  # neither the reasons nor the form repeat the secret
    kept = client.post("/new", data={**fields, "action": "save"})
    assert kept.status_code == 400 and "it would be refused" in kept.text and token not in kept.text
    assert "# Deploy key" in kept.text.split("<textarea")[1] and "this line held a secret (github_token)" in kept.text
    assert not (project[1] / "notes" / "deploy-key.md").exists()
    assert client.post("/new", data={**fields, "action": "delete"}).status_code == 400
    assert client.post("/new", data={**fields, "content": " \n", "action": "check"}).status_code == 400


def test_an_edit_is_checked_before_it_is_saved(client: TestClient, project: tuple[Path, Path, str]) -> None:
    path = project[1] / "conventions" / "commits.md"
    form = client.get("/edit/conventions/commits").text
    expected = re.search(r'name="expected_hash" value="([^"]+)"', form).group(1)  # type: ignore[union-attr]
    fields = {"csrf": _csrf(form), "name": "conventions/commits", "expected_hash": expected,
              "content": "# Commit messages\n\nUse the imperative mood; squash on merge.\n"}  # fmt: skip
    checked = client.post("/edit", data={**fields, "action": "check"})
    assert checked.status_code == 200 and "it would be saved" in checked.text and "squash on merge" in checked.text
    assert f'name="expected_hash" value="{expected}"' in checked.text  # the save still checks the text it started from
    assert "squash" not in path.read_text(encoding="utf-8")
    secret = {**fields, "content": "# Commit messages\n\nsk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "\n"}
    refused = client.post("/edit", data={**secret, "action": "save"})
    assert refused.status_code == 400 and "it would be refused" in refused.text and "4eC39Hq" not in refused.text
    assert "squash" not in path.read_text(encoding="utf-8") and "sk_live" not in path.read_text(encoding="utf-8")
    saved = client.post("/edit", data={**fields, "action": "save"}, follow_redirects=False)
    assert saved.status_code == 303 and "squash on merge" in path.read_text(encoding="utf-8")


def test_the_pages_work_outside_git(tmp_path: Path) -> None:
    from helpers import write

    root = tmp_path / "memories"
    write(root, "notes/alone", "---\nauthor: user:Bo\n---\n# Alone\n\nNo repository here.\n")
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        client = TestClient(create_app(router), base_url=BASE)
        landing, page = client.get("/"), client.get("/memory/notes/alone")
    assert landing.status_code == 200 and 'href="/memory/notes/alone"' in landing.text
    assert page.status_code == 200 and "<dt>author</dt><dd>user:Bo</dd>" in page.text
