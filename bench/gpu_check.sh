#!/usr/bin/env bash
# GPU check: ONE unattended command for a machine with an NVIDIA GPU and CuPy (see bench/README.md).
#
#   bash bench/gpu_check.sh [OUTDIR]          # default bench/results/gpu_check_<UTC date>
#
# Fits one 9-minute device command, cold CuPy kernel cache included: every step's timeout is cut to what
# is left of G2PL_CHECK_LIMIT (500 s), and whatever ran is in OUTDIR even when steps fail or hang.
# Steps, most valuable first:
#   deps, env   lark/mpich from carried wheels if missing; date, nvidia-smi, cupy, pip freeze, git
#   bench       kron:24 BFS and PageRank, compiled (CuPy backend) vs hand-written CuPy, each checking the
#               other's answer, no NumPy reference (bench/gpu_bench.py --no-numpy; kron:22 instead when the
#               estimated load does not fit). Runs in the background: it loads and partitions the graph (CPU,
#               minutes) while
#   tests       the GPU tests run (every program on the device vs the NumPy backend, the hand-written code
#               on the device vs the CPU; G2PL_TEST_TIMEOUT_EACH per test); the bench waits for their end
#               before it touches the device.
#   refs        small graphs (kron:16, kron:18) with the NumPy backend as the reference, all four algorithms
#   np2         bfs on 2 ranks sharing the GPU (kron:18), its answer compared with 1 rank on NumPy
#   tests-rest  the rest of the two test files (stand-in and plumbing tests), with the time left
#
# OUTDIR gets these 8 files (kept few: only a few files may be copied back from the GPU machine):
#   summary.txt     a line when each step starts and one when it ends (name, exit status, seconds, elapsed),
#                   one line per benchmark row, the test counts; then OVERALL. Written as it goes.
#   env.txt         deps + env steps
#   tests.log       both pytest steps (-v: one line per test)
#   bench.log       bench/gpu_bench.py's console output (bench and refs)
#   gpu_bench.md    the benchmark report; gpu_bench.json its raw numbers (rewritten after every row)
#   np2.log, np2_stats.json   the 2-rank step and its --stats
#
# The machine may have no network: lark (needed by g2pl) and mpich (mpiexec + libmpi, for --np 2) are
# installed from wheels in $G2PL_WHEELS (default <repo>/.whl) when they are missing.
#
# Knobs (environment; defaults below): graphs, repeats, per-step caps in seconds. G2PL_GPU_REHEARSAL=1 runs
# the device's Python commands on the strict CuPy stand-in (tests/strict_cupy): see bench/gpu_rehearsal.py.
set -u -o pipefail

: "${G2PL_CHECK_LIMIT:=500}"        # seconds for the whole script
: "${G2PL_GPU_GRAPHS:=kron:24}"     # the bench step's graphs (no NumPy reference)
: "${G2PL_GPU_FALLBACK:=kron:22}"   # run instead when a bench graph's loading would not fit
: "${G2PL_GPU_ALGOS:=bfs,pagerank}"
: "${G2PL_GPU_REPEAT:=3}"
: "${G2PL_REF_GRAPHS:=kron:16,kron:18}"   # the refs step's graphs (NumPy reference)
: "${G2PL_REF_ALGOS:=bfs,pagerank,cc,sssp}"
: "${G2PL_NP2_GRAPH:=kron:18}"
: "${G2PL_NP2_BACKEND:=cupy}"       # numpy: to try the plumbing on a CPU
: "${G2PL_GPU_TESTS_K:=on_the_gpu or exists_in_cupy}"   # pytest -k of the tests step
: "${G2PL_TESTS_REST:=1}"           # 0: no tests-rest step
: "${G2PL_TEST_TIMEOUT_EACH:=60}"   # seconds per test
: "${G2PL_BENCH_TIMEOUT:=330}"
: "${G2PL_TEST_TIMEOUT:=150}"
: "${G2PL_REF_TIMEOUT:=60}"
: "${G2PL_NP2_TIMEOUT:=45}"
: "${G2PL_REST_TIMEOUT:=120}"
: "${G2PL_GPU_REHEARSAL:=0}"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTDIR=${1:-$ROOT/bench/results/gpu_check_$(date -u +%Y%m%d_%H%M%S)}
mkdir -p "$OUTDIR" || { echo "gpu_check: cannot create $OUTDIR" >&2; exit 2; }
OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
WHEELS=${G2PL_WHEELS:-$ROOT/.whl}
SUMMARY=$OUTDIR/summary.txt
ENVF=$OUTDIR/env.txt
TMPD=$(mktemp -d)
T_START=$(date +%s)
export PYTHONUNBUFFERED=1
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
cd "$ROOT" || exit 2
trap 'rm -rf "$TMPD"' EXIT

# Python for the commands that use the device; the rehearsal runs them on the stand-in.
if [ "$G2PL_GPU_REHEARSAL" = 1 ]; then
    PYDEV=("$PY" "$ROOT/bench/gpu_rehearsal.py" exec)
else
    PYDEV=("$PY")
fi

# a rerun into the same folder starts afresh
for f in summary.txt env.txt tests.log bench.log np2.log np2_stats.json gpu_bench.md gpu_bench.json; do
    rm -f "$OUTDIR/$f"
done
{
    echo "gpu_check $(date -u '+%Y-%m-%d %H:%M:%S UTC') in $ROOT -> $OUTDIR (limit ${G2PL_CHECK_LIMIT}s)"
    [ "$G2PL_GPU_REHEARSAL" = 1 ] && echo "REHEARSAL: device commands on the CuPy stand-in (tests/strict_cupy)"
} >"$SUMMARY"

elapsed() { echo $(($(date +%s) - T_START)); }

# limit_for CAP: CAP seconds, cut to what is left of G2PL_CHECK_LIMIT
limit_for() {
    local left=$((G2PL_CHECK_LIMIT - $(elapsed) - 2))
    echo $(($1 < left ? $1 : left))
}

# step NAME LOGFILE LIMIT CMD...: run CMD (a function runs as it is; anything else under `timeout LIMIT`),
# output appended to LOGFILE (and echoed unless STEP_QUIET=1); a line in summary.txt when it starts and
# one when it ends (shown as $STEP_LABEL when set). A LIMIT under 5 s skips the step.
step() {
    local name=$1 log=$2 lim=$3
    shift 3
    local t0 rc shown=${STEP_LABEL:-$*} how=""
    if [ "$lim" -lt 5 ]; then
        printf '%-10s rc=skip %5ss  +%4ss  %s (no time left)\n' "$name" 0 "$(elapsed)" "$shown" >>"$SUMMARY"
        echo "=== $name: skipped, no time left" >>"$log"
        return 0
    fi
    t0=$(date +%s)
    printf '# %-8s started at +%ss (limit %ss)\n' "$name" "$(elapsed)" "$lim" >>"$SUMMARY"
    echo "=== $name (limit ${lim}s): $shown" >>"$log"
    [ "${STEP_QUIET:-0}" = 1 ] || echo "=== $name (limit ${lim}s): $shown"
    if declare -F "$1" >/dev/null; then
        if [ "${STEP_QUIET:-0}" = 1 ]; then "$@" >>"$log" 2>&1; rc=$?; else "$@" 2>&1 | tee -a "$log"; rc=${PIPESTATUS[0]}; fi
    else
        if [ "${STEP_QUIET:-0}" = 1 ]; then
            timeout -k 5 "$lim" "$@" >>"$log" 2>&1; rc=$?
        else
            timeout -k 5 "$lim" "$@" 2>&1 | tee -a "$log"; rc=${PIPESTATUS[0]}
        fi
        { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && how=" (TIMED OUT)"
    fi
    printf '%-10s rc=%-4s %5ss  +%4ss  %s%s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$(elapsed)" "$shown" "$how" \
        >>"$SUMMARY"
    echo "=== $name: exit $rc$how" >>"$log"
    [ "${STEP_QUIET:-0}" = 1 ] || echo "=== $name: exit $rc$how"
    return 0
}

# rows LABEL: one summary line per benchmark row of that step
rows() {
    "$PY" bench/gpu_bench.py --summarize "$OUTDIR/gpu_bench.json" --label "$1" >>"$SUMMARY" 2>&1
}

# test_counts NAME: pytest's result line in NAME's part of tests.log (or the per-test counts if it was killed)
test_counts() {
    local part last
    part=$(sed -n "/^=== $1 (limit/,\$p" "$OUTDIR/tests.log")
    [ -z "$part" ] && return 0  # skipped
    last=$(echo "$part" | grep -E '^=+ .*(passed|failed|error|skipped|no tests ran).* in [0-9.]+s' | tail -n 1)
    if [ -n "$last" ]; then
        echo "  $1: $(echo "$last" | tr -d '=' | sed 's/^ *//; s/ *$//')" >>"$SUMMARY"
    else
        echo "  $1: no pytest summary (killed?): $(echo "$part" | grep -c ' PASSED') passed, $(echo "$part" \
            | grep -c ' FAILED') failed so far" >>"$SUMMARY"
    fi
    echo "$part" | grep -E '^(FAILED|ERROR) ' | sed 's/^/    /' | tail -n 30 >>"$SUMMARY"
}

# ----------------------------------------------------------------- deps (lark, mpich)
deps() {
    local missing site sp
    # one interpreter start: prints what is missing (" lark", " mpich"), exits 1 without numpy/scipy/jinja2
    missing=$("$PY" -c 'import importlib.util as u, sys
if not all(u.find_spec(m) for m in ("numpy", "scipy", "jinja2")):
    sys.exit(1)
from g2pl.runtime.launch import find_mpiexec
print(("" if u.find_spec("lark") else " lark") + ("" if u.find_spec("mpi4py") and find_mpiexec() else " mpich"))') \
        || { echo "numpy/scipy/jinja2 missing: g2pl cannot run"; return 1; }
    if [ -z "$missing" ]; then echo "lark and mpiexec found"; return 0; fi
    echo "missing:$missing"
    if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
        site=/tmp/g2pl-site
        echo "installing carried wheels from $WHEELS into $site:"; ls "$WHEELS"
        timeout 50 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-installed \
            --prefix "$site" "$WHEELS"/*.whl || echo "pip install of the carried wheels failed"
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
  then run this script with .whl copied into the repo root.
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

# ----------------------------------------------------------------- environment
environment() {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "uname: $(uname -a)"
    echo "python: $(command -v "$PY") $("$PY" --version 2>&1)"
    echo "nproc: $(nproc 2>/dev/null)"
    echo; echo "--- git"
    git -C "$ROOT" rev-parse HEAD 2>&1 || echo "(no git metadata: commit unknown)"
    git -C "$ROOT" status --short 2>&1 | head -n 50
    echo; echo "--- nvidia-smi"
    timeout 10 nvidia-smi 2>&1 || echo "(nvidia-smi failed or is missing)"
    timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
    echo; echo "--- cupy"
    local rc=0
    timeout 30 "${PYDEV[@]}" -c 'import cupy
show = getattr(cupy, "show_config", None)
show() if show else print("cupy", getattr(cupy, "__version__", "(stand-in)"))
print("devices:", cupy.cuda.runtime.getDeviceCount())' || rc=1
    echo; echo "--- pip freeze"
    timeout 15 "$PY" -m pip freeze 2>&1
    return $rc
}

step deps "$ENVF" 60 deps
# deps() exports PYTHONPATH/PATH/LD_LIBRARY_PATH inside step's pipeline subshell: redo it here.
if [ -d /tmp/g2pl-site ]; then
    sp=$(find /tmp/g2pl-site -type d -name site-packages 2>/dev/null | head -n 1)
    [ -n "$sp" ] && export PYTHONPATH=$PYTHONPATH:$sp
    export PATH=/tmp/g2pl-site/bin:$PATH
    export LD_LIBRARY_PATH=/tmp/g2pl-site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
step env "$ENVF" 30 environment

# ----------------------------------------------------------------- bench (background) + GPU tests
TESTS=(tests/runtime/test_cupy_backend.py tests/project/test_handwritten_cupy.py)
DONE=$TMPD/tests.done
T=$(limit_for "$G2PL_BENCH_TIMEOUT")
STEP_QUIET=1 step bench "$OUTDIR/bench.log" "$T" "${PYDEV[@]}" bench/gpu_bench.py --out "$OUTDIR" --label bench \
    --graphs "$G2PL_GPU_GRAPHS" --fallback "$G2PL_GPU_FALLBACK" --algos "$G2PL_GPU_ALGOS" --no-numpy \
    --repeat "$G2PL_GPU_REPEAT" \
    --time-budget $((T > 40 ? T - 20 : T / 2)) --wait-file "$DONE" &
BENCH_PID=$!

export G2PL_TEST_TIMEOUT_EACH
step tests "$OUTDIR/tests.log" "$(limit_for "$G2PL_TEST_TIMEOUT")" "${PYDEV[@]}" -m pytest -o addopts= -v \
    -p no:cacheprovider -rfEs "${TESTS[@]}" -k "$G2PL_GPU_TESTS_K"
touch "$DONE"
test_counts tests
echo "(waiting for the bench step)"
wait "$BENCH_PID"
rows bench

# ----------------------------------------------------------------- small graphs with the NumPy reference
T=$(limit_for "$G2PL_REF_TIMEOUT")
step refs "$OUTDIR/bench.log" "$T" "${PYDEV[@]}" bench/gpu_bench.py --out "$OUTDIR" --append --label refs \
    --graphs "$G2PL_REF_GRAPHS" --algos "$G2PL_REF_ALGOS" --repeat "$G2PL_GPU_REPEAT" --numpy-repeat 1 \
    --time-budget $((T > 20 ? T - 8 : T / 2))
rows refs

# ----------------------------------------------------------------- two ranks on one GPU
np2() {
    local root tmp rc
    tmp=$(mktemp -d)
    # the rehearsal's ranks (started by mpiexec) find the stand-in as `cupy` on their path
    [ "$G2PL_GPU_REHEARSAL" = 1 ] && export PYTHONPATH=$ROOT/tests/strict_cupy:$PYTHONPATH
    # the root, and the 1-rank NumPy answer to compare with (one interpreter start)
    root=$("$PY" -c 'import json, sys; sys.path.insert(0, "bench")
import g2pl, handwritten as H
g = g2pl.load_graph(sys.argv[1], seed=1)
root = int(g.ids[H.pick_root(g, 1)])
res = g2pl.compile_file("programs/bfs.g2pl").run(g, args={"root": root}, seed=1)
json.dump(res.output(), open(sys.argv[2], "w"))
print(root)' "$G2PL_NP2_GRAPH" "$tmp/np1.json") || { echo "could not pick a root or run on 1 rank"; return 1; }
    echo "root $root"
    "$PY" -m g2pl.cli run programs/bfs.g2pl --graph "$G2PL_NP2_GRAPH" --seed 1 --backend "$G2PL_NP2_BACKEND" --np 2 \
        --arg "root=$root" --max-supersteps 1000 --stats "$OUTDIR/np2_stats.json" --output "$tmp/np2.json"
    rc=$?
    echo "2-rank $G2PL_NP2_BACKEND run: exit $rc"
    [ "$rc" -ne 0 ] && return "$rc"
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
STEP_LABEL="g2pl run programs/bfs.g2pl --graph $G2PL_NP2_GRAPH --backend $G2PL_NP2_BACKEND --np 2 (vs 1 rank numpy)" \
    step np2 "$OUTDIR/np2.log" "$(limit_for "$G2PL_NP2_TIMEOUT")" bash -c \
    "$(declare -f np2); $(declare -p OUTDIR PY ROOT G2PL_NP2_BACKEND G2PL_NP2_GRAPH G2PL_GPU_REHEARSAL); np2"

# ----------------------------------------------------------------- the rest of the tests, with the time left
if [ "$G2PL_TESTS_REST" = 1 ]; then
    step tests-rest "$OUTDIR/tests.log" "$(limit_for "$G2PL_REST_TIMEOUT")" "${PYDEV[@]}" -m pytest -o addopts= \
        -v -p no:cacheprovider -rfEs "${TESTS[@]}" -k "not ($G2PL_GPU_TESTS_K)"
    test_counts tests-rest
fi

# ----------------------------------------------------------------- verdict
# rc=3: gpu_bench.py skipped graphs or rows for its time budget (incomplete, not wrong)
BAD=$(awk '$2 ~ /^rc=/ && $2 != "rc=0" && $2 != "rc=skip" && $2 != "rc=3" {printf " %s", $1}' "$SUMMARY")
SKIPPED=$(awk '$2 == "rc=skip" || $2 == "rc=3" {printf " %s", $1}' "$SUMMARY")
if [ -n "$BAD" ]; then
    echo "OVERALL: FAILED (steps:$BAD)${SKIPPED:+; incomplete:$SKIPPED} after $(elapsed)s" >>"$SUMMARY"
elif [ -n "$SKIPPED" ]; then
    echo "OVERALL: INCOMPLETE (skipped, or rows skipped:$SKIPPED) after $(elapsed)s" >>"$SUMMARY"
else
    echo "OVERALL: ok after $(elapsed)s" >>"$SUMMARY"
fi
echo; cat "$SUMMARY"
[ -f "$OUTDIR/gpu_bench.md" ] && echo "report: $OUTDIR/gpu_bench.md"
[ -z "$BAD" ]
