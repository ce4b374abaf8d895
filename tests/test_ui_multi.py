"""The web UI over several projects: each under /p/<key>, the tokens' grants, read-only projects refusing writes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from uiproject import ui_project

from memrouter import Router
from memrouter.ui.app import create_app
from memrouter.ui.multi import ProjectPages, create_multi_app

BASE = "http://memory.internal:8766"  # any address: the tokens are checked, not the host


@dataclass(frozen=True)
class Grant:
    projects: frozenset[str]
    writable: frozenset[str]


GRANTS = {
    b"alpha-token": Grant(frozenset({"alpha"}), frozenset({"alpha"})),
    b"both-token": Grant(frozenset({"alpha", "beta"}), frozenset({"beta"})),  # alpha read only
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, Router]]]:
    roots = {key: ui_project(tmp_path / key)[1] for key in ("alpha", "beta")}
    opened: dict[str, Router] = {}

    def open_pages(key: str) -> ProjectPages:
        router = Router.open(root=roots[key], index_dir=tmp_path / f"idx-{key}", watch=False)
        opened[key] = router
        return ProjectPages(router, create_app(router, reviewer="user:Rita", project=key, guarded=False))

    app, close = create_multi_app(frozenset(roots), GRANTS.get, open_pages)
    try:
        yield TestClient(app, base_url=BASE), opened
    finally:
        close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_start_page_lists_the_token_s_projects_and_a_token_is_always_needed(
    served: tuple[TestClient, dict[str, Router]],
) -> None:
    client, _ = served
    assert client.get("/").status_code == 401
    assert client.get("/", headers=bearer("wrong")).status_code == 401
    page = client.get("/", headers=bearer("both-token"))
    assert page.status_code == 200 and 'href="/p/alpha/"' in page.text and 'href="/p/beta/"' in page.text
    assert "alpha</a> (read only)" in page.text
    only = client.get("/", headers=bearer("alpha-token"))
    assert 'href="/p/alpha/"' in only.text and "/p/beta/" not in only.text


def test_a_project_s_pages_link_under_its_path(served: tuple[TestClient, dict[str, Router]]) -> None:
    client, _ = served
    page = client.get("/p/alpha/", params={"q": "PostgreSQL orders", "mode": "lexical"}, headers=bearer("alpha-token"))
    assert page.status_code == 200
    assert 'href="/p/alpha/memory/decisions/database"' in page.text
    links = re.findall(r'(?:href|action|data-events|data-live)="(/[^"]*)"', page.text)
    assert links and all(link.startswith(("/p/alpha/", "/static/")) for link in links), links
    assert 'aria-current="page"' in page.text  # the nav knows where it is
    memory = client.get("/p/alpha/memory/decisions/database", headers=bearer("alpha-token"))
    assert memory.status_code == 200 and 'href="/p/alpha/graph?name=decisions/database"' in memory.text
    team = client.get("/p/alpha/team", headers=bearer("alpha-token"))
    assert 'data-events="/p/alpha/team/events"' in team.text


def test_a_project_the_token_may_not_use_is_403_whether_or_not_it_exists(
    served: tuple[TestClient, dict[str, Router]],
) -> None:
    client, opened = served
    other = client.get("/p/beta/", headers=bearer("alpha-token"))
    missing = client.get("/p/gamma/", headers=bearer("alpha-token"))
    assert other.status_code == missing.status_code == 403 and other.text == missing.text
    assert "beta" not in opened  # never opened for a token that may not use it


def test_a_read_only_project_refuses_every_write(served: tuple[TestClient, dict[str, Router]]) -> None:
    client, opened = served
    page = client.get("/p/alpha/review", headers=bearer("both-token"))
    assert page.status_code == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    router = opened["alpha"]
    memory = router.get("review/cache-ttl")
    form = {"csrf": csrf.group(1), "name": "review/cache-ttl", "expected_hash": memory.hash}
    refused = client.post("/p/alpha/review/approve", data=form, headers=bearer("both-token"), follow_redirects=False)
    assert refused.status_code == 403 and router.get("review/cache-ttl").status == "pending_review"
    done = client.post("/p/alpha/review/approve", data=form, headers=bearer("alpha-token"), follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/p/alpha/review"
    assert router.get("review/cache-ttl").status == "active"


def test_a_token_in_the_address_becomes_a_cookie_for_every_project(
    served: tuple[TestClient, dict[str, Router]],
) -> None:
    client, _ = served
    first = client.get("/p/beta/health", params={"token": "both-token"}, follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/p/beta/health"
    assert client.get("/p/beta/health").status_code == 200  # the cookie now
    assert client.get("/p/alpha/timeline").status_code == 200
    assert client.get("/p/beta/", params={"token": "nope"}, follow_redirects=False).status_code != 303


def test_the_command_serves_a_projects_file(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    for key in ("alpha", "beta"):
        ui_project(tmp_path / key)
    projects = tmp_path / "projects.toml"
    projects.write_text(
        '[projects.alpha]\npath = "alpha/project"\n[projects.beta]\npath = "beta/project"\n'
        '[tokens.one]\ntoken = "only-alpha"\nprojects = ["alpha"]\n',
        encoding="utf-8",
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "memrouter", "ui", "--projects", str(projects), "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert line.startswith("memrouter: UI at "), line + server.stderr.read()
        address = line.split(" at ", 1)[1].strip()

        def get(path: str, token: str | None) -> tuple[int, str]:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            try:
                with urllib.request.urlopen(urllib.request.Request(address + path, headers=headers), timeout=60) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as error:
                return error.code, error.read().decode()

        assert get("", None)[0] == 401
        status, start = get("", "only-alpha")
        assert status == 200 and 'href="/p/alpha/"' in start and "/p/beta/" not in start
        status, page = get("p/alpha/?q=PostgreSQL&mode=lexical", "only-alpha")
        assert status == 200 and 'href="/p/alpha/memory/decisions/database"' in page
        assert get("p/beta/", "only-alpha")[0] == 403
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stderr is not None:
            server.stderr.close()
