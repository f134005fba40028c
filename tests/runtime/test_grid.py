"""Exchanges routed over a grid of ranks (g2pl/runtime/grid.py, `--partition 2d`): the routed
all-to-all delivers exactly what the direct one does, programs give the same answers, supersteps and
messages, and each rank talks to its row and column only."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from program_args import cli_args, program_args
from thread_comm import PartialsComm, ThreadComm, run_ranks

import g2pl
from g2pl.errors import G2PLError
from g2pl.graph.graph import build_graph
from g2pl.runtime.grid import GridComm, grid_shape, resolve_partition, routed
from g2pl.runtime.ingest import DistributedGraph
from g2pl.runtime.partition import partition

ROOT = Path(__file__).resolve().parents[2]


def _raise_any(got: list) -> list:
    for x in got:
        if isinstance(x, BaseException):
            raise x
    return got


@pytest.mark.parametrize("size", [1, 2, 3, 4, 6, 8, 9, 12, 16])
@pytest.mark.parametrize("kind", ["int64", "record", "empty"])
def test_routed_alltoallv_delivers_what_the_direct_one_does(size, kind):
    rng = np.random.default_rng(size)
    counts = rng.integers(0, 6, (size, size)) * (kind != "empty")
    rec = np.dtype("V12")

    def one(c: ThreadComm):
        n = int(counts[c.rank].sum())
        data = (np.arange(n, dtype=np.int64) + 1000 * c.rank) if kind != "record" else \
            rng.integers(0, 255, 12 * n, dtype=np.uint8).view(rec)
        g = GridComm(c)
        got, got_counts = g.alltoallv(data, counts[c.rank])
        want, want_counts = c.alltoallv(data, counts[c.rank])
        assert got.dtype == want.dtype and np.array_equal(got, want), c.rank
        assert np.array_equal(got_counts, want_counts)
        rows, cols = g.shape
        peers = {r for r in range(size) if r != c.rank and (r // cols == g.row or r % cols == g.col)}
        assert g.partners <= peers and len(peers) == rows + cols - 2
        return g.bytes_sent

    sent = _raise_any(run_ranks(size, one))
    assert size == 1 or kind == "empty" or sum(sent) > 0


def test_grid_shape_and_layouts():
    assert [grid_shape(p) for p in (1, 2, 4, 6, 7, 16, 64, 1024)] == [
        (1, 1), (1, 2), (2, 2), (2, 3), (1, 7), (4, 4), (8, 8), (32, 32)]
    assert resolve_partition("auto", 16) == "1d" and resolve_partition("auto", 64) == "2d"
    assert resolve_partition("auto", 67) == "1d"  # prime: one row, nothing to route
    assert resolve_partition("2d", 4) == "2d"
    with pytest.raises(G2PLError, match="unknown partition `3d`"):
        resolve_partition("3d", 4)
    with pytest.raises(G2PLError, match="unknown partition"):
        routed(None, "2D")

    def one(c: ThreadComm):
        return type(routed(c, "2d")).__name__, type(routed(c, "1d")).__name__, type(routed(c, "auto")).__name__

    assert _raise_any(run_ranks(4, one))[0] == ("GridComm", "ThreadComm", "ThreadComm")
    assert _raise_any(run_ranks(3, one))[0] == ("ThreadComm",) * 3  # 3 ranks: one row


def _graph(seed: int, directed: bool):
    """Non-contiguous IDs, three components, isolated vertices, weights."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**9, 300, replace=False)
    us, vs = [], []
    for part in (ids[:150], ids[150:250], ids[250:280]):
        m = 3 * len(part)
        us.append(rng.choice(part, m))
        vs.append(rng.choice(part, m))
    u, v = np.concatenate(us), np.concatenate(vs)
    return build_graph(u, v, rng.uniform(0.5, 4, len(u)), directed=directed, extra_ids=ids, name="grid-test"), int(ids[0])


def _run(prog, g, size: int, args: dict, layout: str, opt_args: dict | None = None):
    parts = partition(g, size, "degree")

    def one(tc: ThreadComm):
        c = PartialsComm(tc.hub, tc.rank)
        dg = DistributedGraph(c, parts[c.rank], g.n, g.m, g.directed, g.weighted, g.name, "degree")
        return prog.run(dg, args, comm=c, renumber="degree", partition=layout)

    return _raise_any(run_ranks(size, one))[0]


PROGRAMS = sorted(p.stem for p in (ROOT / "programs").glob("*.g2pl"))
CASES = [(name, 4) for name in PROGRAMS] + [(name, 6) for name in ("bfs", "sssp", "pagerank", "cc", "matching")]


@pytest.mark.parametrize(("name", "size"), CASES)
@pytest.mark.parametrize("opt", [0, 2])
def test_programs_give_the_same_answers_routed(name, size, opt):
    g, root = _graph(5, directed=name in ("sssp",))
    path = ROOT / "programs" / f"{name}.g2pl"
    prog = g2pl.compile(path, opt=opt)
    args = program_args(path, root)
    direct = _run(prog, g, size, args, "1d")
    grid = _run(prog, g, size, args, "2d")
    assert json.dumps(direct.output()) == json.dumps(grid.output())  # bit for bit
    for k in ("supersteps", "messages", "record_bytes"):
        assert direct.stats[k] == grid.stats[k], k
    rows, cols = grid_shape(size)
    assert direct.stats["partition"] == "1d" and grid.stats["partition"] == f"2d {rows}x{cols}"
    assert max(r["peers"] for r in grid.stats["per_rank"]) <= rows + cols - 2
    assert grid.stats["bytes"] != direct.stats["bytes"]  # the routed traffic is what is counted


@pytest.mark.skipif(not (ROOT / "programs" / "bfs.g2pl").exists(), reason="programs missing")
def test_cli_partition_2d_under_mpi(tmp_path):
    from g2pl.runtime.launch import find_mpiexec

    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py not installed")
    if find_mpiexec() is None:
        pytest.skip("mpiexec not installed")
    import sys

    outs = {}
    for layout in ("1d", "2d"):
        out, stats = tmp_path / f"o{layout}.json", tmp_path / f"s{layout}.json"
        cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "pagerank.g2pl"), "--graph",
               "kron:9", "--np", "4", "--partition", layout, "--quiet", "--output", str(out), "--stats", str(stats),
               *cli_args(ROOT / "programs" / "pagerank.g2pl", 0)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        outs[layout] = (out.read_bytes(), json.loads(stats.read_text()))
    assert outs["1d"][0] == outs["2d"][0]
    s1, s2 = outs["1d"][1], outs["2d"][1]
    assert s2["partition"] == "2d 2x2" and [r["peers"] for r in s2["per_rank"]] == [2] * 4
    assert s1["supersteps"] == s2["supersteps"] and s1["messages"] == s2["messages"]


def test_bad_partition_is_a_usage_error(tmp_path):
    import sys

    cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "bfs.g2pl"), "--graph", "kron:4",
           "--partition", "3d"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and "--partition" in r.stderr and "Traceback" not in r.stderr
