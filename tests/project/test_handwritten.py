"""bench/handwritten.py's greedy matching and bench/libraries.py's edge lookup against the compiled
program, on graphs whose vertex indices are int32 but whose (src, dst) keys need int64: n above
46,341, so src * n overflows an int32 (the bench's hand-written matching failed every run on kron:18
and kron:20 that way)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import g2pl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import handwritten as H  # noqa: E402  (bench/handwritten.py)
import libraries as LIB  # noqa: E402  (bench/libraries.py)


@pytest.mark.parametrize("directed", [False, True])
def test_hand_written_matching_is_the_program_s_on_a_graph_needing_int64_keys(directed):
    g = g2pl.load_graph("er:60000:90000", seed=5, directed=directed)
    assert g.src.dtype == np.int32 and g.n * g.n > 2**31
    want = g2pl.compile_file(ROOT / "programs" / "matching.g2pl").run(g, {}).array("M", g)
    got = H.matching(g)
    assert got.dtype == bool and np.array_equal(got, want)
    u, v = g.src[want], g.dst[want]
    assert np.array_equal(LIB.edge_mask(g, v, u) if not directed else LIB.edge_mask(g, u, v), want)
