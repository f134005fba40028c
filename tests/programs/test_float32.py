"""`float32(x)`: float(x) rounded to single precision, and the 4-byte messages it allows.

The function's values (rounding, the range's ends, NaN, a soft name); the pack pass giving a
sender-side `float32(...)` message value a 4-byte field (and only at -O2); the same answers at every
optimization level, on any number of ranks, with and without numba; and a rank's bytes sent halved for
PageRank's shares (tests/runtime/test_mpi.py).  The kernels' sums of 4-byte values against the 8-byte sums of
the same values: tests/runtime/test_row_reduce.py, test_column_blocks.py, test_raw_kernels.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import g2pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from thread_comm import run_program  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PR32 = ROOT / "programs" / "pagerank32.g2pl"

SCALARS = """
f32() {
  a = float32(0.1);
  b = float32(16777217);
  c = float32(1e39);
  d = float32(-1e39);
  e = float32(0.0 / 0.0);
  f = float32(true);
  g = float32(3.4028235e38);
  h = float32(1e-46);
  float32 = 2;
  return a, b, c, d, e, f, g, h, float32;
}
"""


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_float32_rounds_to_single_precision() -> None:
    r = g2pl.compile(SCALARS).run(g2pl.load_graph("kron:4"))
    assert r["a"] == float(np.float32(0.1)) == 0.10000000149011612
    assert r["b"] == 16777216.0  # 2^24 + 1: halfway, to even
    assert (r["c"], r["d"]) == ("inf", "-inf")  # beyond single precision's range
    assert r["e"] == "nan"
    assert r["f"] == 1.0
    assert r["g"] == float(np.finfo(np.float32).max)  # (3.4028235677973366e38, halfway to 2^128, is inf)
    assert r["h"] == 0.0  # below half the smallest subnormal
    assert r["float32"] == 2  # a soft name: still a variable


def test_float32_is_elementwise_and_typed_float() -> None:
    src = """p() {
      X = { float32(id) / 3.0 | v <- V };
      Y : vertex<float> = { float32(X[v]) | v <- V };
      return Y;
    }"""
    g = g2pl.load_graph("kron:6")
    got = g2pl.compile(src).run(g).array("Y")
    want = (np.asarray(g.ids).astype(np.float32).astype(np.float64) / 3.0).astype(np.float32).astype(np.float64)
    assert _bits(got) == _bits(want)


def test_float32_takes_one_argument() -> None:
    with pytest.raises(g2pl.G2PLError, match="`float32` takes 1 argument, but 2 were given"):
        g2pl.compile("p() { x = float32(1.0, 2.0); return x; }")


# ---------------------------------------------------------------- the 4-byte message (pack)


def test_pack_gives_a_float32_message_its_4_bytes() -> None:
    """At -O2 the sender computes the share and sends it as float32 (32 bits where pagerank.g2pl's takes
    64); without pack, or at -O0, the record is the program's and `float32` is computed where it is read."""
    plan = g2pl.compile(PR32).plan_text()
    assert "record $4.value:float32 = 32 bits" in plan
    assert "record $4.value:float = 64 bits" in g2pl.compile(ROOT / "programs" / "pagerank.g2pl").plan_text()
    code = g2pl.compile(PR32).python()
    assert "('$4.value', 'float32')" in code and "ops.narrow32(xp.true_divide(v_PR, v_OutDeg))" in code
    for unpacked in (g2pl.compile(PR32, disable=("pack",)), g2pl.compile(PR32, opt=0)):
        assert "float32'" not in unpacked.python() and "narrow32" not in unpacked.python()


@pytest.mark.parametrize("numba", ["0", "1"])
def test_the_same_bits_at_every_level_and_rank_count(monkeypatch, numba) -> None:
    """pagerank32 at -O0, -O2 and -O2 without pack, on 1, 2 and 3 ranks (threads in one process), with and
    without the compiled kernels: one answer, to the bit."""
    monkeypatch.setenv("G2PL_NUMBA", numba)
    monkeypatch.setenv("G2PL_THREADS", "1")
    g = g2pl.load_graph("kron:10", directed=True)
    args = {"iters": 8, "damping": 0.85}
    progs = [g2pl.compile(PR32), g2pl.compile(PR32, opt=0), g2pl.compile(PR32, disable=("pack",))]
    want = _bits(progs[0].run(g, args).array("PR"))
    for prog in progs:
        assert _bits(prog.run(g, args).array("PR")) == want
        for size in (2, 3):
            assert _bits(run_program(prog, g, size, args).array("PR")) == want


def test_a_narrowed_value_is_widened_for_other_aggregations() -> None:
    """min, max and avg of float32 messages (sent in 4 bytes) give float results equal to those of the
    same values as float, pulled or pushed."""
    src = """p(r: vid) {
      X = { float32(id / 7.0) | v <- V };
      Lo = { min [ float32(X[u] * 3.0) | u <- nvals v ] | v <- V };
      Hi = { max [ float32(X[u] * 3.0) | u <- nvals v ] | v <- V };
      Av = { avg [ float32(X[u] * 3.0) | u <- nvals v ] | v <- V };
      Sm = { sum [ float32(X[u] * 3.0) | u <- nvals v, id[u] < r ] | v <- V };
      return Lo, Hi, Av, Sm;
    }"""
    g = g2pl.load_graph("kron:9")
    args = {"r": int(np.asarray(g.ids)[40])}
    a, b = g2pl.compile(src).run(g, args), g2pl.compile(src, opt=0).run(g, args)
    for name in ("Lo", "Hi", "Av", "Sm"):
        assert a.array(name).dtype == np.float64 and _bits(a.array(name)) == _bits(b.array(name)), name
    assert run_program(g2pl.compile(src), g, 3, args).values == a.values
