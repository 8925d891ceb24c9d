#!/usr/bin/env bash
# bench/run_python.sh — the four Python-runtime benchmarks in one run
# (bench/README.md, "python runtime", has the measured tables).
#
#   FITRUN=build/fitrun bench/run_python.sh [--quick]
#
# --quick: fewer predictions and batches (a smoke run, not for the README).
set -euo pipefail
cd "$(dirname "$0")/.."
export FITRUN=${FITRUN:-$PWD/build/fitrun}
[ -x "$FITRUN" ] || { echo "run_python.sh: FITRUN=$FITRUN is not executable (build first)" >&2; exit 2; }
PY=/usr/bin/python3
if [ "${1:-}" = --quick ]; then
    T=(--n 400 --fresh-n 20); O=(--n 200); S=(--batches 125 --per-batch-pools 5)
else
    T=(); O=(); S=()
fi
echo "== 1. throughput (bench/python_throughput.py ${T[*]})"
"$PY" bench/python_throughput.py "${T[@]}"
echo
echo "== 2. start-up (bench/python_startup.py)"
"$PY" bench/python_startup.py
echo
echo "== 3. streamed batches (bench/python_stream.py ${S[*]})"
"$PY" bench/python_stream.py "${S[@]}"
echo
echo "== 4. per-prediction overhead (bench/python_overhead.py ${O[*]})"
"$PY" bench/python_overhead.py "${O[@]}"
