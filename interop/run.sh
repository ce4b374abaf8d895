#!/usr/bin/env bash
# `make interop`: build the peers' venvs (cached), then run the interop suite against the real
# Forgetful 0.6.0, Serena 2.1.0, claude-flow, Hindsight 1.1.0, Graphiti and Pixeltable 0.7.21. Servers are started by the tests' fixtures
# and stopped there; the trap below stops by PID anything still recorded in the pid folder (a killed pytest).
set -uo pipefail
cd "$(dirname "$0")/.."
export INTEROP_WORK="${INTEROP_WORK:-$PWD/interop/.work}"
PY="${PY:-.venv/bin/python}"
PIDS="$INTEROP_WORK/pids"

stop_leftovers() {
    local file pid
    for file in "$PIDS"/*; do
        [[ -e "$file" ]] || continue
        pid="${file##*/}"
        # only a process this suite started: its command line names embed-serve, Forgetful's launcher, Serena's
        # server, FalkorDB, the Hindsight server or a PostgreSQL in one of the suite's temporary folders
        if [[ "$pid" =~ ^[0-9]+$ ]] && grep -qaE 'embed-serve|main\.cli|start-mcp-server|falkordb\.so|hindsight-api|memrouter-(pxt|pg0)-' \
            "/proc/$pid/cmdline" 2>/dev/null; then
            echo "interop: stopping leftover $(cat "$file") (pid $pid)" >&2
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
            sleep 2
            kill -KILL -- "-$pid" 2>/dev/null || true
        fi
        rm -f "$file"
    done
}
trap stop_leftovers EXIT
trap 'stop_leftovers; exit 130' INT TERM

started=$SECONDS
bash interop/setup.sh || { echo "interop: setup failed" >&2; exit 1; }
echo "interop: setup took $((SECONDS - started)) s" >&2
stop_leftovers
for peer in forgetful serena; do
    if [[ -f "$INTEROP_WORK/skipped-$peer" ]]; then
        echo "interop: *** $peer tests are SKIPPED: $(cat "$INTEROP_WORK/skipped-$peer") ***" >&2
    fi
done

status=0
echo "interop: Forgetful (real), embed-serve, claude-flow (real), Hindsight (real) and Serena (real) parity" >&2
"$PY" -m pytest -c interop/pytest.ini --rootdir interop -q interop/tests || status=1

echo "interop: Graphiti (real, on FalkorDB) in its Python 3.12 venv" >&2
GRAPHITI_PY="$INTEROP_WORK/graphiti-venv/bin/python"
if [[ -f "$INTEROP_WORK/missing-graphiti" || ! -x "$GRAPHITI_PY" ]]; then
    echo "interop: *** the Graphiti tests cannot run: $(cat "$INTEROP_WORK/missing-graphiti" 2>/dev/null || echo "no $GRAPHITI_PY") ***" >&2
    status=1
else
    out="$(GRAPHITI_TELEMETRY_ENABLED=false "$GRAPHITI_PY" -m pytest -c interop/graphiti/pytest.ini \
        --rootdir interop/graphiti -q -rs interop/graphiti 2>&1)" || status=1
    echo "$out"
    if grep -qE "[0-9]+ skipped|SKIPPED" <<<"$out"; then
        echo "interop: Graphiti tests were skipped: skipped is never passed" >&2
        status=1
    fi
fi

echo "interop: the sentence-transformers runtime (torch) against the golden vectors, in its own venv" >&2
SBERT_PY="$INTEROP_WORK/sbert-venv/bin/python"
if [[ -f "$INTEROP_WORK/missing-sbert" || ! -x "$SBERT_PY" ]]; then
    echo "interop: *** the sentence-transformers test cannot run: $(cat "$INTEROP_WORK/missing-sbert" 2>/dev/null || echo "no $SBERT_PY") ***" >&2
    status=1
else
    out="$(HF_HUB_OFFLINE=1 "$SBERT_PY" -m pytest -c interop/sbert/pytest.ini --rootdir interop/sbert -q -rs \
        interop/sbert 2>&1)" || status=1
    echo "$out"
    if grep -qE "[0-9]+ skipped|SKIPPED" <<<"$out"; then
        echo "interop: the sentence-transformers test was skipped: skipped is never passed" >&2
        status=1
    fi
fi

echo "interop: Pixeltable (real, in-process on its own PostgreSQL) in its Python 3.11 venv" >&2
PIXELTABLE_PY="$INTEROP_WORK/pixeltable-venv/bin/python"
if [[ -f "$INTEROP_WORK/missing-pixeltable" || ! -x "$PIXELTABLE_PY" ]]; then
    echo "interop: *** the Pixeltable tests cannot run: $(cat "$INTEROP_WORK/missing-pixeltable" 2>/dev/null || echo "no $PIXELTABLE_PY") ***" >&2
    status=1
else
    out="$("$PIXELTABLE_PY" -m pytest -c interop/pixeltable/pytest.ini --rootdir interop/pixeltable -q -rs \
        interop/pixeltable 2>&1)" || status=1
    echo "$out"
    if grep -qE "[0-9]+ skipped|SKIPPED" <<<"$out"; then
        echo "interop: Pixeltable tests were skipped: skipped is never passed" >&2
        status=1
    fi
fi

echo "interop: finished in $((SECONDS - started)) s (status $status)" >&2
exit $status
