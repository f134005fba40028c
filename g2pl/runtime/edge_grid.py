"""Neighbourhood reductions over an edge-partitioned grid (`--partition 2d`): fewer bytes than 1D.

The routed exchange (grid.py) delivers the 1D exchange itself: every message crosses to every rank
mirroring its sender, and a message that changes row and column crosses twice.  Fewer bytes need
the edges cut into blocks, as the distributed-memory BFS of Buluç and Madduri and Yoo et al. does:
ranks form an R x C grid (rank = row * C + column, GridComm's numbering), and the rank at (i, j)
holds, besides its 1D part, the block of edges whose sender is owned in grid row i and whose
receiver is owned in grid column j (built once per adjacency, from the 1D parts, along the grid
columns).  A reduction then

1. *expands*: each sender's message goes along its grid row, once to each rank whose block has
   entries from it (the 1D transport over the row: packed fields, presence as a bitmap or
   positions, whichever is fewer bytes);
2. reduces each block row where it is (the 1D pull, over the block);
3. *folds* along the grid column: each block row's partial goes once to the receiver's owner.

Exact combines (or, and, count, integer sums, min, max) fold in one exchange and combine in any
order; a block row sends only when it holds something (an `or` that found a sender, a nonzero
count, a min over at least one sender).  A count of a bare presence (`sum [ 1 | u <- nvals v,
u in S ]`) stays with the routed 1D exchange: one bit per mirror there, an 8-byte partial per block
row here.  A float sum must add a receiver's messages in sender-ID order to keep the 1D bits, and it
can: 1D blocks are ID ranges in rank order, so grid row i's senders all come before grid row i + 1's.  Its fold is a pipeline down the column, R exchanges:
the rank of grid row k continues each running sum where the earlier grid rows left it (a leading
entry of the block row reads the value that arrived, so the pass is the same in-order pull, from
+0) and hands it to the next grid row with entries for that receiver, or to its owner.  Each value
still travels once; where only some senders send (a send condition), a running sum still at +0
does not travel at all: the receiving slot holds +0 already (a sum from +0 is never -0), so a sparse
frontier sends little.

Which reductions take this path: Neighbourhood.combine's pulls whose message is made at the sender
(not per entry, no edge mask, no receivers pass), with or, and, count, sum, min or max, on the NumPy
backend; a float sum also needs every row's entries in sender-grid-row order (checked when the
blocks are built).  Everything else takes the routed exchange, with the same answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, cast

import numpy as np

from g2pl.contract import Spec
from g2pl.runtime.adjacency import Adjacency
from g2pl.runtime.backend import Backend
from g2pl.runtime.grid import GridComm
from g2pl.runtime.partition import GraphCache
from g2pl.runtime.stats import Tally
from g2pl.runtime.transport import Transport

#: the combines a block row's partials fold with (sum: floats by the pipeline)
GRID_OPS = ("or", "and", "count", "sum", "min", "max")

#: the fold's exchanges: partials (and their presence) only
_FOLD = Spec(-2, "nbr", transport="packed")

#: column ids of the leading entries that read a running sum: before every sender's, so a column
#: block pass (column_blocks.py) still adds them first
_LEAD_ID = np.iinfo(np.int64).min


@dataclass
class Route:
    """What Transport reads of a graph part, for one exchange along a grid line: the positions of the
    array sent to each place on the line, and how many arrive from each."""

    size: int
    send_idx: Any
    send_counts: np.ndarray
    recv_counts: np.ndarray
    nv_send_idx: None = None

    @property
    def n_ghosts(self) -> int:
        return int(self.recv_counts.sum())


class LineComm:
    """A row or column of a GridComm as a communicator of its own (rank: the place on the line); its
    traffic counts in the grid's bytes and partners."""

    def __init__(self, grid: GridComm, line: Any) -> None:
        self.grid, self.line = grid, line
        self.rank, self.size = line.me, len(line.members)

    def alltoallv(self, send, send_counts, recv_counts) -> tuple[np.ndarray, np.ndarray]:
        counts = np.asarray(send_counts, dtype=np.int64)
        recv = np.asarray(recv_counts, dtype=np.int64)
        return self.grid._hop(self.line, np.ascontiguousarray(send), counts, recv), recv


def _line_exchange(comm: LineComm, data: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Building the blocks: `data` (`counts` to each place) along the line; returns (what arrived, in
    place order; how much from each place)."""
    got_counts, _ = comm.alltoallv(counts.astype(np.int64), np.ones(comm.size, np.int64),
                                   np.ones(comm.size, np.int64))
    got_counts = got_counts.view(np.int64)
    got, _ = comm.alltoallv(data, counts, got_counts)
    return got.view(data.dtype), got_counts


def _sender_lists(nbr: np.ndarray, per_stage: np.ndarray, n_ext: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """For entries grouped by grid row (`per_stage` each, senders `nbr`, ext indices): each group's
    distinct senders (ascending ext index) and each entry's position in its group's list (int32)."""
    at = np.empty(len(nbr), dtype=np.int32 if n_ext < 2**31 else np.int64)
    lists = []
    mark = np.zeros(n_ext, dtype=bool)
    lo = 0
    for k in per_stage.tolist():
        seg = nbr[lo:lo + k]
        mark[:] = False
        mark[seg] = True
        lists.append(np.flatnonzero(mark))
        pos = np.cumsum(mark, dtype=at.dtype)
        at[lo:lo + k] = pos[seg] - 1
        lo += k
    return at, lists


def _runs(*keys: np.ndarray) -> np.ndarray:
    """Where a run of equal consecutive key tuples starts."""
    k = len(keys[0])
    start = np.zeros(k, dtype=bool)
    if k:
        start[0] = True
        for a in keys:
            start[1:] |= a[1:] != a[:-1]
    return np.flatnonzero(start)


class EdgeGrid:
    """One adjacency's edge block at this rank and the routes of its expand and fold (module
    docstring).  Built collectively: every rank of the grid builds its own at the same call."""

    def __init__(self, bk: Backend, lg, indptr, nbr, grid: GridComm, tally: Tally, pulls_over: Callable) -> None:
        self.bk, self.xp, self.lg, self.grid = bk, bk.xp, lg, grid
        rows_, cols = grid.shape
        self.R, self.C = rows_, cols
        self.me_row, self.me_col = divmod(lg.rank, cols)
        self.row_comm = LineComm(grid, grid._row_line)
        self.col_comm = LineComm(grid, grid._col_line)
        self._block: Adjacency | None = None
        self._lead: Adjacency | None = None
        self._cont = np.zeros(0, dtype=bool)
        self.n_slots = 0
        self.round_routes: list[Route] = []
        self.round_targets: list[tuple] = []
        saved = (grid.bytes_sent, grid.bytes_received, set(grid.partners))  # (building is loading, not the program)
        try:
            self._build(np.asarray(bk.to_host(indptr), dtype=np.int64), np.asarray(bk.to_host(nbr)))
        finally:
            grid.bytes_sent, grid.bytes_received, grid.partners = saved
        self.expand = Transport(bk, self.expand_route, self.row_comm, tally)
        self.fold = Transport(bk, self.fold_route, self.col_comm, tally)
        self.rounds = [Transport(bk, r, self.col_comm, tally) for r in self.round_routes] if self.ordered else []
        # the pulls over the block: the 1D ones (views, early exit; `pulls_over` makes a Neighbourhood, whose
        # module imports this one), over a part of the block's shape
        self.pulls = pulls_over(SimpleNamespace(n=self.nB, n_ext=self.ntab, ext_ids=self.table_ids,
                                                cache=GraphCache()))

    # ------------------------------------------------------------ building

    def _build(self, indptr: np.ndarray, nbr: np.ndarray) -> None:
        lg, R, C = self.lg, self.R, self.C
        n = int(lg.n)
        ext_ids = np.asarray(self.bk.to_host(lg.ext_ids), dtype=np.int64)
        # the grid row holding each entry (its sender's owner's), as 16-bit keys: a radix sort's
        senders_row = np.repeat(np.arange(lg.size) // C, np.asarray(lg.recv_counts)).astype(np.int16)
        stage_e = np.concatenate([np.full(n, self.me_row, dtype=np.int16), senders_row])[nbr]
        row_e = np.repeat(np.arange(n, dtype=np.int32 if n < 2**31 else np.int64), np.diff(indptr))
        bad = np.diff(stage_e) < 0
        starts = indptr[1:-1]
        bad[starts[(starts > 0) & (starts < len(stage_e))] - 1] = False  # (a new row may start lower)
        self.ordered = all(self.grid.allgather(not bool(bad.any())))
        del bad

        # 1. every entry to the rank of its sender's grid row in my grid column, row by row: its row, and
        # its sender as a position in the list of distinct senders (by ID) that rank gets from here
        order = np.argsort(stage_e, kind="stable")
        per_stage = np.bincount(stage_e, minlength=R).astype(np.int64)
        rw = row_e[order]
        at, lists = _sender_lists(nbr[order], per_stage, len(ext_ids))
        v_loc, got_counts = _line_exchange(self.col_comm, rw, per_stage)
        u_at, _ = _line_exchange(self.col_comm, at, per_stage)
        del at
        u_list, list_counts = _line_exchange(self.col_comm, ext_ids[np.concatenate(lists)],
                                             np.array([len(x) for x in lists], dtype=np.int64))
        u_at += np.repeat(np.cumsum(list_counts) - list_counts, got_counts).astype(u_at.dtype)  # into u_list
        src = np.repeat(np.arange(R, dtype=np.int16), got_counts)

        # the (grid row, owned row) pairs with entries, by grid row: what comes back in the fold
        st = stage_e[order]
        del order
        pairs = _runs(st, rw)
        pr_stage, pr_row = st[pairs].astype(np.int64), rw[pairs].astype(np.int64)
        pair_counts = np.bincount(pr_stage, minlength=R).astype(np.int64)
        del st, rw, pairs
        meta = None
        if self.ordered:
            # each pair's neighbours in its row's list of grid rows (previous, next; -1: none): the
            # entries in their own order have each row's grid rows ascending
            o = _runs(row_e, stage_e)
            o_row, o_stage = row_e[o], stage_e[o].astype(np.int64)
            same = o_row[1:] == o_row[:-1]
            prev = np.full(len(o), -1, dtype=np.int64)
            nxt = prev.copy()
            prev[1:][same] = o_stage[:-1][same]
            nxt[:-1][same] = o_stage[1:][same]
            by_stage = np.argsort(o_stage.astype(np.int16), kind="stable")  # the pairs' order above
            prev, nxt = prev[by_stage], nxt[by_stage]
            meta = (_line_exchange(self.col_comm, prev, pair_counts)[0],
                    _line_exchange(self.col_comm, nxt, pair_counts)[0], nxt)
        del row_e, stage_e

        # 2. the block: rows = runs of (source place, its row), entries in the order they came
        bstart = _runs(src, v_loc)
        self.nB = nB = len(bstart)
        b_indptr = np.append(bstart, len(u_at)).astype(np.int64)
        b_src = src[bstart].astype(np.int64)
        del src
        uniq, inv = np.unique(u_list, return_inverse=True)  # (distinct senders per source: few)
        first_ids = np.asarray(lg.first_ids, dtype=np.int64)
        u_owner = np.searchsorted(first_ids, uniq, side="right") - 1
        mine = u_owner == lg.rank
        ids = np.asarray(self.bk.to_host(lg.ids), dtype=np.int64)
        sorter = np.argsort(ids, kind="stable")
        col_of = np.empty(len(uniq), dtype=np.int64)
        col_of[mine] = sorter[np.searchsorted(ids, uniq[mine], sorter=sorter)]
        col_of[~mine] = n + np.arange(int(np.count_nonzero(~mine)), dtype=np.int64)
        req_counts = np.bincount(u_owner[~mine] % C, minlength=C).astype(np.int64)
        self.ntab = n + int(req_counts.sum())
        self.table_ids = np.concatenate([ext_ids[:n], uniq[~mine]])
        b_cols = col_of[inv].astype(np.int32 if self.ntab < 2**31 else np.int64)[u_at]
        del inv, col_of, u_at

        # the expand: each grid row peer sends the senders asked for (by original ID)
        asked, asked_counts = _line_exchange(self.row_comm, uniq[~mine], req_counts)
        send_idx = sorter[np.searchsorted(ids, asked, sorter=sorter)] if len(asked) else np.zeros(0, np.int64)
        self.expand_route = Route(C, self.bk.from_host(send_idx.astype(np.int64)), asked_counts, req_counts)

        # the fold: block rows back to their owners (already grouped by place on the column)
        self.fold_route = Route(R, self.bk.from_host(np.arange(nB, dtype=np.int64)),
                                np.bincount(b_src, minlength=R).astype(np.int64), pair_counts)
        self.fold_rows = self.bk.from_host(pr_row)  # each arriving partial's owned row (pairs in stage order)
        self._csr = (b_indptr, b_cols)
        if meta is not None:
            self._pipeline(b_src, v_loc[bstart].astype(np.int64), meta[0], meta[1], pr_stage, pr_row, meta[2])

    @property
    def block(self) -> Adjacency:
        """The block as an adjacency (rows: block rows; columns: the expanded senders), made on first use."""
        if self._block is None:
            indptr, cols = self._csr
            up = self.bk.from_host
            self._block = Adjacency(self.bk, up(indptr), up(cols), None, up(self.table_ids))
        return self._block

    @property
    def lead(self) -> Adjacency:
        """The block with a leading entry in each row that continues a running sum (columns: the
        `n_slots` running sums, then the expanded senders), made on the first float sum."""
        if self._lead is None:
            indptr, b_cols = self._csr
            cont = self._cont
            lens = np.diff(indptr) + cont
            lead_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
            ns = self.n_slots
            cols = np.empty(int(lead_ptr[-1]), dtype=b_cols.dtype if self.ntab + ns < 2**31 else np.int64)
            heads = lead_ptr[:-1][cont]
            body = np.ones(len(cols), dtype=bool)
            body[heads] = False
            cols[heads] = np.arange(ns)
            cols[body] = b_cols + ns
            ids = np.concatenate([_LEAD_ID + np.arange(ns, dtype=np.int64), self.table_ids])
            up = self.bk.from_host
            self._lead = Adjacency(self.bk, up(lead_ptr), up(cols), None, up(ids))
        return self._lead

    def _pipeline(self, b_src, b_row, b_prev, b_next, pr_stage, pr_row, pr_next) -> None:
        """The float sum's fold: which block rows continue a running sum (a leading entry, see `lead`),
        and the route of each round (round k: grid row k hands its sums on)."""
        R = self.R
        self._cont = cont = b_prev >= 0
        self.n_slots = int(np.count_nonzero(cont))
        slot = np.full(self.nB, -1, dtype=np.int64)
        slot[cont] = np.arange(self.n_slots)
        up = self.bk.from_host
        dest = np.where(b_next >= 0, b_next, b_src)
        key_b = (b_src << 40) | b_row
        last = pr_next < 0  # my rows' last grid rows: their sums come from there
        for k in range(R):
            if k == self.me_row:
                order = np.argsort(dest, kind="stable")
                send_idx, send_counts = order, np.bincount(dest, minlength=R).astype(np.int64)
            else:
                send_idx, send_counts = np.zeros(0, np.int64), np.zeros(R, np.int64)
            go_on = np.flatnonzero(b_prev == k)  # my block rows continuing a sum from round k
            final = pr_row[last & (pr_stage == k)]  # my rows whose sum ends there
            keys = np.concatenate([key_b[go_on], (np.int64(self.me_row) << 40) | final])
            o = np.argsort(keys, kind="stable")
            is_final = np.concatenate([np.zeros(len(go_on), bool), np.ones(len(final), bool)])[o]
            where = np.concatenate([slot[go_on], final])[o]
            recv = np.zeros(R, np.int64)
            recv[k] = len(keys)
            self.round_routes.append(Route(R, up(send_idx), send_counts, recv))
            self.round_targets.append((up(np.flatnonzero(~is_final)), up(where[~is_final]),
                                       up(np.flatnonzero(is_final)), up(where[is_final])))

    # ------------------------------------------------------------ a reduction

    def entries_sent(self, present) -> int:
        """Block entries whose sender sends (the messages this rank's block receives)."""
        if present is None:
            return len(self._csr[1])
        return self.pulls._send_work(self.block, present).total

    def combine(self, spec: Spec, arrays: tuple, head, sendm, n: int):
        """`spec.op` over each owned receiver's neighbours (expand, pull over the block, fold)."""
        xp, bk = self.xp, self.bk
        ext, present = self.expand.exchange(spec, arrays, sendm)
        value, mask = head(*ext)
        if present is not None:
            mask = present if mask is None else xp.logical_and(present, mask)
        v = self.pulls.entries(value, self.ntab)
        if v.dtype == xp.float32:
            v = v.astype(xp.float64)  # a narrowed message: its float64 sum has the same bits
        op, elem = spec.op, spec.elem
        if op == "sum" and v.dtype.kind == "f":
            assert self.ordered, "a float sum over blocks out of sender order"  # (Neighbourhood checks)
            return self._ordered_sum(v, mask, n).astype(bk.dtype(elem), copy=False), present
        msk = None if mask is None else self.pulls.entries(mask, self.ntab).astype(bool, copy=False)
        val = v if bk.is_array(value) else value  # (a constant stays one: the pulls count it)
        if op in ("or", "and"):
            part = self.pulls._pull(op, val, msk, self.block, elem, None)
            send = part if op == "or" else ~part
            _, got = self.fold.exchange(_FOLD, (), send)
            at = self.bk.nonzero(cast(Any, got)[len(send):])
            out = xp.zeros(n, dtype=bool)
            out[self.fold_rows[at]] = True
            return (out if op == "or" else ~out), present
        if op in ("count", "sum"):
            part = self.pulls._pull(op, val, msk, self.block, elem, None)
            part = part.astype(xp.int64, copy=False)
            rows, vals = self._fold(part, part != 0)
            out = bk.scatter_reduce("sum", rows, vals, None, n, "int")
            return out.astype(bk.dtype(elem), copy=False), present
        # min, max: the block rows with a sender fold; the owner's rows with none get the empty value
        dt = xp.dtype(bk.dtype(elem))
        part = self.pulls._pull_minmax(op, v.astype(dt, copy=False), msk, self.block, elem)
        has = xp.ones(self.nB, dtype=bool) if msk is None else \
            self.pulls._pull("or", True, msk, self.block, "bool", None)
        rows, vals = self._fold(part, has)
        return bk.scatter_reduce(op, rows, vals.astype(dt, copy=False), None, n, elem), present

    def _fold(self, part, send):
        """The block rows' partials where `send` holds, to their owners: (owned row, partial) of what
        arrived here."""
        (ext,), got = self.fold.exchange(_FOLD, (part,), send)
        at = self.bk.nonzero(cast(Any, got)[len(part):])
        return self.fold_rows[at], ext[len(part):][at]

    def _ordered_sum(self, v, mask, n: int):
        """The float sum's pipeline (module docstring): R rounds down the grid column."""
        xp = self.xp
        sparse = mask is not None  # (the same on every rank: the same code made it)
        if sparse:
            v = self.bk.select(self.pulls.entries(mask, self.ntab).astype(bool, copy=False), v, v.dtype.type(0))
        slots = xp.zeros(self.n_slots, dtype=xp.float64)
        out = xp.zeros(n, dtype=xp.float64)
        nothing = xp.zeros(0, dtype=xp.float64)
        for k, (transport, (go_at, go_slot, fin_at, fin_row)) in enumerate(zip(self.rounds, self.round_targets)):
            acc = self.lead.matrix("f") @ xp.concatenate([slots, v]) if k == self.me_row else nothing
            # with only some senders sending, a running sum still +0 is not sent: the next rank's slot, the
            # owner's result, hold +0 (a sum from +0 is never -0, so this is exactly what would arrive)
            (ext,), _ = transport.exchange(_FOLD, (acc,), (acc != 0) if sparse else None)
            got = ext[len(acc):]  # (+0 where nothing was sent)
            slots[go_slot] = got[go_at]
            out[fin_row] = got[fin_at]
        return out
