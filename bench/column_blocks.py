"""Sums over a rank's in-adjacency by column blocks (g2pl/runtime/column_blocks.py) against the
row-at-a-time kernel (kernels.row_reduce), one thread, on the part PageRank pulls over.

The graph is partitioned as `g2pl run` does on one rank (degree renumbering), and x is a random
float64 vector over its senders: what PageRank's pull reads every iteration.  Every block size in
--bits is built once (its build time reported), then each side runs once per repeat, the order
rotated, and the report gives the best and the median of the repeats.  Every result is checked to
have the row kernel's bits.

    python bench/column_blocks.py [--graph kron:20] [--repeat 15] [--bits 16,17,18]

Output: bench/results/column_blocks.{md,json} (column_blocks_quick.* with --quick).
"""

from __future__ import annotations

import os
import sys
import time

import harness
import numpy as np

os.environ.setdefault("G2PL_NUMBA", "1")

import g2pl  # noqa: E402
from g2pl.runtime import column_blocks as CB  # noqa: E402
from g2pl.runtime import kernels as K  # noqa: E402
from g2pl.runtime.partition import partition  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:16, 3 repeats", repeat=15, seed=1)
    ap.add_argument("--graph", default="kron:20")
    ap.add_argument("--bits", default="16,17,18")
    a = ap.parse_args(argv)
    if a.quick:
        a.graph, a.repeat = "kron:16", 3
    g = g2pl.load_graph(a.graph, seed=a.seed)
    lg = partition(g, 1, "degree")[0]
    indptr, cols, ids = lg.in_indptr, lg.in_nbr, lg.ext_ids
    x = np.random.default_rng(a.seed).random(len(ids))
    want = K.row_reduce("sum", indptr, cols, x, force=True, nthreads=1)
    builds, blocks = {}, {}
    for bits in (int(b) for b in a.bits.split(",")):
        CB.BLOCK_BITS = bits
        cb = CB.ColumnBlocks(indptr, cols, ids)
        if not cb.usable:
            continue
        t0 = time.perf_counter()
        cb._built = cb._build()
        builds[bits] = time.perf_counter() - t0
        blocks[bits] = cb
    print(f"{a.graph}: n={g.n:,}, entries={len(cols):,}", file=sys.stderr)

    def blocked(bits: int) -> float:
        CB.BLOCK_BITS, CB.BUILD_AFTER, CB.TABLE_BYTES = bits, 0, 0
        t0 = time.perf_counter()
        got = blocks[bits].reduce("sum", x, nthreads=1)
        t = time.perf_counter() - t0
        assert got is not None and np.array_equal(got.view(np.int64), want.view(np.int64))
        return t

    def rows() -> float:
        t0 = time.perf_counter()
        K.row_reduce("sum", indptr, cols, x, force=True, nthreads=1)
        return time.perf_counter() - t0

    jobs = {"rows": rows, **{f"blocks {b}": (lambda b=b: blocked(b)) for b in blocks}}
    runs = harness.interleave(jobs, a.repeat, warmup=1)
    res = {"graph": a.graph, "n": int(g.n), "entries": len(cols), "repeat": a.repeat, "machine": harness.machine(),
           "commit": harness.git_commit(), "command": harness.command(__file__, argv), "builds": builds,
           "pairs": {b: len(cb._built[1]) for b, cb in blocks.items()}, "runs": runs}
    m = res["machine"]
    L = [f"# Column-blocked sums vs the row kernel (one thread): {a.graph}", "",
         f"n = {g.n:,}, {len(cols):,} in-adjacency entries; {a.repeat} interleaved repeats. "
         f"Machine: {harness.describe(m)}; commit {res['commit']}.", "",
         "| pass | (row, block) pairs | build (s) | best (ms) | median (ms) | median / rows |",
         "|---|---:|---:|---:|---:|---:|"]
    base = harness.median(runs["rows"])
    for k, ts in runs.items():
        bits = int(k.split()[1]) if k != "rows" else None
        pairs = f"{res['pairs'][bits]:,}" if bits else "-"
        build = f"{builds[bits]:.3f}" if bits else "-"
        L.append(f"| {k} | {pairs} | {build} | {min(ts) * 1e3:.1f} | {harness.median(ts) * 1e3:.1f} | "
                 f"{harness.median(ts) / base:.2f} |")
    harness.publish(a.out, harness.stem("column_blocks", a.quick), L, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
