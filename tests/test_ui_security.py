"""The web UI refuses bad input, forged writes and strangers with a clear 4xx, and changes nothing."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient
from uibrowser import start_ui, stop_ui
from uiproject import ui_project

from memrouter import Router
from memrouter.core.errors import ConfigError
from memrouter.ui.app import create_app
from memrouter.ui.server import serve_ui

BASE = "http://127.0.0.1:8766"
TOKEN = "s3cret-token-for-tests"


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    _, root, _ = ui_project(tmp_path)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        yield router


@pytest.fixture
def client(router: Router) -> TestClient:
    return TestClient(create_app(router, reviewer="user:Reviewer Rita"), base_url=BASE)


def _files(router: Router) -> dict[str, str]:
    return {m.name: m.hash for m in router.list(statuses=("active", "pending_review"))}


@pytest.mark.parametrize(
    "url",
    [
        "/?q=a&q=b", "/?q=x&mode=fuzzy", "/?q=x&channel=nowhere", "/?q=x&limit=-1", "/?q=x&limit=1e9",
        "/?q=" + "x" * 1001, "/?q=x%00y", "/?q=x&as_of=--output%3D%2Ftmp%2Fx", "/?q=x&as_of=no-such-commit",
        "/memory/a%00b", "/memory/..%2F..%2Fetc%2Fpasswd", "/memory/decisions/database?as_of=1999-01-01T00:00:00x",
        "/graph/drawing", "/graph/drawing?name=", "/graph?name=adr/adr-001" + "&open=x" * 13,
        "/graph?name=adr/adr-001&open=" + "x" * 1001, "/health?janitor=yes", "/timeline?name=a&name=b", "/edit/a%00b",
    ],
)  # fmt: skip
def test_malformed_requests_get_a_clear_4xx(client: TestClient, router: Router, url: str) -> None:
    before = _files(router)
    response = client.get(url)
    assert 400 <= response.status_code < 500, (url, response.status_code)
    assert 'role="alert"' in response.text and "Traceback" not in response.text
    assert _files(router) == before


@pytest.mark.parametrize("url", ["/memory/no/such/memory", "/graph?name=nothing-like-this", "/nowhere"])
def test_unknown_names_are_404(client: TestClient, url: str) -> None:
    assert client.get(url).status_code == 404


def test_odd_characters_in_a_name_are_escaped_in_the_error(client: TestClient) -> None:
    response = client.get("/memory/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert response.status_code in (400, 404)
    assert "<script>alert" not in response.text and "&lt;script&gt;" in response.text


def test_undecodable_query_bytes_do_not_crash(client: TestClient) -> None:
    response = client.get("/?q=%ff%fe&mode=lexical")
    assert response.status_code in (200, 400) and "Traceback" not in response.text
    assert client.get("/?%zz=1&q=%zz").status_code in (200, 400)


def test_a_write_without_the_csrf_token_is_refused(client: TestClient, router: Router) -> None:
    memory = router.get("review/cache-ttl")
    form = {"name": memory.name, "expected_hash": memory.hash}
    for data in (form, {**form, "csrf": "forged"}, {**form, "csrf": ""}):
        response = client.post("/review/approve", data=data)
        assert response.status_code == 403 and "CSRF" in response.text
    assert client.post("/review/reject", data={**form, "reason": "x"}).status_code == 403
    assert router.get("review/cache-ttl").status == "pending_review"
    assert [e.op for e in router.audit(name=memory.name) if e.op in ("approve", "reject")] == []


def test_malformed_writes_are_refused(client: TestClient, router: Router) -> None:
    csrf = _csrf(client.get("/review").text)
    name = "review/cache-ttl"
    assert client.post("/review/approve", json={"csrf": csrf, "name": name}).status_code == 400
    assert client.post("/review/approve", data={"csrf": csrf, "name": name, "extra": "1"}).status_code == 400
    assert client.post("/review/approve", data={"csrf": csrf}).status_code == 400
    assert client.post("/review/approve", data={"csrf": csrf, "name": "no/such"}).status_code == 404
    assert client.post("/review/approve", data={"csrf": csrf, "name": "decisions/database"}).status_code == 400
    assert client.get("/review/approve").status_code == 405
    bad_length = client.post(
        "/review/approve", content=f"csrf={csrf}&name={name}",
        headers={"content-type": "application/x-www-form-urlencoded", "content-length": "abc"},
    )  # fmt: skip
    assert bad_length.status_code == 400 and "Content-Length" in bad_length.text
    assert router.get(name).status == "pending_review"


def test_without_a_reviewer_writes_say_how_to_set_one(router: Router) -> None:
    client = TestClient(create_app(router, reviewer=None), base_url=BASE)
    csrf = _csrf(client.get("/review").text)
    response = client.post("/review/approve", data={"csrf": csrf, "name": "review/cache-ttl"})
    assert response.status_code == 400 and "git config user.name" in response.text


def test_an_author_cannot_approve_its_own_memory(router: Router) -> None:
    client = TestClient(create_app(router, reviewer="agent:scout"), base_url=BASE)
    csrf = _csrf(client.get("/review").text)
    response = client.post("/review/approve", data={"csrf": csrf, "name": "review/cache-ttl"})
    assert response.status_code == 400 and router.get("review/cache-ttl").status == "pending_review"


def test_without_a_token_only_loopback_hosts_are_answered(client: TestClient) -> None:
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400
    assert client.get("/", headers={"host": "localhost:8766"}).status_code == 200
    assert client.get("/", headers={"host": "[::1]:8766"}).status_code == 200


def test_with_a_token_every_request_must_carry_it(router: Router) -> None:
    client = TestClient(create_app(router, token=TOKEN), base_url="http://192.0.2.10:8766")
    refused = client.get("/", follow_redirects=False)
    assert refused.status_code == 401 and "token" in refused.text
    assert client.get("/?token=wrong").status_code == 401
    assert client.get("/static/ui.css").status_code == 401
    assert client.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    entered = client.get(f"/review?token={TOKEN}", follow_redirects=False)
    assert entered.status_code == 303 and entered.headers["location"] == "/review"
    assert "HttpOnly" in entered.headers["set-cookie"]
    assert client.get("/review").status_code == 200  # the cookie now carries it
    fresh = TestClient(create_app(router, token=TOKEN), base_url="http://192.0.2.10:8766")
    assert fresh.post(f"/review/approve?token={TOKEN}", data={"name": "review/cache-ttl"}).status_code == 401


@pytest.mark.parametrize("token", ["semi;colon=yes", 'a, "quoted" token', "100%25 sure", "naïve"])
def test_a_token_with_cookie_syntax_in_it_still_works_from_the_cookie(router: Router, token: str) -> None:
    client = TestClient(create_app(router, token=token), base_url="http://192.0.2.10:8766")
    entered = client.get("/review", params={"token": token}, follow_redirects=False)
    assert entered.status_code == 303
    cookie = entered.headers["set-cookie"]
    value = cookie.split(";", 1)[0].split("=", 1)[1]
    assert all(c.isalnum() or c in "%-._~" for c in value), cookie  # one cookie value, nothing split off
    assert client.get("/review").status_code == 200
    cut = TestClient(create_app(router, token=token), base_url="http://192.0.2.10:8766")
    cut.cookies.set("memrouter_ui", value[:-1])
    assert cut.get("/review").status_code == 401


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for url in ("/", "/static/ui.js", "/nowhere"):
        headers = client.get(url).headers
        assert "'unsafe-inline'" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"


def test_serving_off_loopback_needs_a_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a token"):
        serve_ui(tmp_path, tmp_path / "idx", host="0.0.0.0", port=0)
    from memrouter.cli import main

    result = CliRunner().invoke(main, ["--root", str(tmp_path), "ui", "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 2 and "needs a token" in result.output


def test_the_command_serves_the_ui_on_loopback(tmp_path: Path) -> None:
    _, root, _ = ui_project(tmp_path)
    server, address = start_ui(root, tmp_path / "idx")
    try:
        assert address.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(address + "?q=PostgreSQL&mode=lexical", timeout=30) as page:
            html = page.read().decode()
        assert page.status == 200 and "decisions/database" in html
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(address, headers={"Host": "rebound.example"}), timeout=30)
        assert refused.value.code == 400
        refused.value.close()
    finally:
        stop_ui(server)


def test_an_edit_is_guarded_and_checked_against_its_hash(client: TestClient, router: Router) -> None:
    import random

    from memrouter.testing.guard_sets import fake

    page = client.get("/edit/conventions/commits")
    assert page.status_code == 200 and "Use the imperative mood." in page.text
    before = router.get("conventions/commits")
    form = {"csrf": _csrf(page.text), "name": before.name, "expected_hash": before.hash}
    secret = fake("ghp", random.Random(7))
    refused = client.post("/edit", data={**form, "content": f"# Commit messages\n\nToken {secret}\n"})
    assert refused.status_code == 400 and secret not in refused.text
    assert client.post("/edit", data={**form, "csrf": "x", "content": "# Changed\n"}).status_code == 403
    assert client.post("/edit", data={**form, "expected_hash": "", "content": "# Changed\n"}).status_code == 400
    stale = client.post("/edit", data={**form, "expected_hash": "a" * 64, "content": "# Changed\n"})
    assert stale.status_code == 409
    assert router.get("conventions/commits").hash == before.hash
    assert client.get("/edit/no/such/memory").status_code == 404


def _csrf(html: str) -> str:
    return html.split('name="csrf" value="', 1)[1].split('"', 1)[0]
