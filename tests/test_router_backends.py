"""The router with an external backend: augmentation, dedup by the sync mapping, health, faults, status, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import SAMPLE, write
from sync.synchelp import mapping

from memrouter import Router
from memrouter.cli import main
from memrouter.config.settings import Config
from memrouter.core.errors import BackendUnavailable
from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.backend_conformance import unique_word
from memrouter.testing.servers import FakeServer, free_port, hanging_listener, serve_http


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_http() as server:
        yield server


@pytest.fixture
def healed(fake: FakeServer) -> Iterator[FakeServer]:
    yield fake
    fake.set_fault("none")


def make_project(tmp_path: Path, toml: str) -> Path:
    project = tmp_path / "project"
    for name, text in SAMPLE.items():
        write(project / ".serena" / "memories", name, text)
    (project / "memrouter.toml").write_text(toml, encoding="utf-8")
    return project


def toml_for(url: str, timeout: float = 5.0) -> str:
    return f'[backends.forgetful]\nurl = "{url}"\ntimeout = {timeout}\nconnect_timeout = {timeout}\n'


def open_router(project: Path) -> Router:
    return Router.open(root=project / ".serena" / "memories", watch=False)


def test_a_project_without_backends_never_imports_the_mcp_sdk(tmp_path: Path) -> None:
    project = make_project(tmp_path, "")
    code = (
        "import sys; from memrouter import Router\n"
        f"r = Router.open(root={str(project / '.serena' / 'memories')!r}, watch=False)\n"
        "r.search('flaky tests'); s = r.status(); assert s['backends'] == [], s\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'memrouter.external.backends'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_external_hits_are_appended_after_canonical_and_synced_copies_never_show_twice(
    tmp_path: Path, fake: FakeServer
) -> None:
    project = make_project(tmp_path, toml_for(fake.url))
    word = unique_word()
    long_text = "# Flaky tests runbook\n\n" + "\n\n".join(
        f"Flaky tests step {i}: rerun the suite. " * 12 for i in range(8)
    )
    write(project / ".serena" / "memories", "ops/flaky-runbook", long_text)
    with ForgetfulBackend(ForgetfulConfig(url=fake.url)) as other:
        outside_text = f"Flaky tests {word}: only the service knows."
        outside = other.upsert(MemoryDraft(title=f"{word} flaky", content=outside_text))
    with open_router(project) as router:
        assert router.sync()[0].ok
        # its own words: on a service crowded with other "flaky tests" memories it is still found
        hits = router.search(outside_text, limit=20)
        sources = [h.source for h in hits]
        assert sources[:2] == ["canonical", "canonical"]
        assert sources == sorted(sources, key=lambda s: s != "canonical")  # canonical first
        external = [h for h in hits if h.source == "forgetful"]
        assert f"forgetful:{outside}" in [h.name for h in external]
        assert len({h.hash for h in hits}) == len(hits)
        canonical_hashes = {router.get(name).hash for name in SAMPLE}
        assert not canonical_hashes & {h.hash for h in external}  # the synced copies are not shown again
        parts = mapping(router).records("forgetful")["ops/flaky-runbook"].remote_ids
        assert len(parts) > 1
        assert not {f"forgetful:{i}" for i in parts} & {h.name for h in external}  # nor the split parts
        raw = {h.name for h in router.search("flaky tests step rerun", limit=20, origin="forgetful")}
        assert {f"forgetful:{i}" for i in parts} & raw  # the service does return them; the merge drops them
        assert len(router.search("flaky tests", limit=3)) == 3
        only = router.search("flaky tests", limit=5, origin="canonical")
        assert {h.source for h in only} == {"canonical"}
        # its own words find it first, whatever the service's similarity (word overlap or real embeddings)
        remote = router.search(outside_text, limit=3, origin="forgetful")
        assert remote[0].name == f"forgetful:{outside}"
        # a filter applies to the files only
        assert {h.source for h in router.search("flaky tests", limit=20, prefix="ci/")} == {"canonical"}


def _down_config(kind: str, fake: FakeServer, stack: list[object]) -> str:
    if kind == "nothing-listening":
        return toml_for(f"http://127.0.0.1:{free_port()}/mcp", 0.5)
    if kind == "hanging":
        manager = hanging_listener()
        port = manager.__enter__()
        stack.append(manager)
        return toml_for(f"http://127.0.0.1:{port}/mcp", 0.5)
    fake.set_fault(kind)
    return toml_for(fake.url, 0.5)


@pytest.mark.parametrize("kind", ["nothing-listening", "hanging", "http500", "garbage", "protocol-error", "bad-shape"])
def test_a_backend_that_is_down_never_fails_a_default_search(tmp_path: Path, healed: FakeServer, kind: str) -> None:
    stack: list[object] = []
    project = make_project(tmp_path, _down_config(kind, healed, stack))
    try:
        with open_router(project) as router:
            expected = [h.name for h in router.search("flaky tests", limit=20, origin="canonical")]
            hits = router.search("flaky tests", limit=20)
            assert [h.name for h in hits] == expected
            backend = router.backend("forgetful")
            probes = backend.health.probes
            assert [h.name for h in router.search("flaky tests", limit=20)] == expected
            assert backend.health.probes == probes  # the failure is cached: no new probe, no call
            (status,) = router.status()["backends"]
            assert status["available"] is False and status["last_error"]
            assert status["endpoint"].startswith("http://127.0.0.1:") and status["age_s"] is not None
            with pytest.raises(BackendUnavailable):
                router.search("flaky tests", origin="forgetful")
    finally:
        for manager in stack:
            manager.__exit__(None, None, None)  # type: ignore[attr-defined]


def test_explicit_source_down_is_exit_3_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path, toml_for(f"http://127.0.0.1:{free_port()}/mcp", 0.5))
    monkeypatch.chdir(project)
    runner = CliRunner()
    done = runner.invoke(main, ["search", "flaky tests", "--source", "forgetful"])
    assert done.exit_code == 3
    assert done.stderr.count("\n") == 1 and "forgetful is unavailable" in done.stderr
    assert "Traceback" not in done.output
    default = runner.invoke(main, ["search", "flaky tests", "--format", "json"])
    assert default.exit_code == 0
    assert {r["source"] for r in json.loads(default.output)["results"]} == {"canonical"}
    done = runner.invoke(main, ["sync"])
    assert done.exit_code == 3 and "unavailable" in done.stderr


def test_status_reports_each_backend(tmp_path: Path, fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = toml_for(fake.url) + '\n[backends.spare]\ntype = "forgetful"\ncommand = ["/nonexistent/forgetful"]\n'
    toml += '\n[backends.off]\ntype = "forgetful"\nurl = "http://127.0.0.1:1/mcp"\nenabled = false\n'
    project = make_project(tmp_path, toml)
    monkeypatch.chdir(project)
    done = CliRunner().invoke(main, ["status", "--format", "json"])
    assert done.exit_code == 0, done.output
    backends = {b["name"]: b for b in json.loads(done.output)["backends"]}
    assert set(backends) == {"forgetful", "spare", "off"}
    up = backends["forgetful"]
    assert up["available"] is True and up["endpoint"] == fake.url and up["last_error"] is None
    assert up["age_s"] is not None and up["age_s"] < 30 and up["synced"] == 0
    assert backends["spare"]["available"] is False and "not" in backends["spare"]["last_error"]
    assert backends["off"]["available"] is False and backends["off"]["last_error"] == "disabled"
    text = CliRunner().invoke(main, ["status"]).output
    assert "backend:  forgetful up (" in text and "backend:  spare down" in text


def test_a_failure_during_search_is_recorded_then_recovers(tmp_path: Path, healed: FakeServer) -> None:
    # the fault answers at once: the default 5 s timeouts only keep a loaded machine from failing the healed search
    project = make_project(tmp_path, toml_for(healed.url) + "health_ttl = 0.2\n")
    with open_router(project) as router:
        router.search("flaky tests", limit=20)
        healed.set_fault("http500")
        names = [h.name for h in router.search("flaky tests", limit=20)]
        assert all(not n.startswith("forgetful:") for n in names)
        assert "error response" in router.status()["backends"][0]["last_error"]
        healed.set_fault("none")
        time.sleep(0.25)  # let the cached failure expire (health_ttl = 0.2 s)
        router.search("flaky tests", limit=20)
        assert router.status()["backends"][0]["available"] is True


def test_environment_url_configures_the_backend(tmp_path: Path) -> None:
    project = make_project(tmp_path, '[backends.forgetful]\ncommand = ["forgetful"]\ntimeout = 3\n')
    env = {"MEMROUTER_FORGETFUL_URL": "http://127.0.0.1:8020/mcp"}
    config = Config.load(root=project / ".serena" / "memories", env=env)
    assert config.backends["forgetful"] == {"url": "http://127.0.0.1:8020/mcp", "timeout": 3}
    bare = make_project(tmp_path / "b", "")
    assert Config.load(root=bare / ".serena" / "memories", env=env).backends == {
        "forgetful": {"url": "http://127.0.0.1:8020/mcp"}
    }
    assert Config.load(root=bare / ".serena" / "memories", env={}).backends == {}
