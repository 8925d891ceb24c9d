#!/usr/bin/env bash
# bench/scale.sh — the ARC workload at 1..16 workers: fitrun (fork), fitrun
# (isolation = reuse), joblib and multiprocessing.Pool, interleaved, with the
# launcher's own CPU per prediction; a table, a projection and a PNG plot.
# Everything is done by bench/scale.py (its --help lists every option).
#
#   bench/scale.sh --corpus DIR [--fitrun build/fitrun] [--python /usr/bin/python3]
#                  [--workers 1,2,4,8,16] [--rounds 3] [--out DIR]
#   bench/scale.sh --arc-dsl ../arc-dsl --tasks ../shared/data/arc-agi-1/training --out DIR
#
# The driver needs only the standard library; the plot needs matplotlib
# (Debian: python3-matplotlib, for /usr/bin/python3). PYTHON= picks the
# interpreter that runs the driver (default /usr/bin/python3, else python3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
exec "$PY" "$HERE/scale.py" run "$@"
