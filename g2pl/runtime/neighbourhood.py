"""Neighbourhood combine: the `nbr_combine` verb (exchange, count, choose push or pull, reduce).

Sums, counts and or/and are sparse mat-vec products (rows in neighbour
order, so the result does not depend on the number of ranks); the others
gather the values onto adjacency entries and reduce segments.  When only
some senders send (a presence mask), the pull runs over just their entries
(a restricted view of the adjacency, kept while the sender set shrinks), or
the senders push when their entries are few (Beamer's rule, with hysteresis
kept per exchange spec).  `allnvals` and `nbrs` aggregate over one adjacency holding both
directions (every entry, or each adjacent vertex once: adjacency.union_csr), built once per graph
part, so they cost what `nvals` does: one exchange.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import NamedTuple, cast

from g2pl.contract import Spec
from g2pl.runtime.adjacency import Adjacency, EdgeIndex, Entries, Pushed, union_csr
from g2pl.runtime.backend import Array, Backend, RowBlocks
from g2pl.runtime.edge_grid import GRID_OPS, EdgeGrid
from g2pl.runtime.grid import GridComm
from g2pl.runtime.stats import Stats, Tally
from g2pl.runtime.transport import Transport


class Known(NamedTuple):
    """The receivers pass's `known` argument, read once per exchange (Neighbourhood._known_rows)."""

    array: Array  # the senders' kept copy of the receivers' set, as the program passed it
    owned: Array  # its owned part, as bools: each receiver's own copy
    rows: Array  # the receivers there


class SendWork(NamedTuple):
    """The ext senders where a presence mask holds (Neighbourhood._send_work)."""

    senders: Array
    lens: Array  # their entry counts
    total: int  # their entries in all


class _WorkMemo(NamedTuple):
    adj: Adjacency
    present: Array
    work: SendWork


class _SentRows(NamedTuple):
    """Entries per receiver from `senders`, as the last pull over `adj` had them (see _count_known)."""

    adj: Adjacency
    senders: Array
    counts: Array
    view: Adjacency  # the adjacency view the pull ran over


class Neighbourhood:
    # Beamer/Ligra rule: push while the active senders' entries are few; hysteresis keeps a choice
    # until the work crosses the other threshold.
    PUSH_BELOW = 1 / 20
    PULL_ABOVE = 1 / 12
    # pulling per entry (head evaluated on every adjacency entry) costs several gathers per entry
    PUSH_BELOW_PER_ENTRY = 1 / 2
    PULL_ABOVE_PER_ENTRY = 2 / 3
    #: pull over a restricted view of the adjacency (see Adjacency.restricted) when the senders' entries
    #: are at most this fraction of all entries
    RESTRICT_BELOW = 1 / 2
    #: a min/max pull with a receiver filter reduces only the filter's rows (Adjacency.of_rows) when
    #: they hold at most this fraction of the entries (making the view reads them once more)
    RECV_ROWS_BELOW = 1 / 4

    def __init__(self, bk: Backend, lg, transport: Transport | None, tally: Tally, stats: Stats) -> None:
        """`transport`: None for the pulls over a 2D run's edge block (edge_grid.py), which never exchange."""
        self.bk, self.xp, self.lg = bk, bk.xp, lg
        self.n = lg.n
        self.transport, self.tally, self.stats = transport, tally, stats
        self.push_state: dict[int, bool] = {}  # per exchange spec: pushing now (hysteresis)
        # (adjacency, senders, entries per receiver from those senders) of the last pull that had them:
        # see _count_known
        self._sent_rows: _SentRows | None = None
        self._work_memo: _WorkMemo | None = None  # see _send_work
        self._grids: dict[str, EdgeGrid] = {}  # a 2D run's edge blocks per direction (see _edge_grid)
        self.head_ids = lg.ext_ids  # what a message head reads as its senders' IDs (the runtime's ext_ids)

    def end_superstep(self) -> None:
        self._work_memo = None

    def adj(self, d: str = "in") -> Adjacency:
        """The adjacency of neighbours `d` (`Spec.dir`: in, out, all or set; undirected graphs have one),
        built once per graph part."""
        lg = self.lg
        if not lg.directed:
            d = "in"
        cache = lg.cache.adjacency
        a = cache.get(d)
        if a is None:
            edges = self.edge_index()
            if d in ("all", "set"):  # both directions in one CSR (its transpose made when pushing)
                a = cache[d] = Adjacency(self.bk, *union_csr(self.bk, lg, d == "set"), lg.ext_ids, None, edges)
                return a
            side, back = ("out", "in") if d == "out" else ("in", "out")
            # read lazily (picklable partials): a device part uploads an array on its first read, and a
            # BFS reads no edge ids and pushes rarely
            reverse = partial(_csr, lg, back) if lg.n_ext == lg.n else None  # one rank: the transpose
            a = cache[d] = Adjacency(self.bk, getattr(lg, f"{side}_indptr"), getattr(lg, f"{side}_nbr"),
                                     partial(getattr, lg, f"{side}_eid"), lg.ext_ids, reverse, edges)
        return a

    def edge_index(self) -> EdgeIndex:
        """The part's edge lookups (shared with its adjacencies; made once per graph part)."""
        c = self.lg.cache
        if c.edge_index is None:
            c.edge_index = EdgeIndex(self.bk, self.lg)
        return c.edge_index

    def entries(self, x, k: int):
        return x if self.bk.is_array(x) else self.xp.full(k, x)

    # ------------------------------------------------------------ the verb

    def combine(self, spec: Spec, fields: tuple, head, send=None, recv=None, along=None, known=None, edge=None):
        """`spec.op` over each receiver's neighbours of the message `head` makes of the arrived fields."""
        n = self.n
        self.tally.exchanged = True
        arrays = tuple(self.entries(a, n) for a in fields)
        sendm = None if send is None else self.entries(send, n).astype(bool, copy=False)
        grid = self._edge_grid(spec)
        if grid is not None:
            out, present = grid.combine(spec, arrays, partial(self._head_over, grid, head), sendm, n)
            if spec.counted:
                self.tally.messages += grid.entries_sent(present)
                if sendm is not None:
                    self.tally.sent_by(int(self.bk.item(self.xp.count_nonzero(sendm))))
            return out
        assert self.transport is not None
        ext, present = self.transport.exchange(spec, arrays, sendm)
        adj = self.adj(spec.dir)
        if spec.counted and along is not None:
            self._count_along(adj, present, along)
        elif spec.counted and known is None:
            self._count(adj, present)
        pushed = work = out = None
        if spec.policy == "push-pull" and present is not None:
            work = self._push_work(adj, present, spec.id, spec.per_entry)
        plus = spec.plus_edge >= 0 and getattr(edge, "ndim", 0) == 1  # (an edge array, as the head's E.edge reads)
        if work is not None:
            if plus and known is None:
                out = self._push_plus_edge(spec, ext[spec.plus_edge], edge, adj, work)
            if out is None:
                pushed = self._pushed(adj, work, spec.per_entry)
        elif plus:
            out = self._pull_plus_edge(spec, ext[spec.plus_edge], edge, adj, present)
        kr = None if known is None else self._known_rows(known)
        if out is None:
            out = self._reduce(spec, ext, head, adj, present, pushed, recv, kr)
        if spec.counted and along is None and kr is not None:  # after: the reduction's view counts them
            self._count_known(adj, present, kr, pushed)
        return out

    def _head_over(self, grid: EdgeGrid, head, *table):
        """`head` over a 2D reduction's expanded senders (their IDs where it reads `rt.ext_ids`)."""
        self.head_ids = grid.table_ids
        try:
            return head(*table)
        finally:
            self.head_ids = self.lg.ext_ids

    def grid_served(self, spec: Spec) -> bool:
        """Whether `spec`'s combines run over edge blocks (edge_grid.py): a 2D run on the NumPy backend,
        a message made at the sender that crosses ranks, one of GRID_OPS (a float sum also needs the
        blocks' rows in sender order: see _edge_grid).  Every rank decides alike."""
        comm = None if self.transport is None else self.transport.comm
        if not isinstance(comm, GridComm) or comm.shape[0] == 1 or self.bk.name != "numpy":
            return False
        if spec.per_entry or spec.along or spec.known or spec.plus_edge >= 0 or spec.op not in GRID_OPS:
            return False
        if spec.op in ("min", "max") and spec.elem not in ("int", "float", "vid"):
            return False
        if not spec.fields:
            # a bare presence crosses 1D as one bit per mirror; a count over it would fold 8-byte partials
            return spec.presence and spec.op in ("or", "and")
        return True

    def edge_grid(self, d: str) -> EdgeGrid:
        """The edge blocks of the adjacency `d` (collective; built once per run, at loading when the
        program's specs say so: Runtime.prepare)."""
        d = d if self.lg.directed else "in"
        grid = self._grids.get(d)
        if grid is None:
            adj = self.adj(d)
            comm = cast(GridComm, cast(Transport, self.transport).comm)
            grid = self._grids[d] = EdgeGrid(self.bk, self.lg, adj.seg.indptr, adj.nbr, comm, self.tally,
                                             partial(Neighbourhood, self.bk, transport=None, tally=self.tally,
                                                     stats=self.stats))
        return grid

    def _edge_grid(self, spec: Spec) -> EdgeGrid | None:
        """The edge blocks this reduction runs over, or None for the routed exchange (the spec's flags
        say which arguments the generated code passes: fields, send, along, known, edge)."""
        if not self.grid_served(spec):
            return None
        grid = self.edge_grid(spec.dir)
        if spec.op == "sum" and spec.elem != "int" and not grid.ordered:
            return None
        return grid

    def _pull_plus_edge(self, spec: Spec, x, edge, adj: Adjacency, present):
        """A pull of `spec.op` over x[sender] + edge value (see Spec.plus_edge) in one pass per row where
        the backend has such a pass (numba, on a large enough adjacency), else None (the head's way).  It
        reads the edge values in entry order where the adjacency keeps them, else at each entry's edge;
        a pass that ran counts as one read of the edge array toward keeping it (Adjacency.edge_values),
        as the head's evaluation would have."""
        if adj.eid is None:
            return None
        kept = adj.kept_edge_values(edge)
        w, eid = (edge, adj.eid) if kept is None else (kept, None)
        sent = None if present is None else self.entries(present, self.lg.n_ext)
        out = self.bk.plus_edge_reduce(spec.op, adj.seg.indptr, adj.nbr, x, sent, w, eid, spec.elem)
        if out is not None and kept is None and edge.strides[0] != 0:  # (stride 0: a constant, never kept)
            adj.edge_values(edge, True)
        return out

    def _known_rows(self, known) -> Known:
        """`known` itself, its owned part as bools, the receivers there (the receivers pass)."""
        kn = self.entries(known, self.lg.n_ext)[:self.n].astype(bool, copy=False)
        return Known(known, kn, self.bk.nonzero(kn))

    def _reduce(self, spec: Spec, ext: Sequence[Array], head, adj: Adjacency, present, pushed: Pushed | None, recv,
                known: Known | None = None):
        xp = self.xp
        if spec.per_entry:
            block = self.bk.entry_block
            if pushed is not None or not block or adj.entries <= 2 * block:
                return self._head_entries(spec, ext, head, Entries(adj, self.lg.ext_ids, self.lg.ids, pushed),
                                          present)
            out = None
            seg = cast(RowBlocks, adj.seg)  # a positive entry_block: the backend's segments cut blocks
            for k, rows in enumerate(seg.row_blocks(block)):
                E = Entries(adj, self.lg.ext_ids, self.lg.ids, None, rows, later_block=k > 0)
                got = self._head_entries(spec, ext, head, E, present)
                if out is None:
                    out = xp.empty(self.n, dtype=got.dtype)
                out[rows[0]:rows[1]] = got
            return out
        value, mask = head(*ext)
        if getattr(value, "dtype", None) == xp.float32 and (pushed is not None or spec.op != "sum"):
            value = value.astype(xp.float64)  # a narrowed message (codegen: `float32(...)`), widened exactly
        if present is not None:
            mask = present if mask is None else xp.logical_and(present, mask)
        if pushed is not None:  # (the pushed entries are the senders' where `present` holds)
            return self._push(spec.op, value, None if mask is present else mask, pushed, spec.elem)
        return self._pull(spec.op, value, mask, adj, spec.elem, recv, mask is present, known)

    # ------------------------------------------------------------ counting and direction

    def _count(self, adj: Adjacency, present) -> None:
        """Records sent in this exchange: along adjacency entries whose sender sends."""
        if present is None:
            self.tally.messages += adj.entries
            return
        senders, _lens, work = self._send_work(adj, present)
        self.tally.messages += work
        self.tally.sent_by(int(self.bk.item(self.xp.searchsorted(senders, self.n))))  # ascending: owned ones first

    def _count_along(self, adj: Adjacency, present, along) -> None:
        """Records sent along the entries whose edge condition `along` holds (from senders that send)."""
        xp = self.xp
        if xp.ndim(along) == 0:  # a constant: every entry, or none
            if self.bk.item(along):
                self._count(adj, present)
            return
        sel = along[adj.eid]
        if present is not None:
            sel = xp.logical_and(sel, self.bk.gather(present, adj.nbr))
        self.tally.messages += int(self.bk.item(xp.count_nonzero(sel)))

    def _count_known(self, adj: Adjacency, present, known: Known, pushed: Pushed | None) -> None:
        """Records sent to the receivers in `known` (the senders' copy; owned part = each receiver's own
        copy, what its neighbours were told): the entries whose sender sends and whose receiver is
        known.  Counted from what the reduction already has when it can (the pushed entries' receivers,
        the rows of a view holding exactly the senders' entries), else from whichever side has fewer
        entries (both sets usually shrink together)."""
        xp, bk, n = self.xp, self.bk, self.n
        kn, rows = known.owned, known.rows
        if present is None:
            self.tally.pending.append(adj.seg.counts[rows].sum())
            return
        senders, lens, work = self._send_work(adj, present)
        self.tally.sent_by(int(bk.item(xp.searchsorted(senders, n))))
        if len(rows) == n:  # every receiver known: every entry of the senders
            self.tally.messages += work
        elif pushed is not None:
            self.tally.pending.append(xp.count_nonzero(kn[pushed.own]))
        elif (got := self._rows_from(adj, present, known.array, kn)) is not None:
            self.tally.pending.append(got[rows].sum())
        elif work <= int(bk.item(adj.seg.counts[rows].sum())):  # the senders' entries, into known receivers
            indptr, recv, _eid = adj.transpose()
            pos = bk.expand_ranges(indptr[senders], lens)
            self.tally.pending.append(xp.count_nonzero(kn[recv[pos]]))
        else:  # the known receivers' entries, from senders
            pos = bk.expand_ranges(adj.seg.indptr[rows], adj.seg.counts[rows])
            self.tally.pending.append(xp.count_nonzero(self.entries(present, self.lg.n_ext)[adj.nbr[pos]]))

    def _rows_from(self, adj: Adjacency, present, known, kn):
        """Entries per receiver from the senders `present`, when the last pull over `adj` with the same
        senders had them at every receiver of `kn` (the owned part of `known`): a count, or a view of
        exactly their entries; matching's Deps and argmin send from the same set in one round."""
        got, xp, bk = self._sent_rows, self.xp, self.bk
        if got is None or got.adj is not adj:
            return None
        snd, view = got.senders, got.view
        if len(snd) != len(present):
            return None
        differ = None if snd is present else xp.any(snd != present)
        if view.rows is not None and view.rows_key is not known:  # a receiver outside the view's rows?
            outside = xp.any(kn > view.rows)
            differ = outside if differ is None else differ | outside
        return got.counts if differ is None or not bk.item(differ) else None

    def _keep_rows(self, adj: Adjacency, present, counts, view: Adjacency) -> None:
        """Remember `counts` (entries per receiver from `present`, at the rows `view` holds).  `present`
        is kept itself: it is a program array (one rank) or a new one per exchange, never written, so
        the next pull from the same array is known by identity without comparing it."""
        self._sent_rows = _SentRows(adj, present, counts, view)

    def _send_work(self, adj: Adjacency, present) -> SendWork:
        """(senders, their entry counts, total entries) of the ext senders where `present` holds.

        Message counting, the push/pull choice and the early-exit pull's budget all need
        it for the same array in one superstep: computed once (remembered by identity
        until the superstep ends; the arrays are not written in between)."""
        memo = self._work_memo
        if memo is not None and memo.adj is adj and memo.present is present:
            return memo.work
        senders = self.bk.nonzero(self.entries(present, self.lg.n_ext))
        lens = adj.sender_counts()[senders]
        got = SendWork(senders, lens, int(self.bk.item(lens.sum())))
        self._work_memo = _WorkMemo(adj, present, got)
        return got

    def _push_work(self, adj: Adjacency, present, key: int, per_entry: bool) -> SendWork | None:
        """The active senders and their entry counts when they push; None to pull."""
        got = self._send_work(adj, present)
        work = got.total + len(got.senders)
        pushing = self.push_state.get(key, False)
        if per_entry:
            frac = self.PULL_ABOVE_PER_ENTRY if pushing else self.PUSH_BELOW_PER_ENTRY
        else:
            frac = self.PULL_ABOVE if pushing else self.PUSH_BELOW
        pushing = work < frac * max(adj.entries, 1)
        self.push_state[key] = pushing
        self.stats.directions["push" if pushing else "pull"] += 1
        return got if pushing else None

    def _pushed(self, adj: Adjacency, work: SendWork, per_entry: bool) -> Pushed:
        """The pushing senders' entries (those of `work`), gathered."""
        indptr, recv, eid = adj.transpose(eids=per_entry)
        pos = self.bk.expand_ranges(indptr[work.senders], work.lens)
        return Pushed(recv[pos], self.bk.repeat(work.senders, work.lens), None if eid is None else eid[pos])

    def _push_plus_edge(self, spec: Spec, x, edge, adj: Adjacency, work: SendWork):
        """A push of `spec.op` over x[sender] + edge value (see Spec.plus_edge) in one pass over the pushing
        senders' entries where the backend has such a pass, else None (the pushed entries' way)."""
        indptr, recv, eid = adj.transpose(eids=True)
        return self.bk.push_plus_edge(spec.op, indptr, recv, eid, work.senders, self.entries(x, self.lg.n_ext),
                                      edge, self.n, spec.elem)

    # ------------------------------------------------------------ reductions

    def _head_entries(self, spec: Spec, ext: Sequence[Array], head, E: Entries, present):
        """The head over entries `E`, reduced per receiver (E's rows only, for a block)."""
        value, mask = head(E, *ext)
        if present is not None:
            sent = self.bk.gather(present, E.nbr)
            mask = sent if mask is None else self.xp.logical_and(sent, mask)
        return self._reduce_entries(spec.op, value, mask, E, spec.elem)

    def _reduce_entries(self, op: str, value, mask, E: Entries, elem: str):
        """Aggregate per-entry values (over the pushed entries only when pushing)."""
        k, bk = len(E), self.bk
        v = self.entries(value, k)
        msk = None if mask is None else self.entries(mask, k).astype(bool, copy=False)
        if E.pushed:
            ids = self.lg.ext_ids[E.nbr] if op in ("argmin", "argmax") else None
            return bk.scatter_reduce(op, E.own, v, msk, self.n, elem, ids)
        ids = E.nbr_ids if op in ("argmin", "argmax") else None
        return bk.seg_reduce(E.seg, op, v, msk, elem, ids)

    def _push(self, op: str, value, mask, pushed: Pushed, elem: str):
        ne = self.lg.n_ext
        if op == "or" and mask is None and not self.bk.is_array(value) and bool(value):
            # `or [ true | u <- nvals v, u in F ]` (BFS): every pushed entry's receiver holds, no per-entry
            # values needed
            out = self.xp.zeros(self.n, dtype=bool)
            out[pushed.own] = True
            return out
        v = self.entries(value, ne)
        msk = None if mask is None else self.entries(mask, ne).astype(bool, copy=False)
        snd = pushed.nbr
        ids = self.lg.ext_ids[snd] if op in ("argmin", "argmax") else None
        return self.bk.scatter_reduce(op, pushed.own, v[snd], None if msk is None else msk[snd], self.n, elem, ids)

    def _pull(self, op: str, value, mask, adj: Adjacency, elem: str, recv, mask_is_sent: bool = False,
              known: Known | None = None):
        """Aggregate message values computed per sender (`value`, `mask` over ext vertices).
        `recv` (bool per vertex, or a scalar): only these receivers use the result, so an or/and pull
        skips the others (their result is unspecified), and a view (see Adjacency.restricted) holds
        only their rows.  `known` (the receivers pass: the senders' copy of the receivers' set, which
        `recv` may have left; see _known_rows): when it leaves out receivers, the view holds its rows
        instead, whose counts are the messages.  When `mask` is exactly the senders and the pull runs
        unmasked over a view (or every entry), the view's row counts are kept for counting."""
        xp, bk, ne = self.xp, self.bk, self.lg.n_ext
        v = self.entries(value, ne)
        msk = None if mask is None else self.entries(mask, ne).astype(bool, copy=False)
        if op in ("or", "and"):
            if not bk.is_array(value) and msk is not None:  # a constant: the senders are the mask itself
                x = msk if bool(value) == (op == "or") else xp.zeros(ne, dtype=bool)
            else:
                hit = v.astype(bool) if op == "or" else ~v.astype(bool)
                x = hit if msk is None else hit & msk
            rows = None  # every receiver
            if recv is not None and bk.is_array(recv):
                rows = bk.nonzero(recv)
            elif recv is not None and not recv:  # a scalar false: no receiver uses the result
                rows = xp.zeros(0, dtype=xp.int64)
            found = self._any_in(adj, x, rows)
            return found if op == "or" else ~found
        full = adj
        if msk is not None and adj.entries:
            reused = adj.count_use(msk)
            work = self._send_work(adj, msk).total
            if work == adj.entries:  # every entry's sender sends: no mask
                msk = None
            else:
                got = adj.restricted(msk, work, self.RESTRICT_BELOW, reused, *self._view_rows(recv, known))
                if got is not None:
                    adj, masked = got
                    msk = msk if masked else None  # no mask: every entry of the view is sent
            if msk is None and mask_is_sent:
                self._keep_rows(full, mask, adj.seg.counts, adj)  # a view of exactly the senders' entries
        if op == "count" or op == "sum" and elem == "int" and isinstance(value, (int, xp.integer)):
            # counts (times a constant: int64 wrap-around as a sum); with a mask, one float mat-vec
            # (exact below 2**53 entries per row) is the fastest way to count
            if msk is None:
                cnt = adj.seg.counts.astype(xp.int64)
            else:
                cnt = xp.rint(adj.matrix("f") @ msk.astype(xp.float64)).astype(xp.int64)
                if mask_is_sent:
                    self._keep_rows(full, mask, cnt, adj)
            return cnt if op == "count" else cnt * xp.int64(value)
        if op in ("count", "avg", "sum"):
            kind = "f" if (op == "avg" or v.dtype.kind == "f") else "i"
            dt = xp.float64 if kind == "f" else xp.int64
            # a sum of narrowed messages gathers their 4 bytes and adds them as float64 (the same bits)
            xs = v if op == "sum" and v.dtype == xp.float32 else v.astype(dt, copy=False)
            if msk is not None:
                xs = bk.select(msk, xs, xs.dtype.type(0))
            total = adj.matrix(kind) @ xs
            if op == "sum":
                return total.astype(bk.dtype(elem), copy=False)
            cnt = adj.seg.counts if msk is None else adj.matrix("i") @ msk.astype(xp.int64)
            return bk.mean(total, cnt)
        if op in ("min", "max") and elem in ("int", "float", "vid") and v.dtype.kind in "iuf":
            if recv is not None and bk.is_array(recv) and adj.rows is None and adj.entries >= 4 * len(recv):
                # a receiver filter whose rows hold few entries: reduce those rows alone (where rows are
                # few beside the entries: making the view costs a pass over every row)
                adj = adj.of_rows(recv.astype(bool, copy=False), self.RECV_ROWS_BELOW) or adj
            return self._pull_minmax(op, v, msk, adj, elem)
        if op in ("argmin", "argmax") and v.dtype.kind in "iub":
            packed = self._packed_arg(op, v, msk, adj)
            if packed is not None:
                return packed
        if op == "mode":  # counted per row through the senders, where the backend has the kernel
            got = bk.pull_modes(adj.seg.indptr, adj.nbr, v, msk, elem)
            if got is not None:
                return got
        ids = adj.nbr_ids if op in ("argmin", "argmax") else None
        return bk.seg_reduce(adj.seg, op, bk.gather(v, adj.nbr), None if msk is None else bk.gather(msk, adj.nbr),
                             elem, ids)

    def _view_rows(self, recv, known: Known | None) -> tuple:
        """(the receivers a view must hold, bool per owned vertex, or None: all; the program array they
        come from): `known` when it leaves some out (its rows' counts are then the messages: see
        _count_known), else `recv`."""
        if known is not None and len(known.rows) < self.n:
            return known.owned, known.array
        if recv is not None and self.bk.is_array(recv):
            return recv.astype(bool, copy=False), recv
        return None, None

    def _any_in(self, adj: Adjacency, x, rows=None):
        """Per receiver: does any sender along its entries have `x`?  Pulled with early exit (only over
        `rows` when given: the others stay False); when the rows still unresolved after the first rounds
        hold more entries than the senders with `x` have, those senders push instead (same answer at
        every receiver, less work)."""
        xp = self.xp
        if not adj.entries:
            return xp.zeros(self.n, dtype=bool)
        senders, lens, work = self._send_work(adj, x)
        found = self.bk.any_pull(adj.seg, adj.nbr, x, budget=work, rows=rows)
        if found is not None:
            return found
        indptr, recv, _eid = adj.transpose()
        out = xp.zeros(self.n, dtype=bool)
        out[recv[self.bk.expand_ranges(indptr[senders], lens)]] = True
        return out

    def _pull_minmax(self, op: str, v, msk, adj: Adjacency, elem: str):
        """min/max pulled in one gather: senders outside the mask carry the identity, so every entry
        can be reduced as it is; only rows left at the identity are checked for being empty."""
        xp, bk = self.xp, self.bk
        dt = xp.dtype(bk.dtype(elem))
        vv = v.astype(dt, copy=False)
        ident = bk.identity(op, dt)
        ufunc = xp.minimum if op == "min" else xp.maximum
        i32 = xp.iinfo(xp.int32)
        ident32 = int(i32.max if op == "min" else i32.min)
        v32 = bk.narrow_int32(vv, msk, ident32) if dt.kind == "i" and len(vv) and adj.entries > len(vv) else None
        at_ident = -1  # (unknown)
        if v32 is not None:
            # values strictly inside int32: gather and reduce half the bytes; the int32 identity
            # cannot be a value, so it maps back to the int64 one exactly
            r, at_ident = bk.widen_int32(adj.gather_reduce(ufunc, v32, ident32), ident32, ident)
        else:
            if msk is not None:
                vv = bk.select(msk, vv, dt.type(ident))
            r = adj.gather_reduce(ufunc, vv, ident)
        empty_val = bk.empty_value(op, elem)
        if empty_val != ident and at_ident != 0:  # vid: an empty row is -1, not the identity
            rows = bk.nonzero(r == ident)
            if len(rows):
                if msk is None:
                    empty = adj.seg.counts[rows] == 0
                else:
                    empty = ~bk.rows_with_any(adj.seg.indptr, rows, adj.nbr, msk)
                r[rows[bk.nonzero(empty)]] = empty_val
        return r

    def _packed_arg(self, op: str, v, msk, adj: Adjacency):
        """argmin/argmax of small integers in one pass: each sender's (value, ID rank) packed into one
        int64 key, so the smallest key is the best value with ties to the smaller original ID."""
        xp, bk, lg = self.xp, self.bk, self.lg
        ne = lg.n_ext
        if ne >= 2**31 or len(v) == 0:
            return None
        lo, hi = int(bk.item(v.min())), int(bk.item(v.max()))
        if hi - lo >= 2**31:
            return None
        cache = lg.cache
        if cache.id_rank is None:  # rank of each ext vertex by original ID
            order = xp.argsort(lg.ext_ids, kind="stable")
            cache.id_rank = xp.empty(ne, dtype=xp.int64)
            cache.id_rank[order] = xp.arange(ne, dtype=xp.int64)
            cache.rank_id = lg.ext_ids[order]
        val = (v.astype(xp.int64) - lo) if op == "argmin" else (hi - v.astype(xp.int64))
        out = xp.full(self.n, -1, dtype=xp.int64)
        if (hi - lo + 1) * ne < 2**31 - 1:  # the keys fit in int32: val * ne + rank, half the bytes to move
            key32 = (val * ne + cache.id_rank).astype(xp.int32)
            none32 = xp.iinfo(xp.int32).max  # larger than every key
            if msk is not None:
                key32 = bk.select(msk, key32, xp.int32(none32))
            best32 = adj.gather_reduce(xp.minimum, key32, none32)
            found = bk.nonzero(best32 != none32)
            out[found] = cache.rank_id[best32[found].astype(xp.int64) % ne]
            return out
        int64_max = xp.iinfo(xp.int64).max
        key = (val << 32) | cache.id_rank
        if msk is not None:
            key = bk.select(msk, key, xp.int64(int64_max))
        best = adj.gather_reduce(xp.minimum, key, int64_max)
        found = bk.nonzero(best != int64_max)
        out[found] = cache.rank_id[best[found] & 0xFFFFFFFF]
        return out


def _csr(lg, side: str) -> tuple:
    """(indptr, nbr, eid) of the `side` ("in" or "out") adjacency of a graph part."""
    return getattr(lg, f"{side}_indptr"), getattr(lg, f"{side}_nbr"), getattr(lg, f"{side}_eid")
