"""programs/cc_sv.g2pl (hooking and shortcutting with remote reads) against SciPy's connected
components, and the one-rank remote read it is built on (a gather through the ID lookup)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from oracles import from_edges, random_graph, vdict
from scipy.sparse.csgraph import connected_components

import g2pl
from g2pl.graph import load_graph

ROOT = Path(__file__).resolve().parents[2]
CC_PROGRAMS = ("cc", "cc_hub", "pjcc", "cc_sv")


def scipy_components(g) -> dict[int, int]:
    """Each vertex's original ID -> the smallest original ID of its component (SciPy, not networkx)."""
    ids = np.asarray(g.ids)
    A = sp.coo_matrix((np.ones(g.m), (np.asarray(g.src), np.asarray(g.dst))), shape=(g.n, g.n))
    k, lab = connected_components(A, directed=False)
    least = np.full(k, np.iinfo(np.int64).max)
    np.minimum.at(least, lab, ids)
    return dict(zip(ids.tolist(), least[lab].tolist()))


@pytest.fixture(scope="module")
def progs() -> dict[str, g2pl.Program]:
    return {p: g2pl.compile_file(ROOT / "programs" / f"{p}.g2pl") for p in CC_PROGRAMS}


@pytest.mark.parametrize("seed,n", [(7, 200), (8, 1500), (9, 4000)])
def test_cc_sv_vs_scipy_on_random_graphs(progs, seed, n):
    t = random_graph(seed, n)  # sparse shuffled IDs, 2-4 pieces, isolated vertices, loops, repeats
    want = scipy_components(t.g)
    for renumber in ("auto", "degree", "none"):
        got = vdict(progs["cc_sv"].run(t.g, renumber=renumber)["G"])
        assert got == want, renumber
        assert vdict(progs["cc_hub"].run(t.g, renumber=renumber)["C"]) == want, renumber


@pytest.mark.parametrize("spec", ["kron:12", "ws:3000:4:0.05", "er:2000:1500"])
def test_cc_programs_agree_on_generated_graphs(progs, spec):
    g = load_graph(spec, seed=3)
    want = scipy_components(g)
    for name, var in (("cc", "L"), ("cc_hub", "C"), ("pjcc", "P"), ("cc_sv", "G")):
        assert vdict(progs[name].run(g)[var]) == want, name


def test_cc_sv_optimisation_levels_agree():
    t = random_graph(31, 900, shapes=("dense", "tree", "cycle", "path"))
    outs = [g2pl.compile_file(ROOT / "programs" / "cc_sv.g2pl", opt=o).run(t.g).values for o in (0, 1, 2)]
    assert outs[0] == outs[1] == outs[2]


def test_cc_sv_on_corner_graphs(progs):
    for g in (from_edges([(5, 5)], isolated=[9]),  # a self-loop and an isolated vertex
              from_edges([(10**9, 3), (3, 77), (500, 501)]),  # a path through a large ID
              from_edges([(i, i + 1) for i in range(0, 400, 2)] + [(i, i + 3) for i in range(0, 400, 7)])):
        assert vdict(progs["cc_sv"].run(g)["G"]) == scipy_components(g)
        assert vdict(progs["cc_hub"].run(g)["C"]) == scipy_components(g)


REMOTE = """
main() {
  Next = { id + 1 | v <- V };
  A = { Next[Next[x]] | x <- V };
  B = { Next[id[x] - 1000000] | x <- V };
  C = { Next[-1] | x <- V };
  return A, B, C;
}
"""


@pytest.mark.parametrize("renumber", ["degree", "none"])
@pytest.mark.parametrize("dense", [False, True], ids=["gaps", "dense-ids"])
def test_one_rank_remote_reads_are_gathers_with_defaults(renumber, dense):
    """IDs that name no vertex (gaps, past either end, -1) read the default; the rest the value there.
    Dense IDs (0..n-1) take the lookup without a search, in ID order or renumbered by degree."""
    if dense:  # a hub (0) and a path: degree order differs from ID order
        g = from_edges([(0, k) for k in range(1, 8)] + [(k, k + 1) for k in range(8, 14)] + [(3, 9)])
    else:
        g = from_edges([(1, 2), (2, 3), (3, 4), (4, 1), (10, 11), (11, 12), (2, 10)], isolated=[20, 1000002])
    res = g2pl.compile(REMOTE).run(g, renumber=renumber)
    ids = set(np.asarray(g.ids).tolist())
    nxt = {v: v + 1 for v in ids}
    a, b, c = (vdict(res[k]) for k in "ABC")
    assert a == {v: (nxt[v + 1] if v + 1 in ids else 0) for v in ids}
    assert b == {v: (nxt[v - 1000000] if v - 1000000 in ids else 0) for v in ids}
    assert c == {v: 0 for v in ids}
