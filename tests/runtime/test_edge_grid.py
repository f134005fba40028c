"""Neighbourhood reductions over edge blocks (g2pl/runtime/edge_grid.py, `--partition 2d`): the same
answers and messages as 1D to the bit, float sums included, fewer bytes than 1D and than routing the
1D exchange, O(sqrt P) partners per rank."""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from program_args import program_args
from thread_comm import PartialsComm, ThreadComm, run_ranks

import g2pl
from g2pl.errors import G2PLError
from g2pl.graph.generators import generate
from g2pl.graph.graph import build_graph
from g2pl.runtime import edge_grid, neighbourhood
from g2pl.runtime.grid import grid_shape
from g2pl.runtime.ingest import DistributedGraph
from g2pl.runtime.partition import partition

ROOT = Path(__file__).resolve().parents[2]


def _graph(seed: int, directed: bool, weighted: bool = True):
    """Sparse original IDs up to 10**12, four components of different sizes, isolated vertices, a hub."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**12, 500, replace=False)
    us, vs = [], []
    for part in (ids[:250], ids[250:380], ids[380:440], ids[440:460]):
        m = 4 * len(part)
        us.append(rng.choice(part, m))
        vs.append(rng.choice(part, m))
    us.append(np.full(60, ids[0]))  # a hub
    vs.append(rng.choice(ids[:250], 60))
    u, v = np.concatenate(us), np.concatenate(vs)
    w = rng.uniform(0.5, 4, len(u)) if weighted else None
    return build_graph(u, v, w, directed=directed, extra_ids=ids, name="edge-grid-test"), int(ids[3])


class CountingComm(PartialsComm):
    """The thread communicator counting its bytes as MPIComm does (what a rank sends to others)."""

    def alltoallv(self, send, send_counts, recv_counts=None):
        got, counts = super().alltoallv(send, send_counts, recv_counts)
        item = np.asarray(send).dtype.itemsize
        sc = np.asarray(send_counts, dtype=np.int64)
        self.bytes_sent += int(sc.sum() - sc[self.rank]) * item
        self.bytes_received += int(counts.sum() - counts[self.rank]) * item
        return got, counts

    def allreduce_partials(self, parts, layout):
        share = np.asarray(parts).nbytes * (self.size - 1) // self.size
        self.bytes_sent += share
        self.bytes_received += share
        return super().allreduce_partials(parts, layout)


def _run(prog, g, size: int, args: dict, layout: str, blocks: bool = True):
    """Rank 0's result on `size` thread ranks; `blocks=False`: the 2D run routes every exchange (the
    edge blocks turned off), for comparison."""
    parts = partition(g, size, "degree")

    def one(tc: ThreadComm):
        c = CountingComm(tc.hub, tc.rank)
        dg = DistributedGraph(c, parts[c.rank], g.n, g.m, g.directed, g.weighted, g.name, "degree")
        return prog.run(dg, args, comm=c, renumber="degree", partition=layout)

    if blocks:
        got = run_ranks(size, one)
    else:
        keep = neighbourhood.Neighbourhood._edge_grid
        neighbourhood.Neighbourhood._edge_grid = lambda *a: None  # type: ignore[method-assign]
        try:
            got = run_ranks(size, one)
        finally:
            neighbourhood.Neighbourhood._edge_grid = keep  # type: ignore[method-assign]
    for x in got:
        if isinstance(x, BaseException):
            raise x
    return got[0]


def _same(a, b) -> None:
    assert json.dumps(a.output()) == json.dumps(b.output())  # bit for bit (floats by repr)
    for k in ("supersteps", "messages", "record_bytes"):
        assert a.stats[k] == b.stats[k], k


#: programs whose neighbourhood reductions take the blocks: or (BFS), min over ints (CC), float sums
#: (PageRank, HITS), float32 sums, int sums and counts (k-core, triangles' degrees), max (coloring, MIS)
PROGRAMS = ("bfs", "bfs_parent", "cc", "pagerank", "pagerank32", "hits", "kcore", "coloring", "mis", "lpa",
            "wcc", "sssp", "densest", "bipartite")


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("size", [8, 9])
@pytest.mark.parametrize("directed", [False, True])
def test_programs_equal_1d_on_grids(name, size, directed):
    """2 x 4 and 3 x 3 grids (a float sum's pipeline of two and three rounds), both graph kinds."""
    g, root = _graph(11 + size, directed)
    path = ROOT / "programs" / f"{name}.g2pl"
    prog = g2pl.compile(path)
    args = program_args(path, root)
    one_d = _run(prog, g, size, args, "1d")
    two_d = _run(prog, g, size, args, "2d")
    _same(one_d, two_d)
    rows, cols = grid_shape(size)
    assert two_d.stats["partition"] == f"2d {rows}x{cols}"
    assert max(r["peers"] for r in two_d.stats["per_rank"]) <= rows + cols - 2


@pytest.mark.parametrize("name", ["pagerank", "cc", "bfs"])
def test_unweighted_and_o0(name):
    g, root = _graph(3, True, weighted=False)
    path = ROOT / "programs" / f"{name}.g2pl"
    args = program_args(path, root)
    for opt in (0, 1):
        prog = g2pl.compile(path, opt=opt)
        _same(_run(prog, g, 4, args, "1d"), _run(prog, g, 4, args, "2d"))


SOURCE = """
main(t: float) {
  X = { float(id % 7) - 3.0 | v <- V };
  S = { sum [ x / 3.0 | x <- nvals y ] | y <- X };
  Z = { sum [ x | x <- nvals y, x > t ] | y <- X };
  N = { sum [ 1 | x <- nvals y, x > t ] | y <- X };
  I = { sum [ id[u] % 5 | u <- nvals v ] | v <- V };
  Mn = { min [ x | x <- nvals y, x > t ] | y <- X };
  Mx = { max [ id[u] | u <- nvals v ] | v <- V };
  A = { and [ x > -3.0 | x <- nvals y ] | y <- X };
  O = { or [ x > t | x <- nvals y ] | y <- X };
  F = { sum [ float32(x * 0.1) | x <- nvals y ] | y <- X };
  Ai = { sum [ x | x <- allnvals y ] | y <- X };
  return S, Z, N, I, Mn, Mx, A, O, F, Ai;
}
"""


@pytest.mark.parametrize("size", [4, 6, 16])
@pytest.mark.parametrize("directed", [False, True])
def test_every_combine_equals_1d(size, directed):
    """Each combine the blocks serve, masked and not, with empty receivers (isolated vertices) and
    float sums of every sign, equal to 1D's to the bit."""
    g, _root = _graph(5, directed)
    prog = g2pl.compile(SOURCE)
    for t in (0.5, 10.0):  # 10: no sender sends (empty mins, zero sums)
        _same(_run(prog, g, size, {"t": t}, "1d"), _run(prog, g, size, {"t": t}, "2d"))


def _three_ways(name: str, g, size: int) -> tuple:
    """A shipped program's results in 1D, in 2D, and in 2D with the blocks off (the routed exchange),
    checked equal."""
    path = ROOT / "programs" / f"{name}.g2pl"
    prog = g2pl.compile(path)
    args = program_args(path, 1)
    got = (_run(prog, g, size, args, "1d"), _run(prog, g, size, args, "2d"),
           _run(prog, g, size, args, "2d", blocks=False))
    _same(got[0], got[1])
    _same(got[0], got[2])
    return got


@pytest.mark.parametrize("name", ["bfs", "pagerank", "cc"])
def test_fewer_bytes_than_1d_at_16_ranks(name):
    """kron:14 on a 4 x 4 grid: fewer bytes than 1D (and than routing the 1D exchange), 6 partners
    per rank at most against 1D's 15."""
    one_d, two_d, routed = _three_ways(name, generate("kron:14"), 16)
    assert two_d.stats["bytes"] < one_d.stats["bytes"] < routed.stats["bytes"]
    assert max(r["peers"] for r in two_d.stats["per_rank"]) <= 6
    assert max(r["peers"] for r in one_d.stats["per_rank"]) == 15


#: tests/fuzzgen.py seeds whose programs have neighbourhood aggregations the blocks serve (found by
#: running seeds 0-900 on a 2 x 2 grid): or, and, count, float and int sums, min, max among them
FUZZ_SEEDS = (83, 87, 120, 156, 382, 453, 488, 568, 645, 793)


def test_generated_programs_equal_1d():
    """Random well-typed programs (tests/fuzzgen.py) on a 2 x 2 grid, on a graph with hubs: 2D's
    answers and messages are 1D's, and the blocks served every kind of combine they take (the
    generator changed if not: choose the seeds again)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import fuzzgen

    served: Counter = Counter()
    keep = edge_grid.EdgeGrid.combine

    def counting(self, spec, *a):
        served[spec.op] += 1
        return keep(self, spec, *a)

    edge_grid.EdgeGrid.combine = counting  # type: ignore[method-assign]
    try:
        for seed in FUZZ_SEEDS:
            gen = fuzzgen.generate(seed)
            tg = fuzzgen.random_graphs(seed, medium=True)[-1]
            args = gen.args_for(tg.graph, random.Random(seed))
            for opt in (2, 0):
                prog = g2pl.compile(gen.source, opt=opt)
                try:
                    one_d = _run(prog, tg.graph, 4, args, "1d")
                except G2PLError:  # a program that stops with an error (the same on every layout)
                    continue
                _same(one_d, _run(prog, tg.graph, 4, args, "2d"))
    finally:
        edge_grid.EdgeGrid.combine = keep  # type: ignore[method-assign]
    assert set(served) == {"sum", "min", "max", "or", "and", "count"}, served


def test_sparse_float_sums_and_bare_counts():
    """Brandes's float sums from a BFS frontier: running sums still +0 are not sent, so the blocks send
    far fewer bytes than routing (the pipeline sent every block row's sum: 2.0x 1D's bytes on this
    graph, now 1.0x).  k-core's `sum [ 1 | u <- nvals v, u in S ]` (a bare presence) stays with the
    routed exchange: the same bytes as with the blocks off."""
    g = generate("kron:12")
    _one_d, two_d, routed = _three_ways("brandes", g, 16)
    assert two_d.stats["bytes"] < 0.7 * routed.stats["bytes"]
    _one_d, two_d, routed = _three_ways("kcore", g, 16)
    assert two_d.stats["bytes"] == routed.stats["bytes"]
