"""bench/gpu_model.py at a tiny scale (kron:10 -> 12): its counts against independent computations.

BFS level sizes against scipy.sparse.csgraph distances, the early-exit probes against a plain loop
over the rows, directions and messages against the compiled program's statistics (NumPy backend),
the device reads the model charges against those the strict CuPy stand-in counts, and the byte
totals of the scaled prediction are positive and consistent.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from functools import cache
from pathlib import Path

import numpy as np
import scipy.sparse as ssp
from scipy.sparse import csgraph

import g2pl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import gpu_model as GM  # noqa: E402  (bench/gpu_model.py)
import handwritten as H  # noqa: E402

SCALE, TARGET = 10, 12


@cache
def _run():
    return GM.run(SCALE, TARGET, GM.Device(), [SCALE - 1], log=lambda s: None)


@cache
def _part():
    """kron:10 as the runtime holds it (one rank, degree order) and the local root."""
    from g2pl.runtime.comm import SingleComm
    from g2pl.runtime.driver import renumbering, scatter_graph

    g = g2pl.load_graph(f"kron:{SCALE}", seed=GM.SEED)
    root = H.pick_root(g, GM.SEED)
    lg = scatter_graph(SingleComm(), g, renumbering(g, "auto"))
    local = int(lg.sorted_to_local[root]) if lg.order is not None else root
    return g, lg, local


def test_level_sizes_match_scipy_bfs_distances() -> None:
    _g, lg, root = _part()
    levels, level = GM.bfs_levels(lg.in_indptr, lg.in_nbr, root)
    n = lg.n
    A = ssp.csr_matrix((np.ones(len(lg.in_nbr)), lg.in_nbr, lg.in_indptr), shape=(n, n))
    dist = csgraph.shortest_path(A, unweighted=True, indices=root)
    want = np.where(np.isinf(dist), -1, dist).astype(np.int64)
    assert np.array_equal(level, want)
    depth = int(want.max())
    sizes = np.bincount(want[want >= 0], minlength=depth + 1)
    # superstep d sends from level d - 1: the deepest level finds nothing, then an empty frontier ends it
    assert [lv.nf for lv in levels] == [*sizes.tolist(), 0]
    assert [lv.found for lv in levels] == [*sizes[1:].tolist(), 0, 0]
    deg = np.diff(lg.in_indptr)
    for d, lv in enumerate(levels):
        assert lv.wf == int(deg[want == d].sum())
        assert lv.unvisited == int(np.count_nonzero((want < 0) | (want >= d + 1)))


def test_probes_match_a_loop_over_the_rows() -> None:
    _g, lg, root = _part()
    ptr, nbr = lg.in_indptr, lg.in_nbr
    levels, level = GM.bfs_levels(ptr, nbr, root)
    per = GM.SECTOR // nbr.dtype.itemsize
    pulled = 0
    for d, lv in enumerate(levels):
        if lv.push:
            assert lv.probes == 0
            continue
        pulled += 1
        in_f = level == d
        rows = np.flatnonzero((level < 0) | (level > d))
        probes, found, touched, longest = 0, 0, set(), 0
        for r in rows:
            p = 0
            for j in range(ptr[r], ptr[r + 1]):
                p += 1
                touched.add(j // per)
                if in_f[nbr[j]]:
                    found += 1
                    break
            probes += p
            longest = max(longest, p)
        assert (lv.probes, lv.found, lv.nbr_sectors, lv.max_probes) == (probes, found, len(touched), longest)
        assert lv.probes <= len(nbr) and lv.found <= lv.unvisited
    assert pulled >= 1  # kron:10 from this root pulls at least once


def test_directions_and_messages_match_the_compiled_program() -> None:
    g, _lg, _root = _part()
    sims, _preds, _local = _run()
    sim = sims[0]
    res = g2pl.compile_file(ROOT / "programs" / "bfs.g2pl").run(g, args={"root": sim.root}, backend="numpy")
    st = res.stats
    assert st["directions"] == {"push": sum(lv.push for lv in sim.levels),
                                "pull": sum(not lv.push for lv in sim.levels)}
    msgs = [s["messages"] for s in st["per_superstep"]]
    assert msgs[:len(sim.levels)] == [lv.wf for lv in sim.levels]
    assert st["supersteps"] == len(sim.levels) + 1  # and the final compute-only one


def test_device_reads_match_the_standin() -> None:
    """Every read back the model charges is one the CuPy backend makes (tests/strict_cupy counts them)."""
    spec = importlib.util.spec_from_file_location("strict_cupy_activate", ROOT / "tests" / "strict_cupy" / "activate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g, _lg, _root = _part()
    sims, _preds, local = _run()
    bfs = g2pl.compile_file(ROOT / "programs" / "bfs.g2pl")
    pr = g2pl.compile_file(ROOT / "programs" / "pagerank.g2pl")
    pr_args = {"iters": GM.ITERS, "damping": 0.85}
    with mod.standin():
        bfs.run(g, args={"root": sims[0].root}, backend="cupy")  # the device copy of the graph, once
        res = bfs.run(g, args={"root": sims[0].root}, backend="cupy")
        pr.run(g, args=pr_args, backend="cupy")
        res_pr = pr.run(g, args=pr_args, backend="cupy")
    assert res.stats["device"]["syncs"] == local.counted_syncs
    assert res_pr.stats["device"]["syncs"] == local.pr_counted_syncs


def test_prediction_is_consistent() -> None:
    sims, preds, local = _run()
    sim = sims[0]
    p = preds[SCALE]
    s = p.scaled
    assert s.scale == TARGET and s.n == 2**TARGET and len(s.levels) == len(sim.levels)
    assert s.m > sim.m and s.entries == 2 * s.m
    assert 0 < s.m_reached <= s.m
    for st in p.bfs + p.pr:
        assert st.dram() > 0 or all(k.launches == 0 for k in st.kernels) or st.label.startswith("level")
        for k in st.kernels:
            assert k.read >= 0 and k.write >= 0 and k.l2 >= 0 and k.gpu_time(GM.Device()) >= 0
    assert sum(st.dram() for st in p.bfs) > 0 and sum(st.dram() for st in p.pr) > 0
    for lv in s.levels:
        assert lv.probes <= s.entries and lv.wf <= s.entries and lv.nf <= s.n
    assert 0 < p.bfs_device < p.bfs_time and p.gteps > 0 and math.isfinite(p.gteps)
    assert 0 < p.pr_iter < p.pr_time and p.pr_rate_iter > 0
    # at least one DRAM byte per adjacency entry (the nbr array) each PageRank iteration
    it = next(st for st in p.pr if st.label.startswith("iteration"))
    assert it.dram() >= s.entries * s.nbr_bytes
    assert 0 <= sim.hits["l1"] <= sim.hits["l2"] <= 1 and sim.hits["l1_id"] <= sim.hits["l2_id"]
    assert sim.dangling == int(np.count_nonzero(np.diff(_part()[1].in_indptr) == 0))
    text = GM.report("python bench/gpu_model.py", TARGET, GM.Device(), sims, preds, local)
    assert "GTEPS" in text and f"kron:{TARGET}" in text
