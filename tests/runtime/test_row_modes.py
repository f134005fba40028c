"""The compiled per-row `mode` (kernels.row_modes): the answers of array_kernels.group_mode, the sort it
replaces, on every kind of row, so whether numba runs never changes an answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import g2pl
from g2pl.graph.graph import build_graph
from g2pl.runtime import array_kernels as AK
from g2pl.runtime import cpu_kernels
from g2pl.runtime import kernels as K

needs_numba = pytest.mark.skipif(not cpu_kernels.available(), reason="numba not installed")

ROOT = Path(__file__).resolve().parents[2]


def _rows(seed: int, distinct: int, rows: int = 400):
    """A CSR of empty, one-entry, short and long rows (one of 3,000 entries) over `distinct` values."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 14, rows)
    lens[rng.choice(rows, 40, replace=False)] = 0
    lens[rng.choice(rows, 40, replace=False)] = 1
    lens[7] = 3000
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    pool = rng.integers(-2**62, 2**62, distinct)  # negative and large values hash like any other
    pool[0] = -1
    return indptr, pool[rng.integers(0, distinct, int(indptr[-1]))], rng


@needs_numba
@pytest.mark.parametrize("distinct", [1, 2, 7, 100, 100_000])
@pytest.mark.parametrize("threads", [1, 2])
def test_row_modes_are_group_modes(distinct, threads, monkeypatch):
    monkeypatch.setenv("G2PL_NUMBA", "1")
    monkeypatch.setenv("G2PL_THREADS", str(threads))
    indptr, vals, rng = _rows(distinct, distinct)
    seg = K.Segments(indptr)
    for mask in (None, rng.random(len(vals)) < 0.5, np.zeros(len(vals), dtype=bool)):
        for elem in ("int", "vid"):
            want = AK.group_mode(K._OPS, seg.owner, vals, mask, seg.n, elem)
            got = K.row_modes(indptr, vals, mask, elem)
            assert got is not None
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(K.seg_reduce(seg, "mode", vals, mask, elem), want)


@needs_numba
def test_row_modes_ties_go_to_the_smaller_value(monkeypatch):
    monkeypatch.setenv("G2PL_NUMBA", "1")
    rows = [[5, 3, 5, 3], [9, -2, 9, -2, 7], [4], [], [2, 2, 1, 1, 1, 2], [True, False, False, True]]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    vals = np.array([int(x) for r in rows for x in r], dtype=np.int64)
    assert K.row_modes(indptr, vals, None, "vid").tolist() == [3, -2, 4, -1, 1, 0]
    bools = K.seg_reduce(K.Segments(indptr[-3:] - indptr[-3]), "mode", vals[indptr[-3]:].astype(bool), None, "bool")
    assert bools.dtype == bool and bools.tolist() == [True, False]


def _labels(program: str, numba: str, monkeypatch, g) -> str:
    monkeypatch.setenv("G2PL_NUMBA", numba)
    prog = g2pl.compile_file(ROOT / program)
    args = {"iterations": 6} if "cdlp" in program else {"rounds": 6}
    return json.dumps(prog.run(g, args).output(), sort_keys=True)


@needs_numba
@pytest.mark.parametrize("directed", [False, True])
def test_label_propagation_programs_agree_with_numba_and_without(directed, monkeypatch):
    """CDLP's `mode` over `allnvals` and lpa.g2pl's over `nvals`: the same labels by either path, on a
    graph of scattered IDs and several components."""
    rng = np.random.default_rng(4 + directed)
    ids = np.sort(rng.choice(10**12, 900, replace=False))
    u, v = rng.integers(0, 600, 5000), rng.integers(0, 600, 5000)  # 300 vertices left isolated
    g = build_graph(ids[u], ids[v], None, directed=directed, extra_ids=ids, name="row-modes-test")
    for program in ("programs/graphalytics/cdlp.g2pl", "programs/lpa.g2pl"):
        assert _labels(program, "1", monkeypatch, g) == _labels(program, "0", monkeypatch, g)


@needs_numba
@pytest.mark.parametrize("distinct", [3, 5000])
def test_pull_modes_read_through_the_senders(distinct, monkeypatch):
    """`pull_modes` reads each entry's value and flag at its sender: the modes of the gathered entries."""
    monkeypatch.setenv("G2PL_NUMBA", "1")
    indptr, _, rng = _rows(distinct + 1, distinct)
    senders = 700
    nbr = rng.integers(0, senders, int(indptr[-1])).astype(np.int32)
    x = rng.integers(-distinct, distinct, senders)
    seg = K.Segments(indptr)
    for sent in (None, rng.random(senders) < 0.3):
        want = AK.group_mode(K._OPS, seg.owner, x[nbr], None if sent is None else sent[nbr], seg.n, "vid")
        np.testing.assert_array_equal(K.pull_modes(indptr, nbr, x, sent, "vid"), want)
