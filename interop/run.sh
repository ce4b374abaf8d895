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
# In parallel, one worker more than the cores (as `make test`): the tests mostly wait on the servers they
# start, and each worker starts its own. INTEROP_WORKERS=N to choose. A few tests run for minutes, so each
# worker is handed one test at a time (not xdist's first chunks of six), the longest first (conftest.py).
WORKERS="${INTEROP_WORKERS:-$("$PY" -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')}"
PARALLEL=(-n "$WORKERS" --maxschedchunk 1)
echo "interop: Forgetful (real), embed-serve, claude-flow (real), Hindsight (real) and Serena (real) parity" >&2
"$PY" -m pytest -c interop/pytest.ini --rootdir interop -q "${PARALLEL[@]}" interop/tests || status=1

# suite_in_venv VENV SUITE WHAT parallel|serial [NAME=value ...]: the tests of interop/SUITE in $INTEROP_WORK/VENV,
# with those variables set, in the workers of interop/tests (the venv needs pytest-xdist) or in one process.
# A note from the setup (missing-SUITE), a missing venv or any skipped test fails the run.
suite_in_venv() {
    local venv="$1" suite="$2" what="$3" py out parallel=()
    [[ "$4" == serial ]] || parallel=("${PARALLEL[@]}")
    shift 4
    py="$INTEROP_WORK/$venv/bin/python"
    if [[ -f "$INTEROP_WORK/missing-$suite" || ! -x "$py" ]]; then
        echo "interop: *** $what cannot run: $(cat "$INTEROP_WORK/missing-$suite" 2>/dev/null || echo "no $py") ***" >&2
        status=1
        return
    fi
    out="$(env "$@" "$py" -m pytest -c "interop/$suite/pytest.ini" --rootdir "interop/$suite" -q -rs \
        "${parallel[@]}" "interop/$suite" 2>&1)" || status=1
    echo "$out"
    if grep -qE "[0-9]+ skipped|SKIPPED" <<<"$out"; then
        echo "interop: $what were skipped: skipped is never passed" >&2
        status=1
    fi
}

echo "interop: Graphiti (real, on FalkorDB) in its Python 3.12 venv" >&2
suite_in_venv graphiti-venv graphiti "the Graphiti tests" serial GRAPHITI_TELEMETRY_ENABLED=false

echo "interop: the sentence-transformers runtime (torch) against the golden vectors, in its own venv" >&2
suite_in_venv sbert-venv sbert "the sentence-transformers tests" serial HF_HUB_OFFLINE=1

# Each worker's Pixeltable has a home and a PostgreSQL of its own (interop/pixeltable/conftest.py).
echo "interop: Pixeltable (real, in-process on its own PostgreSQL) in its Python 3.11 venv" >&2
rm -f "$INTEROP_WORK/pixeltable-retries.log"
suite_in_venv pixeltable-venv pixeltable "the Pixeltable tests" parallel
if [[ -f "$INTEROP_WORK/pixeltable-retries.log" ]]; then
    echo "interop: a worker's Pixeltable did not start the first time and was started again on a new home:" >&2
    cat "$INTEROP_WORK/pixeltable-retries.log" >&2
fi

if [[ $status -ne 0 ]]; then
    echo "interop: the machine at the end (disk, memory):" >&2
    df -h . /tmp /dev/shm >&2 2>/dev/null
    free -m >&2 2>/dev/null
fi
echo "interop: finished in $((SECONDS - started)) s (status $status)" >&2
exit $status
