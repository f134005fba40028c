"""bench/edge_partition_model.py's counts against a direct count over every edge with Python sets."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import edge_partition_model as EPM  # noqa: E402  (bench/edge_partition_model.py)

from g2pl.runtime.grid import grid_shape  # noqa: E402


@pytest.mark.parametrize("P", [2, 4, 6, 9, 16])
def test_counts_match_a_direct_count(P):
    rng = np.random.default_rng(P)
    n = 300
    senders = rng.integers(0, n, 4000)
    receivers = rng.integers(0, n, 4000)
    R, C = grid_shape(P)

    def owner(x: int) -> int:
        return x * P // n

    one_d, routed, expand, fold = set(), 0, set(), set()
    for u, v in zip(senders.tolist(), receivers.tolist()):
        ou, ov = owner(u), owner(v)
        if ou != ov:
            one_d.add((u, ov))
        if ov // C != ou // C:
            expand.add((u, ov // C))  # to the rank of u's column in v's owner's row
        if ou % C != ov % C:
            fold.add((v, ou % C))  # the partial of the rank in v's row and u's owner's column
    for u, d in one_d:
        s = owner(u)
        routed += 2 if (s // C != d // C and s % C != d % C) else 1
    got = EPM.count(senders, receivers, n, P)
    assert got["1d"] == len(one_d)
    assert got["routed_2d"] == routed
    assert (got["expand"], got["fold"]) == (len(expand), len(fold))
    peers = {}
    for u, d in one_d:
        peers.setdefault(owner(u), set()).add(d)
    assert got["peers_1d"] == max(len(x) for x in peers.values())
