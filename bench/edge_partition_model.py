"""Values moved by one dense neighbourhood exchange under three layouts, counted on a real graph.

For P ranks (`--ranks`, default 4,16,64) on `--graph` (default kron:20), with vertices cut into P
contiguous blocks of indices as the runtime cuts them (`--partition 1d`), this counts, for one
exchange in which every vertex sends its value along every edge (PageRank's superstep, a dense BFS or
CC step):

* **1d**: what the runtime sends today: each vertex's value once to every other rank owning one of
  its neighbours (its mirrors).  Validated against the runtime: kron:20 at P = 16 gives 3,990,394
  values, and `bench/weak_scaling.py` measured 319,309,360 bytes for 10 PageRank iterations there
  (8-byte values, 10 exchanges: 3.99M each).
* **routed 2d**: the 1D exchange routed over an R x C grid of the ranks (g2pl/runtime/grid.py, which
  `--partition 2d` still uses for every exchange but neighbourhood aggregations), a row hop then a
  column hop; a value whose destination differs from its owner in both row and column travels twice.
* **edge-partitioned 2d**: the layout of the 2D-partitioned BFS papers, rank (i, j) holding the edges
  whose receiver's owner is in grid row i and whose sender's owner is in grid column j.  Expand: each
  vertex's value to the ranks of its grid column that hold one of its edges; fold: each rank's partial
  result for a receiver to the receiver's owner, along the grid row.  The runtime's `--partition 2d`
  runs neighbourhood aggregations this way (g2pl/runtime/edge_grid.py) with the roles of rows and
  columns exchanged (senders by grid row, whose ranks hold one contiguous range of IDs, so a float
  sum can fold in sender order and keep 1D's bits); its measured bytes are in docs/performance.md.

Peers: the most ranks any one rank sends to.  Counts only (no run); seconds per graph.

    python bench/edge_partition_model.py [--graph kron:20] [--ranks 4,16,64] [--quick]

Output: bench/results/edge_partition_model.{md,json} (..._quick.* with --quick).
"""

from __future__ import annotations

import sys

import harness
import numpy as np

import g2pl
from g2pl.runtime.grid import grid_shape


def _distinct(rows: np.ndarray, groups: np.ndarray, ngroups: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (row, group) pairs among the entries, as two arrays."""
    key = np.unique(rows.astype(np.int64) * ngroups + groups)
    return key // ngroups, key % ngroups


def count(senders: np.ndarray, receivers: np.ndarray, n: int, P: int) -> dict:
    """Values moved and peers per rank for one dense exchange along the (sender, receiver) entries."""
    R, C = grid_shape(P)
    owner = lambda x: x * P // n  # noqa: E731 - the runtime's contiguous blocks
    # 1d: a sender's value to each other rank owning one of its receivers
    u, dest = _distinct(senders, owner(receivers), P)
    src = owner(u)
    away = dest != src
    one_d = int(away.sum())
    peers_1d = int(np.bincount(src[away] * P + dest[away], minlength=P * P).reshape(P, P).astype(bool).sum(1).max())
    # routed 2d: a copy whose destination changes both row and column crosses twice
    both = (src // C != dest // C) & (src % C != dest % C)
    routed = one_d + int((both & away).sum())
    # edge-partitioned 2d: expand along grid columns, fold along grid rows
    u2, row_group = _distinct(senders, owner(receivers) // C, R)  # rows of u's column holding u's edges
    expand = int((row_group != owner(u2) // C).sum())
    v2, col_group = _distinct(receivers, owner(senders) % C, C)  # columns of v's row holding v's edges
    fold = int((col_group != owner(v2) % C).sum())
    return {"P": P, "grid": f"{R} x {C}", "1d": one_d, "peers_1d": peers_1d, "routed_2d": routed,
            "peers_routed": (R - 1) + (C - 1), "edge_2d": expand + fold, "expand": expand, "fold": fold,
            "peers_edge_2d": (R - 1) + (C - 1)}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:14, 4 and 16 ranks", seed=1)
    ap.add_argument("--graph", default="kron:20")
    ap.add_argument("--ranks", default="4,16,64")
    a = ap.parse_args(argv)
    if a.quick:
        a.graph, a.ranks = "kron:14", "4,16"
    g = g2pl.load_graph(a.graph, seed=a.seed)
    indptr = np.asarray(g.in_indptr)
    receivers = np.repeat(np.arange(g.n, dtype=np.int64), np.diff(indptr))
    senders = np.asarray(g.in_nbr).astype(np.int64)
    rows = [count(senders, receivers, g.n, int(p)) for p in a.ranks.split(",")]
    res = {"graph": a.graph, "n": int(g.n), "entries": int(len(senders)), "rows": rows,
           "machine": harness.machine(), "commit": harness.git_commit(), "command": harness.command(__file__, argv)}
    L = [f"# Values moved by one dense exchange: {a.graph}", "",
         f"n = {g.n:,}, adjacency entries = {len(senders):,}; vertices in contiguous blocks of indices; commit "
         f"{res['commit']}. Values (multiply by the value's bytes); peers: the most ranks one rank sends to.", "",
         "| P | grid | 1d | peers | routed 2d | / 1d | peers | edge-partitioned 2d (expand + fold) | / 1d | peers |",
         "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        L.append(f"| {r['P']} | {r['grid']} | {r['1d']:,} | {r['peers_1d']} | {r['routed_2d']:,} | "
                 f"{r['routed_2d'] / r['1d']:.2f} | {r['peers_routed']} | {r['edge_2d']:,} ({r['expand']:,} + "
                 f"{r['fold']:,}) | {r['edge_2d'] / r['1d']:.2f} | {r['peers_edge_2d']} |")
    L += ["", f"Command: `{res['command']}`"]
    harness.publish(a.out, harness.stem("edge_partition_model", a.quick), L, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
