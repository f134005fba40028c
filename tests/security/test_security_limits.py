"""Run limits and long runs: --time-limit and --max-supersteps bound loops that exchange nothing (on one
rank and on several, stopping every rank at the same point), and statistics stay bounded in memory
however many supersteps a run makes, with exact totals."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import subprocess
import sys
import time
import tracemalloc
from types import ModuleType

import pytest
from cli_util import ROOT, call, mpi_available, write

import g2pl
from g2pl.cli import g2pl_main
from g2pl.cli.progress import Progress
from g2pl.errors import RunStopped
from g2pl.runtime.checkpoint_schema import Bad, decode_runtime, encode_runtime
from g2pl.runtime.driver import execute
from g2pl.runtime.stats import KEEP, Stats, SuperstepStat

GRAPH = "er:10:10"
COUNT = "main(n:int){ x=0; i=0; while (i<n) { x=x+i; i=i+1; } return x; }"
FOREVER = "main(){ x = 0; while (true) { x = x + 1; } }"
# one aggregation per iteration: one cheap superstep each
EXCHANGING = "main(n:int){ s = 0; i = 0; while (i < n) { s = sum [ 1 | v <- V ]; i = i + 1; } return i; }"
EXCHANGING_FOREVER = "main(){ s = 0; while (true) { s = sum [ 1 | v <- V ]; } }"
# an if/else in the loop, and an inner loop: 4 loop iterations per outer one
NESTED = ("main(n:int){ x=0; i=0; while (i<n) { if (i < 2) { x = x + 1; } else { x = x - 1; } "
          "j = 0; while (j < 3) { j = j + 1; } i = i + 1; } return x; }")
# an exchange in the outer loop, an inner loop without one
MIXED = ("main(n:int){ X = { id | v <- V }; i=0; while (i<n) { X = { min [ x | x <- nvals v ] | v <- X }; "
         "j = 0; while (j < 3) { j = j + 1; } i = i + 1; } return i; }")



# ---------------------------------------------------------------- --time-limit inside loops


def test_time_limit_stops_a_loop_without_exchanges(tmp_path, capsys):
    prog = write(tmp_path, "count.g2pl", COUNT)
    stats, out = tmp_path / "s.json", tmp_path / "o.json"
    t0 = time.monotonic()
    rc, _, err = call(g2pl_main, ["run", prog, "--graph", GRAPH, "--arg", "n=1000000000000", "--time-limit",
                                  "0.5", "--quiet", "--stats", stats, "--output", out], capsys)
    assert time.monotonic() - t0 < 30  # it ran for ever before
    assert rc == 1 and err.count("error:") == 1 and "Traceback" not in err, err
    assert re.search(r"stopped after \d+\.\d s \(--time-limit 0.5\)", err), err
    assert "loop iterations without an exchange" in err, err
    s = json.loads(stats.read_text())
    assert s["stopped"]["reason"] == "time-limit" and s["loop_iterations"] > 0 and s["supersteps"] == 0
    assert not out.exists()


def test_api_limits_stop_an_endless_loop():
    prog = g2pl.compile(FOREVER)
    t0 = time.monotonic()
    with pytest.raises(RunStopped, match=r"stopped after 0 supersteps and 5 loop iterations.*--max-supersteps 5"):
        prog.run(GRAPH, time_limit=2, max_supersteps=5)
    with pytest.raises(RunStopped, match=r"--time-limit 0.3\b.*partial stats: 0 supersteps") as stop:
        prog.run(GRAPH, time_limit=0.3)
    assert stop.value.reason == "time-limit" and stop.value.stats["loop_iterations"] > 0
    assert time.monotonic() - t0 < 30


# ---------------------------------------------------------------- --max-supersteps inside loops


def test_max_supersteps_stops_an_endless_loop(tmp_path, capsys):
    prog = write(tmp_path, "forever.g2pl", FOREVER)
    stats = tmp_path / "s.json"
    rc, _, err = call(g2pl_main, ["run", prog, "--graph", GRAPH, "--max-supersteps", "10", "--time-limit", "60",
                                  "--quiet", "--stats", stats], capsys)
    assert rc == 1 and err.count("error:") == 1, err
    assert "stopped after 0 supersteps and 10 loop iterations without an exchange (--max-supersteps 10" in err
    s = json.loads(stats.read_text())
    assert s["stopped"]["reason"] == "max-supersteps" and s["loop_iterations"] == 10


@pytest.mark.parametrize(("src", "supersteps", "loops"), [
    (COUNT, 1, 5),  # a loop without an exchange: every iteration counts
    (NESTED, 1, 20),  # one count per iteration, whichever branch it takes, inner loops too
    (MIXED, 6, 15),  # an outer iteration that exchanges is a superstep; the inner iterations count
    (EXCHANGING, 6, 0),  # every iteration ends a superstep: nothing more counts
], ids=["local", "nested", "mixed", "exchanging"])
def test_a_run_fits_max_supersteps_when_supersteps_and_loop_iterations_do(src, supersteps, loops):
    prog = g2pl.compile(src)
    s = prog.run(GRAPH, args={"n": 5}).stats
    assert (s["supersteps"], s["loop_iterations"]) == (supersteps, loops)
    need = supersteps + loops
    assert prog.run(GRAPH, args={"n": 5}, max_supersteps=need).stats["supersteps"] == supersteps
    with pytest.raises(RunStopped) as stop:
        prog.run(GRAPH, args={"n": 5}, max_supersteps=need - 1)
    assert stop.value.reason == "max-supersteps"
    assert stop.value.stats["supersteps"] + stop.value.stats["loop_iterations"] == need - 1


def test_back_edges_are_one_per_loop():
    text = g2pl.compile(NESTED).python()
    line = next(ln for ln in text.splitlines() if ln.startswith("BACK_EDGES = "))
    assert len(eval(line.split("=", 1)[1].split("#")[0])) == 2, line  # noqa: S307 - our own generated literal


def test_modules_without_back_edges_are_still_bounded():
    """A module written without BACK_EDGES: any transition to a state numbered no higher counts."""
    mod = g2pl.compile(FOREVER).load()
    bare = ModuleType("bare")
    bare.__dict__.update({k: v for k, v in vars(mod).items() if k != "BACK_EDGES"})
    with pytest.raises(RunStopped, match="10 loop iterations"):
        execute(bare, g2pl.load_graph(GRAPH), {}, seed=0, max_supersteps=10)


@pytest.mark.skipif(not mpi_available(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
@pytest.mark.parametrize(("limit", "says"), [
    (["--max-supersteps", "10"], r"stopped after 0 supersteps and 10 loop iterations"),
    (["--time-limit", "1"], r"stopped after \d+\.\d s \(--time-limit 1\)"),
], ids=["max-supersteps", "time-limit"])
def test_every_rank_stops_a_loop_at_the_same_point(tmp_path, limit, says):
    """Both ranks decide together (a rank stopping alone would leave the other waiting for ever).
    The time limit runs under an outer mpiexec: the clock is then the ranks' own from the program's
    start, not a supervisor's that also counts the ranks' start-up."""
    from g2pl.runtime.launch import find_mpiexec

    prog = write(tmp_path, "forever.g2pl", FOREVER)
    stats = tmp_path / "s.json"
    run = [sys.executable, "-m", "g2pl.cli", "run", str(prog), "--graph", GRAPH, "--quiet", "--stats", str(stats),
           *limit]
    cmd = [*run, "--np", "2"] if limit[0] == "--max-supersteps" else [find_mpiexec(), "-n", "2", *run]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 1 and r.stderr.count("error:") == 1 and re.search(says, r.stderr), r.stderr
    s = json.loads(stats.read_text())
    assert s["stopped"]["reason"] == limit[0][2:] and len(s["per_rank"]) == 2 and s["loop_iterations"] > 0


def test_limits_bound_loops_on_the_cupy_backend():
    """The same counts on the CuPy backend (over the strict CuPy stand-in, tests/strict_cupy, where
    there is no GPU): the limits live on the host, whatever holds the arrays."""
    spec = importlib.util.spec_from_file_location("strict_cupy_activate",
                                                  ROOT / "tests" / "strict_cupy" / "activate.py")
    activate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(activate)
    with activate.standin():
        with pytest.raises(RunStopped, match="0 supersteps and 10 loop iterations"):
            g2pl.compile(FOREVER).run(GRAPH, backend="cupy", max_supersteps=10)
        with pytest.raises(RunStopped, match=r"--time-limit 0.3\b"):
            g2pl.compile(FOREVER).run(GRAPH, backend="cupy", time_limit=0.3)
        with pytest.raises(RunStopped) as stop:
            g2pl.compile(EXCHANGING_FOREVER).run(GRAPH, backend="cupy", max_supersteps=2 * KEEP + 100)
    s = stop.value.stats
    assert s["supersteps"] == 2 * KEEP + 100 and len(s["per_superstep"]) == 2 * KEEP
    assert s["per_superstep_left_out"]["supersteps"] == 100


# ---------------------------------------------------------------- statistics of long runs


def test_stats_keep_bounded_records_and_exact_totals():
    st = Stats()
    n = 200_000
    for i in range(n):
        st.record(SuperstepStat(i, 1, i % 7, 2 * (i % 5), 8, 3, 0.5, 0.25))
    assert len(st.per_superstep) == 2 * KEEP and st.supersteps == n
    kept = [s.superstep for s in st.per_superstep]
    assert kept == [*range(KEEP), *range(n - KEEP, n)]
    d = st.as_dict()
    assert d["supersteps"] == n and d["messages"] == sum(i % 7 for i in range(n))
    assert d["bytes"] == sum(2 * (i % 5) for i in range(n)) and d["record_bytes"] == 8 * n
    assert d["per_superstep_left_out"]["supersteps"] == n - 2 * KEEP
    assert st.total("time_s") == pytest.approx(0.5 * n)


def test_a_long_run_keeps_its_heap_bounded():
    prog = g2pl.compile(EXCHANGING_FOREVER)
    graph = g2pl.load_graph(GRAPH)
    n, first = 12_000, 4_000
    heap: dict[int, int] = {}
    kept = [0]  # the most records kept at once

    def progress(stats, final):
        kept[0] = max(kept[0], len(stats.per_superstep))
        if stats.supersteps in (first, n - 1):
            heap[stats.supersteps] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        with pytest.raises(RunStopped) as stop:
            prog.run(graph, max_supersteps=n, progress=progress)
    finally:
        tracemalloc.stop()
    assert kept[0] == 2 * KEEP
    assert heap[n - 1] - heap[first] < 256 * 1024  # a record per superstep kept: ~230 bytes each, 1.8 MB
    s = stop.value.stats
    assert s["supersteps"] == n and len(s["per_superstep"]) == 2 * KEEP
    assert s["per_superstep_left_out"]["supersteps"] == n - 2 * KEEP
    assert s["messages"] == sum(r["messages"] for r in s["per_superstep"]) + s["per_superstep_left_out"]["messages"]


def test_long_checkpointed_run_resumes_with_exact_totals(tmp_path):
    prog = g2pl.compile(EXCHANGING)
    graph = g2pl.load_graph(GRAPH)
    args = {"n": 3200}
    ref = prog.run(graph, args=args).stats
    d = tmp_path / "ck"
    with pytest.raises(RunStopped):
        prog.run(graph, args=args, checkpoint=str(d), checkpoint_every=1000, max_supersteps=3100)
    saved = json.loads((d / "ss3000" / "rank0.json").read_text())["runtime"]
    assert len(saved["per_superstep"]) == 2 * KEEP and saved["left_out"][0] == 3000 - 2 * KEEP
    assert sorted(p.name for p in d.iterdir() if p.is_dir()) == ["ss2000", "ss3000"]
    again = prog.run(graph, args=args, resume=str(d), checkpoint_every=1000).stats
    for key in ("supersteps", "messages", "bytes", "record_bytes", "per_superstep_left_out"):
        if key == "per_superstep_left_out":
            assert again[key]["supersteps"] == ref[key]["supersteps"] == 3201 - 2 * KEEP
            assert again[key]["messages"] == ref[key]["messages"]
        else:
            assert again[key] == ref[key], key
    assert [r["superstep"] for r in again["per_superstep"]] == [r["superstep"] for r in ref["per_superstep"]]


def test_checkpoint_statistics_are_checked():
    states = {0, 1, 2}
    rows = [SuperstepStat(i, 1, 0, 0, 0, 0, 0.0) for i in range(2 * KEEP)]
    rows[KEEP:] = [SuperstepStat(i + 5, 1, 0, 0, 0, 0, 0.0) for i in range(KEEP, 2 * KEEP)]
    gap = SuperstepStat(5, -1, 0, 0, 0, 0, 0.0)
    good = encode_runtime(rows, [], {}, {"push": 0, "pull": 0}, {"full": 0, "shrunk": 0}, left_out=gap)
    assert len(decode_runtime(good, 0, states)["per_superstep"]) == 2 * KEEP
    for bad_gap in ([-1, -1, 0, 0, 0, 0, 0.0, 0.0], [5, 2, 0, 0, 0, 0, 0.0, 0.0], [4, -1, 0, 0, 0, 0, 0.0, 0.0]):
        with pytest.raises(Bad):
            decode_runtime(dict(good, left_out=bad_gap), 0, states)
    with pytest.raises(Bad):  # rows left out, but not the first and last KEEP kept
        decode_runtime(dict(good, per_superstep=good["per_superstep"][:-1]), 0, states)


def test_progress_counts_every_superstep_of_a_long_run():
    buf = io.StringIO()
    pr = Progress(buf, live=False)
    st = Stats()
    for i in range(3 * KEEP):
        st.record(SuperstepStat(i, 1, 2, 0, 0, 1, 0.0))
        pr(st)
    pr(st, True)
    assert buf.getvalue().splitlines()[-1].startswith(f"g2pl: done: {3 * KEEP} supersteps, {6 * KEEP:,} messages")
