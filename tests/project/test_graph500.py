"""bench/graph500.py's plumbing: its five validation checks accept bfs_parent.g2pl's trees and refuse
broken ones, and one configuration runs end to end (one rank, a few roots)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import graph500 as G5  # noqa: E402  (bench/graph500.py)

import g2pl  # noqa: E402


@pytest.fixture(scope="module")
def tree():
    g = g2pl.load_graph("kron:9", seed=4)
    deg = np.bincount(g.src, minlength=g.n) + np.bincount(g.dst, minlength=g.n)
    r = int(np.argmax(deg))
    res = g2pl.compile_file(ROOT / "programs" / "bfs_parent.g2pl").run(g, {"root": int(g.ids[r])})
    pids = res.array("Parent", g)
    parent = np.where(pids >= 0, g.id_to_index(np.maximum(pids, 0)), -1)
    return g, parent, r


def test_valid_tree_passes(tree):
    g, parent, r = tree
    assert G5.validate(g, parent, r) == []
    assert G5.traversed_edges(g, parent) > 0


def test_each_check_catches_its_fault(tree):
    g, parent, r = tree
    level = G5.levels_from_parents(parent, r)
    reached = np.flatnonzero((parent >= 0) & (np.arange(g.n) != r))
    deep = reached[np.argmax(level[reached])]
    bad = parent.copy()
    bad[deep] = -1  # a reached vertex left out: some edge leaves the tree, the tree misses a vertex
    assert any(m.startswith(("3", "4")) for m in G5.validate(g, bad, r))
    a, b = reached[:2]
    bad = parent.copy()
    bad[a], bad[b] = b, a  # a cycle
    assert any(m.startswith("1") for m in G5.validate(g, bad, r))
    bad = parent.copy()
    far = reached[level[reached] >= 2][0]
    bad[far] = r  # the root as parent of a vertex two or more levels down: no edge joins them
    assert any(m.startswith(("2", "5")) for m in G5.validate(g, bad, r))


def test_one_configuration_end_to_end():
    rec = G5.worker({"backend": "numpy", "np": 1, "scale": 8, "roots": 4, "seed": 2, "timeout": 60})
    assert rec["roots"] == 4 and rec["valid"] == 4
    assert rec["teps_min"] <= rec["teps_median"] <= rec["teps_max"]
    teps = [x["teps"] for x in rec["runs"]]
    assert rec["teps_harmonic_mean"] == pytest.approx(len(teps) / sum(1 / x for x in teps))
    # a harmonic mean lies between the extremes and below the arithmetic mean (not always below the median)
    assert rec["teps_min"] <= rec["teps_harmonic_mean"] <= sum(teps) / len(teps) * (1 + 1e-12)
    assert "| numpy | 1 | 4/4 |" in G5.report([rec], type("A", (), {"scale": 8, "seed": 2})(), "abc")
