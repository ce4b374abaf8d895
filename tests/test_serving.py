"""Serving over HTTP: slow clients are cut off, binding comes before the "serving" line.

The app is the embeddings endpoint with the hash embedder (``memrouter
embed-serve``), served on loopback through ``memrouter.http.serve``; the MCP
server's side is in ``tests/mcp/test_http_limits.py``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slowclients import connect, read_until_closed, running, status_of, trickling

from memrouter.core.errors import ConfigError
from memrouter.embed import get_embedder
from memrouter.http.embeddings import make_app
from memrouter.http.serve import ConnectionLimits, bind_listeners, require_token_off_loopback

HEAD = b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def _app() -> Any:
    return make_app(get_embedder("hash", dimension=8))


def embed(port: int, text: str = "still served") -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/embeddings", json.dumps({"input": text}).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert len(json.load(response)["data"][0]["embedding"]) == 8
        status: int = response.status
        return status


@pytest.fixture
def short() -> Iterator[int]:
    """The endpoint with a 1 s head deadline and a 1.5 s body deadline."""
    with running(_app(), ConnectionLimits(header_timeout=1, body_timeout=1.5)) as port:
        yield port


def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_its_deadline(short: int) -> None:
    with trickling(short, HEAD + b"X-Padding: ") as slow:
        assert embed(short) == 200  # others are served meanwhile
        response = read_until_closed(slow)
    assert status_of(response) == 408
    assert b"the request head did not arrive within 1 s" in response


def test_a_body_that_stops_short_is_cut_off_at_its_deadline(short: int) -> None:
    slow = connect(short, HEAD + b"Content-Length: 1000\r\n\r\n" + b'{"input": "')
    assert embed(short) == 200
    response = read_until_closed(slow)
    assert status_of(response) == 408
    assert b"the request body did not arrive within 1.5 s" in response


def test_a_connection_that_sends_nothing_is_closed_without_a_word(short: int) -> None:
    assert read_until_closed(connect(short)) == b""


def test_a_kept_alive_connection_gets_the_same_deadline_for_its_next_request(short: int) -> None:
    sock = connect(short, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = b""
    while b"\r\n\r\n" not in first or not first.endswith(b"}"):
        first += sock.recv(65536)
    assert status_of(first) == 200
    sock.sendall(HEAD)  # the next request's head, never finished
    response = read_until_closed(sock)
    assert status_of(response) == 408 and b"head did not arrive within 1 s" in response


def test_past_the_cap_the_oldest_unfinished_request_is_pushed_out() -> None:
    with running(_app(), ConnectionLimits(header_timeout=600, body_timeout=600, max_unfinished=3)) as port:
        held = [connect(port, HEAD) for _ in range(3)]
        try:
            assert embed(port) == 200  # a fourth connection: the first held one makes room
            pushed_out(read_until_closed(held[0]))
            held.append(connect(port, HEAD))  # three held again
            assert embed(port) == 200
            pushed_out(read_until_closed(held[1]))
        finally:
            for sock in held:
                sock.close()


def pushed_out(response: bytes) -> None:
    """A 503 saying why, or nothing if the server had not yet read the request's first bytes."""
    assert response == b"" or (status_of(response) == 503 and b"too many connections" in response), response


def test_a_body_declared_over_the_limit_is_refused_at_once(short: int) -> None:
    sock = connect(short, HEAD + b"Content-Length: 52428800\r\n\r\n" + b"x" * 65536)
    response = read_until_closed(sock)
    assert status_of(response) == 413
    assert json.loads(response.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "body_too_large"


def test_limits_must_be_positive() -> None:
    with pytest.raises(ConfigError):
        ConnectionLimits(header_timeout=0)
    with pytest.raises(ConfigError):
        ConnectionLimits(max_unfinished=0)


def test_an_address_in_use_is_a_config_error() -> None:
    [taken] = bind_listeners("127.0.0.1", 0)
    try:
        with pytest.raises(ConfigError, match="cannot listen on 127.0.0.1:.*in use"):
            bind_listeners("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMROUTER_")}
    return subprocess.run(
        [sys.executable, "-m", "memrouter", "--root", str(tmp_path / "memories"), "--index-dir", str(tmp_path / "i"),
         *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("command", [["serve", "--http"], ["embed-serve", "--embedder", "hash"]])
def test_a_refused_bind_prints_only_the_error(tmp_path: Path, command: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        in_use = _cli(tmp_path, *command, "--port", port)
    no_token = _cli(tmp_path, *command, "--host", "0.0.0.0", "--port", port)
    for done, words in ((in_use, "in use"), (no_token, "needs a bearer token")):
        assert done.returncode == 2
        [line] = done.stderr.splitlines()
        assert line.startswith("memrouter: ") and words in line and "http://" not in line


def test_the_token_rule_all_servers_share() -> None:
    for host in ("127.0.0.1", "::1", "[::1]", "localhost"):
        require_token_off_loopback(host, None)  # loopback: no token needed
    require_token_off_loopback("0.0.0.0", "s3cret")
    with pytest.raises(ConfigError, match=r"serving on 0\.0\.0\.0 \(not loopback\) needs a bearer token"):
        require_token_off_loopback("0.0.0.0", None)
    with pytest.raises(ConfigError, match="serving the UI on example.com .* needs a token: pass --token"):
        require_token_off_loopback("example.com", None, serving="serving the UI", credential="a token")
    with pytest.raises(ConfigError, match="the bearer token must not be empty"):
        require_token_off_loopback("127.0.0.1", "  ")
