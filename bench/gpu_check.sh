#!/usr/bin/env bash
# GPU check: ONE unattended command for a machine with an NVIDIA GPU and CuPy (see bench/README.md).
#
#   bash bench/gpu_check.sh [OUTDIR]          # default bench/results/gpu_check_<UTC date>
#
# Writes exactly these 8 files into OUTDIR (the device tool brings back at most 8):
#   summary.txt     one line per step: name, exit status, seconds; then OVERALL
#   env.txt         date, uname, nvidia-smi, cupy.show_config(), pip freeze, git commit/status,
#                   how missing packages were found or installed from carried wheels
#   tests.log       pytest -rs tests/test_cupy_backend.py tests/test_handwritten_cupy.py
#   bench.log       bench/gpu_bench.py's console output
#   gpu_bench.md    the benchmark report; gpu_bench.json its raw numbers
#   np2.log         g2pl run programs/bfs.g2pl --graph kron:20 --backend cupy --np 2 (2 ranks on one GPU),
#                   and its answer compared with the 1-rank NumPy backend's
#   np2_stats.json  that run's --stats
#
# Every step runs even when an earlier one failed; the exit status is 1 if any step failed.
# The machine may have no network: lark (needed by g2pl) and mpich (mpiexec + libmpi, for --np 2)
# are installed from wheels in $G2PL_WHEELS (default <repo>/.whl) when they are missing.
#
# Environment knobs (defaults fit one 10-minute device command):
#   PYTHON (python3)  G2PL_GPU_GRAPHS (kron:20,kron:22,kron:24)  G2PL_GPU_REPEAT (3)
#   G2PL_NUMPY_REPEAT (1)  G2PL_TEST_TIMEOUT (150 s)  G2PL_BENCH_TIMEOUT (330 s)
#   G2PL_BENCH_BUDGET (240 s: algorithms not started by then are skipped)  G2PL_NP2_TIMEOUT (90 s)
#   G2PL_NP2_BACKEND (cupy; numpy tries the script's plumbing on a CPU)  G2PL_WHEELS (<repo>/.whl)
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTDIR=${1:-$ROOT/bench/results/gpu_check_$(date -u +%Y%m%d_%H%M%S)}
mkdir -p "$OUTDIR" || { echo "gpu_check: cannot create $OUTDIR" >&2; exit 2; }
OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
WHEELS=${G2PL_WHEELS:-$ROOT/.whl}
SUMMARY=$OUTDIR/summary.txt
ENVF=$OUTDIR/env.txt
export PYTHONUNBUFFERED=1
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
cd "$ROOT" || exit 2

FAILED=0
# a rerun into the same folder starts afresh (step() appends)
for f in summary.txt env.txt tests.log bench.log np2.log np2_stats.json gpu_bench.md gpu_bench.json; do
    rm -f "$OUTDIR/$f"
done
: >"$SUMMARY"
echo "gpu_check $(date -u '+%Y-%m-%d %H:%M:%S UTC') in $ROOT -> $OUTDIR" >>"$SUMMARY"

# step NAME LOGFILE CMD...: run CMD (stdout+stderr appended to LOGFILE and echoed), record its status
# (shown as $STEP_LABEL when set).
step() {
    local name=$1 log=$2
    shift 2
    local t0 rc shown=${STEP_LABEL:-$*}
    t0=$(date +%s)
    echo "=== $name: $shown" | tee -a "$log"
    "$@" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    printf '%-8s rc=%-3s %5ss  %s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$shown" >>"$SUMMARY"
    if [ "$rc" -ne 0 ]; then FAILED=1; fi
    echo "=== $name: exit $rc" | tee -a "$log"
    return 0
}

# ----------------------------------------------------------------- 1. dependencies (lark, mpich)
deps() {
    local missing="" site sp
    "$PY" -c 'import numpy, scipy, jinja2' || { echo "numpy/scipy/jinja2 missing: g2pl cannot run"; return 1; }
    "$PY" -c 'import lark' 2>/dev/null || missing="$missing lark"
    "$PY" -c 'from g2pl.runtime.launch import find_mpiexec; import mpi4py, sys; sys.exit(find_mpiexec() is None)' \
        2>/dev/null || missing="$missing mpich"
    if [ -z "$missing" ]; then echo "lark and mpiexec found"; return 0; fi
    echo "missing:$missing"
    if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
        site=/tmp/g2pl-site
        echo "installing carried wheels from $WHEELS into $site:"; ls "$WHEELS"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-installed --prefix "$site" "$WHEELS"/*.whl \
            || echo "pip install of the carried wheels failed"
        sp=$(find "$site" -type d -name site-packages 2>/dev/null | head -n 1)
        [ -n "$sp" ] && export PYTHONPATH=$PYTHONPATH:$sp
        export PATH=$site/bin:$PATH
        export LD_LIBRARY_PATH=$site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        echo "PYTHONPATH=$PYTHONPATH"; echo "PATH=$PATH"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    else
        echo "no wheels in $WHEELS"
    fi
    local rc=0
    if ! "$PY" -c 'import lark; print("lark", lark.__version__)'; then
        rc=1
        cat <<EOF
lark is missing and this machine may have no network. Carry its wheel (see bench/README.md, 'GPU check'):
  on a machine with network, in the repo root:
    echo /.whl/ >> .git/info/exclude
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp -d .whl lark==1.2.2
  then run this script with .whl carried into the repo root (device tool: carry [".whl"]).
EOF
    fi
    if ! "$PY" -c 'from g2pl.runtime.launch import find_mpiexec; import mpi4py, sys; e = find_mpiexec(); print("mpiexec", e); sys.exit(e is None)'; then
        rc=1
        cat <<EOF
mpiexec/mpi4py missing: the 2-rank step will fail. Carry the mpich wheel (and mpi4py if absent), e.g.
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl mpich
EOF
    fi
    return $rc
}

# ----------------------------------------------------------------- 2. environment
environment() {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "uname: $(uname -a)"
    echo "python: $(command -v "$PY") $("$PY" --version 2>&1)"
    echo "nproc: $(nproc 2>/dev/null)"
    echo; echo "--- git"
    git -C "$ROOT" rev-parse HEAD 2>&1 || echo "(no git metadata: commit unknown)"
    git -C "$ROOT" status --short 2>&1 | head -n 50
    echo; echo "--- nvidia-smi"
    local rc=0
    nvidia-smi || rc=1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
    echo; echo "--- cupy.show_config()"
    "$PY" -c 'import cupy; cupy.show_config(); print("devices:", cupy.cuda.runtime.getDeviceCount())' || rc=1
    echo; echo "--- pip freeze"
    "$PY" -m pip freeze 2>&1
    return $rc
}

step deps "$ENVF" deps
# deps() exports PYTHONPATH/PATH/LD_LIBRARY_PATH inside step's pipeline subshell: redo it here.
if [ -d /tmp/g2pl-site ]; then
    sp=$(find /tmp/g2pl-site -type d -name site-packages 2>/dev/null | head -n 1)
    [ -n "$sp" ] && export PYTHONPATH=$PYTHONPATH:$sp
    export PATH=/tmp/g2pl-site/bin:$PATH
    export LD_LIBRARY_PATH=/tmp/g2pl-site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
step env "$ENVF" environment

# ----------------------------------------------------------------- 3. GPU tests
TESTS=(tests/test_handwritten_cupy.py)
[ -f tests/test_cupy_backend.py ] && TESTS=(tests/test_cupy_backend.py "${TESTS[@]}")
step tests "$OUTDIR/tests.log" timeout "${G2PL_TEST_TIMEOUT:-150}" \
    "$PY" -m pytest -q -p no:cacheprovider -rs "${TESTS[@]}"

# ----------------------------------------------------------------- 4. benchmark
step bench "$OUTDIR/bench.log" timeout "${G2PL_BENCH_TIMEOUT:-330}" \
    "$PY" bench/gpu_bench.py --out "$OUTDIR" --graphs "${G2PL_GPU_GRAPHS:-kron:20,kron:22,kron:24}" \
    --repeat "${G2PL_GPU_REPEAT:-3}" --numpy-repeat "${G2PL_NUMPY_REPEAT:-1}" \
    --time-budget "${G2PL_BENCH_BUDGET:-240}"

# ----------------------------------------------------------------- 5. two ranks on one GPU
NP2_BACKEND=${G2PL_NP2_BACKEND:-cupy}  # numpy: to try the plumbing on a CPU
np2() {
    local root tmp rc
    tmp=$(mktemp -d)
    root=$("$PY" -c 'import sys; sys.path.insert(0, "bench")
import g2pl, handwritten as H
g = g2pl.load_graph("kron:20", seed=1)
print(int(g.ids[H.pick_root(g, 1)]))') || { echo "could not pick a root"; return 1; }
    echo "root $root"
    "$PY" -m g2pl.cli run programs/bfs.g2pl --graph kron:20 --seed 1 --backend "$NP2_BACKEND" --np 2 --arg "root=$root" \
        --stats "$OUTDIR/np2_stats.json" --output "$tmp/np2.json"
    rc=$?
    echo "2-rank $NP2_BACKEND run: exit $rc"
    [ "$rc" -ne 0 ] && return "$rc"
    "$PY" -m g2pl.cli run programs/bfs.g2pl --graph kron:20 --seed 1 --backend numpy --arg "root=$root" \
        --output "$tmp/np1.json" --quiet || { echo "1-rank numpy run failed"; return 1; }
    "$PY" - "$tmp/np2.json" "$tmp/np1.json" "$OUTDIR/np2_stats.json" <<'EOF'
import json, sys
a, b, s = (json.load(open(p)) for p in sys.argv[1:4])
same = a["values"] == b["values"]
print("answer of 2 ranks == 1 rank (numpy backend):", same)
dev = s.get("device", "n/a")
print("stats: backend", s.get("backend", "n/a"), "time_s", s.get("time_s", "n/a"), "ranks", s.get("ranks", "n/a"),
      "device", json.dumps(dev)[:400])
sys.exit(0 if same else 1)
EOF
}
STEP_LABEL="g2pl run programs/bfs.g2pl --graph kron:20 --backend $NP2_BACKEND --np 2 (vs 1 rank numpy)" \
    step np2 "$OUTDIR/np2.log" timeout "${G2PL_NP2_TIMEOUT:-90}" bash -c "$(declare -f np2); $(declare -p OUTDIR PY NP2_BACKEND); np2"

if [ "$FAILED" -ne 0 ]; then echo "OVERALL: FAILED (see the rc column)" >>"$SUMMARY"; else echo "OVERALL: ok" >>"$SUMMARY"; fi
echo; cat "$SUMMARY"
[ -f "$OUTDIR/gpu_bench.md" ] && echo "report: $OUTDIR/gpu_bench.md"
exit "$FAILED"
