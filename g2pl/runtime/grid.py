"""Exchanges routed over a grid of ranks (`--partition 2d`): each rank talks to O(sqrt P) peers.

With the 1D layout every exchange is one personalized all-to-all, so a rank
that mirrors vertices of every other rank has P - 1 partners per superstep:
at a thousand ranks the messages are many and small, and their count, not
their bytes, sets the time.  `GridComm` arranges the P ranks as an R x C
grid (rank = row * C + column, R the largest divisor of P not above sqrt P)
and sends every all-to-all in two hops, the way 2D-partitioned BFS expands
along columns and folds along rows:

1. along the row, to the rank of the destination's column (one message per
   row peer holding everything for that column);
2. along that column, to the destination (one message per column peer).

A rank's partners are its R - 1 column peers and C - 1 row peers.  What
arrives, and in which order, is exactly what the direct all-to-all delivers
(data ordered by source rank), so programs give the same answers bit for bit;
the cost is the second hop: bytes that change both row and column travel
twice.  Each hop sends a small fixed-size header of counts first (4 bytes per
row or column of the grid), so every receiver knows its sizes without an
all-to-all of counts.

Under MPI the hops run on row and column sub-communicators (`MPIComm.split`);
any other communicator (tests run ranks as threads) routes them through
itself with zero counts to every rank off the line.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from g2pl.errors import G2PLError

#: `--partition`: the layouts, and `auto`'s choice: routed from this many ranks on
PARTITIONS = ("auto", "1d", "2d")
AUTO_2D_RANKS = 64


def grid_shape(size: int) -> tuple[int, int]:
    """(rows, columns) of the grid: rows the largest divisor of `size` not above its square root (a
    prime `size` is one row: the direct all-to-all)."""
    rows = max(d for d in range(1, math.isqrt(size) + 1) if size % d == 0)
    return rows, size // rows


def resolve_partition(partition: str, size: int) -> str:
    """`1d` or `2d` for a run on `size` ranks (`auto`: 2d from AUTO_2D_RANKS ranks whose grid has more
    than one row)."""
    if partition not in PARTITIONS:
        raise G2PLError(f"unknown partition `{partition}`; expected one of {', '.join(PARTITIONS)}",
                        file="g2pl run")
    if partition == "auto":
        return "2d" if size >= AUTO_2D_RANKS and grid_shape(size)[0] > 1 else "1d"
    return partition


def routed(comm: Any, partition: str) -> Any:
    """`comm` itself for a 1D run (or one rank), else the grid-routed communicator over it."""
    layout = resolve_partition(partition, 1 if comm is None else comm.size)
    if comm is None or isinstance(comm, GridComm):
        return comm
    if layout == "1d" or grid_shape(comm.size)[0] == 1:
        return comm  # one row: the row hop is the direct all-to-all
    return GridComm(comm)


class _Line:
    """The ranks `members` of one row or column, as a communicator for one hop: a sub-communicator
    when the base one can split (MPI), else the base one with zero counts off the line."""

    def __init__(self, base: Any, members: np.ndarray, color: int, me: int) -> None:
        self.base, self.members, self.me = base, members, me  # `me`: this rank's place on the line
        self.sub = base.split(color, me) if hasattr(base, "split") else None

    def alltoallv(self, send: np.ndarray, counts: np.ndarray, recv: np.ndarray) -> np.ndarray:
        if self.sub is not None:
            return self.sub.alltoallv(send, counts, recv)[0]
        full_send = np.zeros(self.base.size, dtype=np.int64)
        full_recv = np.zeros(self.base.size, dtype=np.int64)
        full_send[self.members] = counts
        full_recv[self.members] = recv
        return self.base.alltoallv(send, full_send, full_recv)[0]


class GridComm:
    """A communicator whose `alltoallv` goes row hop, then column hop (module docstring); every other
    method is the base communicator's.  Counts its own traffic (both hops, headers included) in
    `bytes_sent` / `bytes_received`, and the ranks it sent to in `partners`."""

    def __init__(self, base: Any) -> None:
        self.base = base
        self.rank, self.size = base.rank, base.size
        self.shape = grid_shape(base.size)
        rows, cols = self.shape
        self.row, self.col = divmod(self.rank, cols)
        self._row_line = _Line(base, self.row * cols + np.arange(cols), self.row, self.col)
        self._col_line = _Line(base, np.arange(rows) * cols + self.col, rows + self.col, self.row)
        self.bytes_sent = self.bytes_received = 0
        self.partners: set[int] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def allreduce_partials(self, partials: np.ndarray, layout: tuple) -> np.ndarray:
        before = (getattr(self.base, "bytes_sent", 0), getattr(self.base, "bytes_received", 0))
        out = self.base.allreduce_partials(partials, layout)
        self.bytes_sent += getattr(self.base, "bytes_sent", 0) - before[0]
        self.bytes_received += getattr(self.base, "bytes_received", 0) - before[1]
        return out

    def _hop(self, line: _Line, send: np.ndarray, counts: np.ndarray, recv: np.ndarray) -> np.ndarray:
        item = send.dtype.itemsize
        off = np.arange(len(counts)) != line.me
        self.bytes_sent += int(counts[off].sum()) * item
        self.bytes_received += int(recv[off].sum()) * item
        self.partners.update(int(r) for r in line.members[off & (counts > 0)])
        return line.alltoallv(send, counts, recv)

    def alltoallv(self, send: np.ndarray, send_counts: Any, recv_counts: Any = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The direct all-to-all's result (data from each source in rank order, counts per source),
        delivered in two hops.  `recv_counts` is not needed: the hops' headers carry the counts."""
        rows, cols = self.shape
        send = np.ascontiguousarray(send)
        counts = np.asarray(send_counts, dtype=np.int64).reshape(rows, cols)  # [dest row, dest column]
        starts = np.concatenate([[0], np.cumsum(counts.reshape(-1))])
        # hop 1, along my row: to column c's rank, the pieces for (every row, c), by destination row
        head1 = self._hop(self._row_line, _header(counts.T), np.full(cols, rows),
                          np.full(cols, rows)).reshape(cols, rows).astype(np.int64)  # [source col, dest row]
        order = (np.arange(rows)[None, :] * cols + np.arange(cols)[:, None]).reshape(-1)  # by column, row
        buf = _pieces(send, starts, order)
        mid = self._hop(self._row_line, buf, counts.sum(axis=0), head1.sum(axis=1))
        # hop 2, along my column: to row r's rank, what each of my row's sources sent for (r, my column)
        mstarts = np.concatenate([[0], np.cumsum(head1.reshape(-1))])
        head2 = self._hop(self._col_line, _header(head1.T), np.full(rows, cols),
                          np.full(rows, cols)).reshape(rows, cols).astype(np.int64)  # [source row, source col]
        order2 = (np.arange(cols)[None, :] * rows + np.arange(rows)[:, None]).reshape(-1)  # by dest row, source col
        out = self._hop(self._col_line, _pieces(mid, mstarts, order2), head1.sum(axis=0), head2.sum(axis=1))
        return out, head2.reshape(-1)


def _header(counts: np.ndarray) -> np.ndarray:
    """A hop's counts, one row per peer, as 4-byte words: an MPI message's size is a C int anyway."""
    if counts.size and int(counts.max()) >= 1 << 32:
        raise OverflowError("a message of 2**32 or more elements")
    return np.ascontiguousarray(counts.reshape(-1), dtype=np.uint32)


def _pieces(buf: np.ndarray, starts: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The pieces buf[starts[k]:starts[k + 1]] for k in `order`, concatenated."""
    parts = [buf[starts[k]:starts[k + 1]] for k in order]
    return np.concatenate(parts) if parts else buf[:0]
