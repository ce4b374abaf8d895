"""``memrouter ui`` in a real browser: the landing page, search, time travel, graph, live team board, review, new and
edited memories checked by the guard, a hostile memory, a11y."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect
from uibrowser import AXE, Served, screenshot

from memrouter import Router

WAIT_MS = 15_000


def _axe_serious(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now."""
    assert AXE.exists(), f"axe-core is missing at {AXE}: run `make test-ui` (it fetches it with npm)"
    page.evaluate(AXE.read_text(encoding="utf-8"))
    found: dict[str, Any] = page.evaluate(
        "async () => { const r = await axe.run(document); return {passes: r.passes.length, violations:"
        " r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' '))}))}; }"
    )
    assert found["passes"] > 0, "axe-core checked nothing"
    return [json.dumps(v) for v in found["violations"] if v["impact"] in ("serious", "critical")]


def _tab_to(page: Page, name: str) -> None:
    """Press Tab until the element with accessible ``name`` has the focus (keyboard only)."""
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement && document.activeElement.textContent.trim()") == name:
            return
    raise AssertionError(f"Tab never reached {name!r}")


def test_search_and_open_a_memory_by_keyboard(served: Served, page: Page) -> None:
    page.goto(served.address + "/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.type("PostgreSQL orders")
    page.keyboard.press("Enter")
    first = page.locator("ol.hits a.hit-title").first
    expect(first).to_have_text("Database choice")
    expect(page.locator("ol.hits .why").first).to_contain_text("#1")
    screenshot(page, "search")
    assert _axe_serious(page) == []
    _tab_to(page, "Database choice")
    page.keyboard.press("Enter")
    page.wait_for_url("**/memory/decisions/database")
    expect(page.locator("article.body")).to_contain_text("PostgreSQL 16")
    expect(page.locator(".history li")).to_have_count(2)
    screenshot(page, "memory")
    assert _axe_serious(page) == []
    assert page.errors == []  # type: ignore[attr-defined]


def test_time_travel_to_an_earlier_commit(served: Served, page: Page) -> None:
    page.goto(served.address + "/memory/decisions/database")
    page.locator(".history li").nth(1).locator("a").first.click()
    expect(page.locator(".asof")).to_contain_text("as of")
    expect(page.locator("article.body")).to_contain_text("We use MySQL for orders.")
    expect(page.locator("article.body")).not_to_contain_text("PostgreSQL")
    page.goto(served.address + "/")
    page.fill("#q", "MySQL")
    page.check("input[name=mode][value=lexical]")
    expect(page.locator("#as_of_shown")).to_have_text("now")
    page.locator("#as_of_slider").fill("0")  # the slider's left end: the oldest commit; it submits the search
    page.wait_for_url("**as_of=*")
    expect(page.locator("#as_of")).to_have_value(served.first_commit[:7])
    expect(page.locator("#as_of_shown")).to_contain_text("first decisions")
    hit = page.locator("ol.hits a.hit-title").first
    expect(hit).to_have_text("Database choice")
    hit.click()
    expect(page.locator("article.body")).to_contain_text("We use MySQL for orders.")
    screenshot(page, "time-travel")


def test_expand_the_graph(served: Served, page: Page) -> None:
    page.goto(served.address + "/graph?name=decisions/database")
    page.evaluate("window.__sameDocument = true")
    drawing = page.locator("#graph svg.graph-drawing")
    expect(drawing.locator("text.edge-label")).to_have_count(2)
    expect(drawing.locator("text.edge-label").first).to_contain_text("mentions")
    node = drawing.locator("a.node[data-node='adr/adr-001']")
    expect(node).to_have_attribute("aria-expanded", "false")
    expect(drawing.locator("[data-node='missing/note']")).to_have_count(0)
    _tab_to(page, "adr/adr-001")  # by keyboard: the node is a link
    page.keyboard.press("Enter")
    node = drawing.locator("a.node[data-node='adr/adr-001']")
    expect(node).to_have_attribute("aria-expanded", "true")
    expect(node).to_be_focused()  # swapped in place, the focus kept
    dangling = drawing.locator("g.dangling-node[data-node='missing/note']")
    expect(dangling).to_contain_text("missing/note (dangling)")
    expect(page.locator("table.graph-edges")).to_contain_text("missing/note (dangling)")
    page.wait_for_url("**/graph?name=decisions%2Fdatabase&open=adr%2Fadr-001")
    assert page.evaluate("window.__sameDocument") is True
    screenshot(page, "graph")
    assert _axe_serious(page) == []
    node.click()  # and closed again
    expect(drawing.locator("[data-node='missing/note']")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_task_claim_appears_on_the_team_board_without_reload(served: Served, page: Page) -> None:
    page.goto(served.address + "/team")
    expect(page.locator("#board")).to_contain_text("No agents registered")
    page.evaluate("window.__sameDocument = true")
    with Router.open(root=served.root, index_dir=served.index_dir, watch=False) as router:
        team = router.team()
        team.register("builder", capabilities=["python"])
        team.task_add("Write the parser")
        claimed = team.task_claim("builder", lease_seconds=600)
        assert claimed is not None
    board = page.locator("#board")
    expect(board).to_contain_text("Write the parser", timeout=WAIT_MS)
    expect(board).to_contain_text("left")
    expect(board).to_have_attribute("data-via", "events")  # pushed by server-sent events, not polled
    assert page.evaluate("window.__sameDocument") is True
    screenshot(page, "team")
    assert _axe_serious(page) == []


def test_without_event_source_the_team_board_polls(served: Served, browser: Any) -> None:
    context = browser.new_context()
    context.add_init_script("delete window.EventSource;")
    page = context.new_page()
    try:
        page.goto(served.address + "/team")
        with Router.open(root=served.root, index_dir=served.index_dir, watch=False) as router:
            team = router.team()
            team.register("reviewer", capabilities=["docs"])
            team.task_add("Read the changelog")
            assert team.task_claim("reviewer", lease_seconds=600) is not None
        board = page.locator("#board")
        expect(board).to_contain_text("Read the changelog", timeout=WAIT_MS)
        expect(board).to_have_attribute("data-via", "polling")
    finally:
        context.close()


def test_approve_a_pending_memory_by_keyboard(served: Served, page: Page) -> None:
    page.goto(served.address + "/review")
    expect(page.locator(".pending")).to_contain_text("Cache TTL guess")
    screenshot(page, "review")
    assert _axe_serious(page) == []
    _tab_to(page, "Approve review/cache-ttl")
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_contain_text("Nothing pending review")
    with Router.open(root=served.root, index_dir=served.index_dir, watch=False) as router:
        memory = router.get("review/cache-ttl")
        assert memory.status == "active" and memory.verified_by == "user:Reviewer Rita"
        assert router.audit(name="review/cache-ttl")[-1].verdict == "approved"


def test_a_hostile_memory_runs_nothing(served: Served, page: Page, browser: Any) -> None:
    dialogs: list[str] = []
    for context_options in ({}, {"bypass_csp": True}):  # the sanitiser holds even without the CSP
        context = browser.new_context(**context_options)
        hostile = context.new_page()
        hostile.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        hostile.goto(served.address + "/memory/notes/hostile")
        expect(hostile.locator("article.body")).to_contain_text("<script>window.__pwned = 1")
        hostile.locator("article.body").get_by_text("[click me](javascript:").click()
        hostile.wait_for_timeout(300)
        assert hostile.evaluate("window.__pwned") is None
        assert hostile.title() != "pwned"
        assert (
            hostile.locator("article.body a[href^='javascript:'], article.body img, article.body script").count() == 0
        )
        if not context_options:
            screenshot(hostile, "hostile")
        context.close()
    assert dialogs == []


def test_health_and_timeline_pass_the_accessibility_check(served: Served, page: Page) -> None:
    for path, name in (("/health", "health"), ("/timeline", "timeline")):
        page.goto(served.address + path)
        expect(page.locator("h1")).to_be_visible()
        screenshot(page, name)
        assert _axe_serious(page) == [], path


def test_edit_a_memory_in_the_browser(served: Served, page: Page) -> None:
    page.goto(served.address + "/memory/conventions/commits")
    page.get_by_role("link", name="edit").click()
    text = page.locator("#content").input_value()
    assert text.startswith("# Commit messages")
    page.fill("#content", text.rstrip("\n") + "\n\nSign every commit.\n")
    page.get_by_role("button", name="Check").click()
    expect(page.locator(".verdict")).to_contain_text("it would be saved")
    expect(page.locator("#content")).to_have_value(text.rstrip("\n") + "\n\nSign every commit.\n")
    screenshot(page, "edit")
    assert _axe_serious(page) == []
    page.get_by_role("button", name="Save conventions/commits").click()
    page.wait_for_url("**/memory/conventions/commits")
    expect(page.locator("article.body")).to_contain_text("Sign every commit.")
    with Router.open(root=served.root, index_dir=served.index_dir, watch=False) as router:
        assert router.get("conventions/commits").text.endswith("Sign every commit.\n")


def test_the_landing_page_shows_what_there_is(served: Served, page: Page) -> None:
    page.goto(served.address + "/")
    expect(page.get_by_role("heading", name="Recently changed")).to_be_visible()
    expect(page.locator("ol.recent a").first).to_be_visible()
    for heading in ("Channels", "Pending review", "Stale"):  # the review test may have emptied the queue
        expect(page.get_by_role("heading", name=heading)).to_be_visible()
    screenshot(page, "landing")
    assert _axe_serious(page) == []


def test_write_a_new_memory_checked_first(served: Served, page: Page) -> None:
    page.goto(served.address + "/")
    page.get_by_role("link", name="New", exact=True).click()
    page.wait_for_url("**/new")
    page.get_by_label("Name").fill("decisions/queues")
    page.get_by_label("Tags").fill("jobs")
    page.get_by_label("Text (markdown; front matter allowed)").fill("# Queues\n\nBackground jobs run on arq.\n")
    page.get_by_role("button", name="Check").click()
    expect(page.locator(".verdict")).to_contain_text("it would be saved")
    expect(page.locator("#content")).to_have_value("# Queues\n\nBackground jobs run on arq.\n")
    screenshot(page, "new")
    assert _axe_serious(page) == []
    with Router.open(root=served.root, index_dir=served.index_dir, watch=False) as router:
        assert "decisions/queues" not in router.names()  # a check writes nothing
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url("**/memory/decisions/queues")
    expect(page.locator("article.body")).to_contain_text("Background jobs run on arq.")
    expect(page.locator("dl.fields")).to_contain_text("author")
    assert _axe_serious(page) == []
