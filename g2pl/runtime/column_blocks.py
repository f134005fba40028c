"""A CSR's entries regrouped by blocks of columns, for sums, minima and maxima over a large adjacency.

A pull reads x[col] for every entry, at random over all senders.  When x is larger than the core's
cache (8 MiB of float64 for a million senders), most reads miss it: kron:20's PageRank spends 90% of
its time there.  Grouping the entries by blocks of 2**BLOCK_BITS columns, and reducing block by block,
keeps one block of x (2 MiB) near the core while it is read.  On a 2-core AMD EPYC VM, one thread, the
kron:20 sum's median went from 133 ms to 83 ms (0.62x; blocks built in 0.37 s; bench/column_blocks.py);
on a host of the same VM type with a faster memory system, and the row kernel's reads unsigned (no
test for a negative index per entry), the row kernel takes 25.6 ms and the blocks 32.1 ms (1.25x).

Each row is still reduced in its own order, so the results have the same bits as the row-at-a-time
pass: a row's entries are in its senders' original-ID order (partition.py keeps the global
neighbour order), and blocks are ranges of that same order (senders ranked by original ID, x taken
into that order once per call), so block b's entries of a row all come before block b + 1's; a row's
running value is kept in `out` between blocks.  Where some row's entries are not in that order (a
part built otherwise), `reduce` declines and the caller's pass serves.

Building the blocks costs about five reductions' time, so it happens on the sixth large reduction
over the same adjacency (BUILD_AFTER), and the blocks live as long as the adjacency (the partition
cache keeps it between runs) if they pay: whether the cache holds x well enough without them depends
on the machine (above), so the first TRIALS reductions by blocks are timed against the best of the row
kernel's on the same adjacency, and blocks no faster are dropped for good (the same bits either
way).  The blocks copy the column indices (4 bytes per entry) plus 12 bytes per (row, block) pair;
they are not built where that could take more than half the memory left.
"""

from __future__ import annotations

import math
import time

import numpy as np

from g2pl.graph.memory import available_memory
from g2pl.runtime import cpu_kernels
from g2pl.runtime.values import sum_dtype

#: columns per block: 2**18 (2 MiB of 8-byte values); in bench/column_blocks.py's sweep on kron:20 smaller
#: blocks were slower (0.67x the row kernel at 2**17, 0.76x at 2**16 against 0.62x: more (row, block) pairs)
BLOCK_BITS = 18

#: tables of up to this many bytes are read about as fast without blocks (kron:20's CC pulls 4 MiB of
#: int32 labels: 0.28-0.37 s a run either way, where PageRank's 8 MiB of float64 gains a quarter)
TABLE_BYTES = 4 << 20

#: reductions the row-at-a-time pass serves before the blocks are built: building costs about five to
#: seven of them (kron:20: 0.4 s against 83 ms blocked on one host, 0.18 s against 26 ms by rows on
#: another), so blocks are built once the passes without them have cost about as much (the ski-rental
#: rule: a run never pays much more than twice what it would with the best choice made in advance); a
#: short run does not build blocks it would hardly use, a long one (or the next run on a cached graph
#: part) uses them
BUILD_AFTER = 5

#: reductions by blocks timed, after the build, against the row kernel's best time before it
TRIALS = 2

#: entries whose column ranks `ColumnBlocks._build` gathers at a time (16 MiB of int32)
CHUNK = 1 << 22

def _gather(table, idx, lo, hi, out):  # pragma: no cover (compiled)
    """out[:hi - lo] = table[idx[lo:hi]]: twice np.take's speed on int32 indices (which it widens)."""
    for k in range(lo, hi):
        out[np.uint64(k - lo)] = table[np.uint64(idx[np.uint64(k)])]


def _count(indptr, rows, ranked, bits, entries, pairs):  # pragma: no cover (compiled)
    """Entries and (row, block) pairs per block over rows rows[0] to rows[1] (`ranked`: their entries'
    column ranks); False (and stop) at a row not in rank order."""
    base = indptr[rows[0]]
    for r in range(rows[0], rows[1]):
        prev = -1
        last = -1
        for k in range(indptr[r] - base, indptr[r + 1] - base):
            c = ranked[k]
            if c < prev:
                return False
            prev = c
            b = c >> bits
            entries[b] += 1
            if b != last:
                pairs[b] += 1
                last = b
    return True


def _fill(indptr, rows, ranked, bits, at_entry, at_pair, prow, pptr, bcols):  # pragma: no cover (compiled)
    """Each row's run of entries in block b appended to block b: the pair (row, start) and the ranks
    (rows rows[0] to rows[1], as `_count`)."""
    base = indptr[rows[0]]
    for r in range(rows[0], rows[1]):
        last = -1
        pos = 0  # where the run being copied goes (kept in a register, stored back at its end)
        for k in range(indptr[r] - base, indptr[r + 1] - base):
            c = ranked[k]
            b = c >> bits
            if b != last:
                if last >= 0:
                    at_entry[last] = pos
                pos = at_entry[b]
                i = at_pair[b]
                prow[i] = r
                pptr[i] = pos
                at_pair[b] = i + 1
                last = b
            bcols[pos] = c
            pos += 1
        if last >= 0:
            at_entry[last] = pos


def _sums(starts, prow, pptr, bcols, x, out):  # pragma: no cover (compiled)
    """out[r] += x[c] over each pair's entries, block after block: out holds +0 before the first
    block, so each row adds from +0 in order.  A block's pairs are taken two at a time, from its two
    halves: two rows' additions, independent, overlap (a row's own wait on its previous addition, 3-4
    cycles each, is much of a pass whose reads hit the cache)."""
    for b in range(len(starts) - 1):
        lo, hi = starts[b], starts[b + 1]
        mid = (lo + hi) // 2
        for t in range(mid - lo):
            i, j = lo + t, mid + t
            r1, r2 = prow[i], prow[j]
            s1, s2 = out[r1], out[r2]
            k1, e1, k2, e2 = pptr[i], pptr[i + 1], pptr[j], pptr[j + 1]
            while k1 < e1 and k2 < e2:
                s1 += x[np.uint64(bcols[np.uint64(k1)])]
                s2 += x[np.uint64(bcols[np.uint64(k2)])]
                k1 += 1
                k2 += 1
            for k in range(k1, e1):
                s1 += x[np.uint64(bcols[np.uint64(k)])]
            for k in range(k2, e2):
                s2 += x[np.uint64(bcols[np.uint64(k)])]
            out[r1] = s1
            out[r2] = s2
        for i in range(lo + 2 * (mid - lo), hi):  # (an odd count: the last pair)
            r = prow[i]
            s = out[r]
            for k in range(pptr[i], pptr[i + 1]):
                s += x[np.uint64(bcols[np.uint64(k)])]
            out[r] = s


def _extremes(starts, prow, pptr, bcols, x, out, seen, most):  # pragma: no cover (compiled)
    """The least (greatest where `most`) x[c] per row, NaN propagating as np.minimum's does (as
    kernels._row_extreme, in the same order): a row's first entry starts it, `seen` marks rows begun."""
    for i in range(starts[-1]):
        r = prow[i]
        k0 = pptr[i]
        if seen[r]:
            s = out[r]
        else:
            s = x[np.uint64(bcols[np.uint64(k0)])]
            k0 += 1
            seen[r] = True
        for k in range(k0, pptr[i + 1]):
            v = x[np.uint64(bcols[np.uint64(k)])]
            if (v > s if most else v < s) or v != v:
                s = v
        out[r] = s


class ColumnBlocks:
    """The entries of the CSR (`indptr`, `cols`) regrouped by blocks of senders in `order` (each
    column's original ID), built by the `reduce` after the first BUILD_AFTER that ask for them."""

    def __init__(self, indptr: np.ndarray, cols: np.ndarray, order: np.ndarray) -> None:
        self.indptr, self.cols, self.order = indptr, cols, order
        self.asked = 0
        self.usable = len(order) > (2 << BLOCK_BITS) and len(order) < 2**31 and len(cols) >= len(order)
        self._built: tuple | None = None
        self.rows_best = math.inf  # the row kernel's best one-thread time here (`rows_took`)
        self.blocks_times: list[float] = []  # the first TRIALS reductions by blocks

    def rows_took(self, seconds: float) -> None:
        """The row kernel served a one-thread reduction over these entries in `seconds`."""
        self.rows_best = min(self.rows_best, seconds)

    def reduce(self, op: str, x: np.ndarray, fill=0, nthreads: int | None = None) -> np.ndarray | None:
        """Per row, `op` ("sum", "min", "max") of x[cols[k]] over its entries, the bits of
        kernels.row_reduce's; None where the blocks do not serve: on several threads (`nthreads`,
        default cpu_kernels.threads(): the row kernel's threads already wait on their misses side by
        side, and the blocks' serial share, taking x into ID order, costs more than they save), too few
        columns, x within TABLE_BYTES, a row out of order, too little memory left for them, the first
        BUILD_AFTER calls, numba absent (see kernels.row_reduce)."""
        if not self.usable or op not in ("sum", "min", "max") or x.nbytes <= TABLE_BYTES \
                or (cpu_kernels.threads() if nthreads is None else nthreads) > 1 or not cpu_kernels.use(len(self.cols)):
            return None
        self.asked += 1
        if self._built is None:
            if self.asked <= BUILD_AFTER:
                return None
            self._built = self._build()
            if self._built is None:
                self.usable = False
                return None
        t0 = time.perf_counter()
        out = self._reduce(op, x, fill)
        if len(self.blocks_times) < TRIALS:
            self.blocks_times.append(time.perf_counter() - t0)
            if len(self.blocks_times) == TRIALS and min(self.blocks_times) >= self.rows_best:
                self.usable, self._built = False, None  # no faster here: the row kernel serves from now on
        return out

    def _reduce(self, op: str, x: np.ndarray, fill) -> np.ndarray:
        assert self._built is not None
        perm, prow, pptr, bcols, starts = self._built
        xs = x
        if perm is not None:  # x in ID order (compiled: twice np.take's speed)
            xs = np.empty_like(x)
            cpu_kernels._jit(_gather)(x, perm, 0, len(perm), xs)
        n = len(self.indptr) - 1
        if op == "sum":
            out = np.zeros(n, dtype=sum_dtype(x.dtype))
            cpu_kernels._jit(_sums)(starts, prow, pptr, bcols, xs, out)
        else:
            out = np.full(n, fill, dtype=x.dtype)
            cpu_kernels._jit(_extremes)(starts, prow, pptr, bcols, xs, out, np.zeros(n, dtype=np.bool_), op == "max")
        return out

    def _build(self) -> tuple | None:
        """(perm, prow, pptr, bcols, starts), or None where a row is not in `order` or the blocks could
        take more than half the memory still available: rank the columns
        by `order`, check every row is in rank order, and lay the entries out by
        block: a counting sort, two passes over the entries, each over chunks of rows whose entries'
        ranks are gathered first (a gather's independent loads run several at a time, where a pass that
        looked each one up would wait for it; the chunks bound the temporary)."""
        order, indptr, cols = self.order, self.indptr, self.cols
        nb = ((len(order) - 1) >> BLOCK_BITS) + 1
        need = 4 * len(cols) + 12 * min(len(cols), (len(indptr) - 1) * nb)  # the copy and the pairs, at most
        free = available_memory()
        if free is not None and 2 * need > free:  # (blocks are a speed-up: never what runs the machine out)
            return None
        ascending = bool(np.all(order[1:] >= order[:-1]))
        perm = None if ascending else np.argsort(order, kind="stable").astype(np.int32)
        rank = np.arange(len(order), dtype=np.int32)
        if perm is not None:
            rank[perm] = rank.copy()
        n = len(indptr) - 1
        cuts = np.unique(np.append(np.searchsorted(indptr, np.arange(0, int(indptr[-1]), CHUNK), side="right") - 1,
                                   n)).clip(0, n)
        chunks = [np.array([a, b], dtype=np.int64) for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist())]

        buf = np.empty(min(max(int(np.diff(indptr[cuts]).max(initial=0)), 1), len(cols)), dtype=np.int32)
        gather = cpu_kernels._jit(_gather)

        def ranked(rows: np.ndarray) -> np.ndarray:
            lo, hi = int(indptr[rows[0]]), int(indptr[rows[1]])
            gather(rank, cols, lo, hi, buf)
            return buf[:hi - lo]

        bits = np.int32(BLOCK_BITS)
        entries = np.zeros(nb, dtype=np.int64)
        pairs = np.zeros(nb, dtype=np.int64)
        count = cpu_kernels._jit(_count)
        for rows in chunks:
            if not count(indptr, rows, ranked(rows), bits, entries, pairs):
                return None
        at_entry = np.concatenate([[0], np.cumsum(entries)[:-1]]).astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(pairs)]).astype(np.int64)
        at_pair = starts[:-1].copy()
        prow = np.empty(int(starts[-1]), dtype=np.int32 if n < 2**31 else np.int64)
        pptr = np.empty(int(starts[-1]) + 1, dtype=np.int64)
        pptr[-1] = len(cols)
        bcols = np.empty(len(cols), dtype=np.int32)
        fill = cpu_kernels._jit(_fill)
        for rows in chunks:
            fill(indptr, rows, ranked(rows), bits, at_entry, at_pair, prow, pptr, bcols)
        return perm, prow, pptr, bcols, starts
