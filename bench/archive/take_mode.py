"""`np.take` modes on the min-label gather: every adjacency entry's int32 label, in blocks.

The gathers of `Segments.gather_reduce` (kernels.py) take blocks of the neighbour array (int32 indices,
all valid) from an int32 table of one value per vertex.  "clip" and "wrap" both write the output
directly; "clip" clamps every index, "wrap" tests it with a branch.  This times one full pass per mode
(interleaved, CPU time, medians) and checks that they gather the same values.

    python bench/archive/take_mode.py [--graph kron:20] [--repeat 11]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the harness

import harness  # noqa: E402

import g2pl  # noqa: E402
from g2pl.runtime.kernels import Segments  # noqa: E402


def main() -> None:
    ap = harness.parser(__doc__, out=False, repeat=11)
    ap.add_argument("--graph", default="kron:20")
    a = ap.parse_args()
    g = g2pl.load_graph(a.graph)
    nbr = np.asarray(g.out_nbr)
    table = np.random.default_rng(0).integers(0, 2**30, g.n).astype(np.int32)
    block = Segments.BLOCK
    outs = {m: np.empty(len(nbr), dtype=np.int32) for m in ("clip", "wrap")}

    def one(mode: str) -> float:
        out = outs[mode]
        c0 = time.process_time()
        for lo in range(0, len(nbr), block):
            hi = min(lo + block, len(nbr))
            np.take(table, nbr[lo:hi], out=out[lo:hi], mode=mode)
        return time.process_time() - c0

    runs = harness.interleave({"wrap": lambda: one("wrap"), "clip": lambda: one("clip")}, a.repeat)
    assert np.array_equal(outs["clip"], outs["wrap"]) and np.array_equal(outs["wrap"], table[nbr])
    med = harness.medians(runs)
    print(f"{a.graph}: {len(nbr):,} entries (indices {nbr.dtype}), blocks of {block:,}; CPU s, medians of {a.repeat}")
    for m, t in med.items():
        print(f"  {m}: {t:.4f}  ({t / len(nbr) * 1e9:.2f} ns/entry)")
    print(f"  wrap/clip: {med['wrap'] / med['clip']:.2f}")


if __name__ == "__main__":
    main()
