"""One direction of a rank's adjacency (CSR over owned receivers, senders in ext index), its
restricted views, and the adjacency entries a neighbourhood head is evaluated over; the union of
both directions (`allnvals`, `nbrs`), and the edge lookups of the edge tests `(a, b) in A`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from g2pl.runtime.backend import Array, Backend


class Adjacency:
    """CSR rows = owned receiving vertices, `nbr` = sender of each entry (ext index), `eid` its edge."""

    #: restricted views kept per adjacency (each: a sender mask and its entries)
    VIEWS_KEPT = 2

    def __init__(self, bk: Backend, indptr, nbr, eid, ext_ids,
                 reverse: tuple | Callable[[], tuple] | None = None, edges: EdgeIndex | None = None) -> None:
        self.bk = bk
        self.edges = edges  # the part's edge lookups (edge tests per entry), None for a view
        self._tests: dict[str, Any] = {}  # edge-test position -> the edge of every entry (see edge_at)
        self.seg = bk.segments(indptr)
        self.nbr = nbr
        self._eid = eid  # an array, None, or a callable giving it on first read (a device part uploads then)
        self._ext_ids = ext_ids
        self._nbr_ids = None
        self._indptr = indptr
        self._n_ext = len(ext_ids)
        self._mats: dict[str, Any] = {}
        self._blocks: Any = False  # the backend's column_blocks, made on first use (False: not yet)
        # (indptr over senders, receivers, edges) when the graph already has it, or a callable giving it
        self._reverse = reverse
        self._sender_counts = None
        self._views: list[tuple[Any, Adjacency]] = []  # (sender mask, its restricted view), newest last
        self._sighted: list[Any] = []  # sender masks few enough for a view, seen once, no view made yet
        self._last: tuple | None = None  # (last sender mask, pulls with it in a row, the previous mask's)
        # a view: the receivers whose rows it holds (bool per row; None: every row), the program array they
        # come from, and its senders' entries in all rows
        self.rows, self.rows_key, self.work = None, None, len(nbr)
        # for `edge_values`: (edge array, its values in entry order), and the arrays read once lately
        self._edge_vals: tuple[Any, Any] | None = None
        self._edge_seen: list[Any] = []

    @property
    def eid(self):
        """Local edge index of each entry (read only by programs that touch edges or push)."""
        if callable(self._eid):
            self._eid = self._eid()
        return self._eid

    def sender_counts(self):
        """Adjacency entries per (ext) sender: the records it sends in one exchange."""
        if self._sender_counts is None:
            if self._reverse is None:  # not transposed (yet): a count of the entries, not a transpose's copy
                self._sender_counts = self.bk.bincount(self.nbr, minlength=self._n_ext)
            else:
                self._sender_counts = self.bk.xp.diff(self.transpose()[0])
        return self._sender_counts

    def transpose(self, eids: bool = False) -> tuple:
        """(indptr over ext senders, receivers, edges): each sender's entries, for pushing.

        One rank: the other CSR direction of the graph is exactly this.  Several
        ranks: built once in linear time (CSR -> CSC) including ghost senders, at first
        without the edges (None), which only pushes whose heads read entries need (`eids`):
        a BFS push keeps one index array per entry instead of two.
        """
        if callable(self._reverse):
            self._reverse = self._reverse()
        if self._reverse is None:
            self._reverse = self.bk.transpose(self._indptr, self.nbr, None, self._n_ext)
        if eids and self._reverse[2] is None:
            indptr, recv, _none = self._reverse
            self._reverse = (indptr, recv, self.bk.transpose(self._indptr, self.nbr, self.eid, self._n_ext)[2])
        return self._reverse

    def matrix(self, kind: str):
        """The adjacency as a sparse matrix of ones (rows: receivers, columns: ext senders)."""
        if kind not in self._mats:
            self._mats[kind] = self.bk.csr_matrix(self._indptr, self.nbr, self._n_ext, kind, self.blocks())
        return self._mats[kind]

    def blocks(self):
        """The backend's `column_blocks` of the entries (shared by every reduction over them), or None."""
        if self._blocks is False:
            self._blocks = self.bk.column_blocks(self._indptr, self.nbr, self._ext_ids)
        return self._blocks

    def gather_reduce(self, ufunc, table, fill):
        """Per receiver, `ufunc` reduced over table[sender] of its entries (`fill` where none)."""
        return self.seg.gather_reduce(ufunc, table, self.nbr, fill, self.blocks())

    def forget_views(self) -> None:
        self._views.clear()
        self._sighted.clear()
        self._last = None

    def restricted(self, msk, work: int, frac: float, reused: bool, rows=None,
                   rows_key=None) -> tuple[Adjacency, bool] | None:
        """A smaller adjacency holding every entry whose sender has `msk` (rows and CSR order kept), and
        whether its entries still need the mask; None when the full adjacency (with the mask) is best.
        `rows` (bool per receiver, or None: all): only these receivers' results are used (the receivers
        pass), so a view holds only their rows' entries and leaves the others empty; `rows_key`, the
        program array they come from (program arrays are never written once made: the same one is
        the same receivers).

        A reduction over a view gives the same result as the masked reduction over all entries at every
        receiver it holds (the left-out entries are neutral; sums start from +0.0, so even float sums
        are bit-identical).  The last few views are kept with the sender masks (and receivers) they were
        made for: a sender set that is a subset of one (it shrinks from superstep to superstep, or
        repeats), with its receivers among the view's, uses that view, with the mask while its senders
        still have more than `frac` of the view's entries, else a new view filtered from it (cost
        proportional to the old view: views are made only when the work has shrunk by 1/frac).  From all
        entries, a view is made when `work` (the senders' entries) is at most `frac` of them and the
        senders are within a set seen so before, or at once when the last sender set served several
        pulls (`reused`, from `count_use`; see `_first_sighting`).
        """
        xp = self.bk.xp
        base, bk = self, -1
        for k, (cm, view) in enumerate(self._views):
            if view.entries < base.entries and self._serves(cm, view, msk, rows, rows_key):
                base, bk = view, k
        if base is not self:
            self._views.append(self._views.pop(bk))  # most recently used last
            if work == base.work:  # senders within the view's with as many entries: the same ones
                return base, False
            if work > frac * base.entries:
                return base, True
        elif work > frac * self.entries or self._first_sighting(msk, reused):
            return None
        r = None if rows is None else self.bk.nonzero(rows)
        if r is not None and int(self.bk.item(base.seg.counts[r].sum())) * 2 <= base.entries:
            pos = self.bk.expand_ranges(base.seg.indptr[r], base.seg.counts[r])  # the receivers' entries
            keep = pos[self.bk.nonzero(self.bk.gather(msk, base.nbr[pos]))]
        else:  # most receivers: one pass over every entry, and the view holds every row
            keep, rows = self.bk.nonzero(self.bk.gather(msk, base.nbr)), None
        owner = base.owner[keep]  # rows of the kept entries (ascending): the view's row structure
        indptr = xp.zeros(self.seg.n + 1, dtype=xp.int64)
        xp.cumsum(self.bk.bincount(owner, minlength=self.seg.n), out=indptr[1:])
        view = Adjacency(self.bk, indptr, base.nbr[keep], None, self._ext_ids)  # no edge ids (unused)
        view.seg._owner = owner
        view.work = work
        if rows is not None:
            view.rows, view.rows_key = rows.copy(), rows_key
        self._views.append((msk.copy(), view))
        del self._views[:-self.VIEWS_KEPT]
        return view, False

    def of_rows(self, rows, frac: float) -> Adjacency | None:
        """A view holding every entry of the receivers where `rows` (bool per row) holds and no other
        (the others' results go unused: a receiver filter), or None when those rows hold more than
        `frac` of the entries.  Made anew per call: O(the rows' entries + rows)."""
        bk = self.bk
        r = bk.nonzero(rows)
        counts = self.seg.counts[r]
        if int(bk.item(counts.sum())) > frac * self.entries:
            return None
        xp = bk.xp
        indptr = xp.zeros(self.seg.n + 1, dtype=xp.int64)
        indptr[1:][r] = counts
        xp.cumsum(indptr, out=indptr)
        view = Adjacency(bk, indptr, self.nbr[bk.expand_ranges(self.seg.indptr[r], counts)], None, self._ext_ids)
        view.rows = rows
        return view

    def _serves(self, cm, view: Adjacency, msk, rows, rows_key) -> bool:
        """Are the senders of `msk` among `cm`'s (the view's), and the receivers `rows` among the view's
        rows?  One device read."""
        if len(cm) != len(msk) or view.rows is not None and rows is None:
            return False
        xp = self.bk.xp
        out = xp.any(msk > cm)
        if view.rows is not None and (rows_key is None or rows_key is not view.rows_key):
            out = out | xp.any(rows > view.rows)
        return not self.bk.item(out)

    def _within(self, msk, cover) -> bool:
        """Is every sender of `msk` one of `cover`'s?"""
        return len(cover) == len(msk) and not self.bk.item(self.bk.xp.any(msk > cover))

    def count_use(self, msk) -> bool:
        """Counts the masked pulls with the same sender set in a row (also those where every entry's
        sender sends, which need no view); did the previous set serve several?  (wcc pulls twice with
        each set, in- and out-neighbours: one adjacency on an undirected graph; matching pulls its
        Deps and argmin from each set.)"""
        xp, last = self.bk.xp, self._last
        if last is not None and len(last[0]) == len(msk) and not self.bk.item(xp.any(last[0] != msk)):
            self._last = (last[0], last[1] + 1, last[2])
        else:
            self._last = (msk.copy(), 1, 0 if last is None else last[1])
        return self._last[2] > 1

    def _first_sighting(self, msk, reused: bool) -> bool:
        """True (and `msk` remembered) unless `msk` is within a sender set seen before without a view,
        or the previous sender set was `reused` (then this one likely is too).

        Making a view from all entries costs about two masked passes over them (the senders' flag per
        entry, its nonzero, the kept entries and their rows), so it pays only when reused: the first
        time, one masked pass is cheaper (min-label CC on kron:20 pulls over a 12% view exactly once,
        then pushes).  A set within one seen before (a shrinking frontier) gets its view."""
        if reused or any(self._within(msk, seen) for seen in self._sighted):
            self._sighted.clear()
            return False
        self._sighted.append(msk.copy())
        del self._sighted[:-self.VIEWS_KEPT]
        return True

    #: edge arrays read once that `edge_values` remembers (a head may read several per round)
    EDGE_SEEN_KEPT = 2

    def kept_edge_values(self, arr):
        """`arr[eid]` in entry order if the adjacency keeps it already (see `edge_values`), else None;
        counts as no read."""
        got = self._edge_vals
        return got[1] if got is not None and got[0] is arr else None

    def edge_values(self, arr, first: bool):
        """`arr[eid]` for every entry, in entry order, once the same edge array is read in a second
        evaluation (`first`: an evaluation's first read; its later blocks do not count); else None.

        A head that reads an edge array per entry (SSSP's `d + Weight[e]`, every Bellman-Ford round)
        otherwise gathers it at each entry's edge, a random read per entry: the kept copy makes it a
        contiguous read, at one value per entry of memory.  An array read only once (a new one every
        round) keeps gathering.  Kept by identity, one array at a time: program and graph arrays are
        never written once made."""
        kept = self.kept_edge_values(arr)
        if kept is not None:
            return kept
        if not first:
            return None
        seen = self._edge_seen
        k = next((i for i, a in enumerate(seen) if a is arr), -1)
        if k < 0:
            seen.append(arr)
            del seen[:-self.EDGE_SEEN_KEPT]
            return None
        del seen[k]
        self._edge_vals = (arr, arr[self.eid])
        return self._edge_vals[1]

    def edge_at(self, pos: str, own=None, nbr=None):
        """The local edge nbr -> own (`pos` "nbr_self") or own -> nbr ("self_nbr") of each entry (-1
        where there is none); without `own`/`nbr`, of every entry (worked out once)."""
        assert self.edges is not None  # (a view's entries are never tested)
        if own is not None:
            return self.edges.find(own, nbr, pos == "self_nbr")
        got = self._tests.get(pos)
        if got is None:
            got = self._tests[pos] = self.edges.find(self.owner, self.nbr, pos == "self_nbr")
        return got

    @property
    def owner(self):
        return self.seg.owner

    @property
    def entries(self) -> int:
        return len(self.nbr)

    @property
    def nbr_ids(self):
        if self._nbr_ids is None:
            self._nbr_ids = self.bk.gather(self._ext_ids, self.nbr)
        return self._nbr_ids


class Pushed(NamedTuple):
    """The active senders' adjacency entries, when the senders push (Neighbourhood._pushed)."""

    own: Array  # receiver (row) of each entry
    nbr: Array  # sender of each entry (ext index)
    eid: Array | None  # edge of each entry (None: a head that reads no entries does not need it)


class Entries:
    """The adjacency entries a neighbourhood head is evaluated over (`E` in generated code): every
    entry (pull), only the active senders' (push), or one block of whole rows (`rows` = (first row,
    end row, first entry, end entry)).  Sender `nbr` (ext index), receiver `own`, edge `eid`; their
    original IDs; `edge(arr)` reads an edge array at them; `seg`, the rows (pull only).  The blocks
    after the first of one evaluation are `later_block`: their random draws are the first block's
    (draws are keyed by edge, so a block draws what one evaluation over all entries would)."""

    def __init__(self, adj: Adjacency, ext_ids, ids, push: Pushed | None = None, rows: tuple | None = None,
                 later_block: bool = False) -> None:
        self.adj = adj
        self.later_block = later_block
        self.pushed = push is not None
        self._rows = rows
        self._own = None
        if push is not None:
            self._own, self.nbr, self.eid = push.own, push.nbr, push.eid
        elif rows is None:
            self.nbr, self.eid = adj.nbr, adj.eid
        else:
            lo, hi = rows[2], rows[3]
            self.nbr = adj.nbr[lo:hi]
            self.eid = None if adj.eid is None else adj.eid[lo:hi]
        self._ext_ids, self._ids = ext_ids, ids

    def __len__(self) -> int:
        return len(self.nbr)

    @property
    def own(self):
        """Receiver (row) of each entry: made on first use (most heads read only senders and edges)."""
        if self._own is None:
            if self._rows is None:
                self._own = self.adj.owner
            else:
                xp, (a, b) = self.adj.bk.xp, self._rows[:2]
                self._own = self.adj.bk.repeat(xp.arange(a, b, dtype=xp.int64), self.adj.seg.counts[a:b])
        return self._own

    @property
    def seg(self):
        """The rows these entries make up (a pull: all rows, or the block's)."""
        if self._rows is None:
            return self.adj.seg
        a, b, lo, _hi = self._rows
        return self.adj.bk.segments(self.adj.seg.indptr[a:b + 1] - lo)

    @property
    def nbr_ids(self):
        if not self.pushed and self._rows is None:
            return self.adj.nbr_ids  # every entry: made once per adjacency
        return self.adj.bk.gather(self._ext_ids, self.nbr)

    @property
    def own_ids(self):
        return self._ids[self.own]

    def edge_test(self, arr, pos: str):
        """Edge set `arr` at each entry's edge nbr -> own (`pos` "nbr_self") or own -> nbr ("self_nbr"):
        false where there is no such edge (the edge tests `(u, v) in A` of a neighbourhood head)."""
        adj = self.adj
        if self.pushed or self._rows is not None:
            eid = adj.edge_at(pos, self.own, self.nbr)
        else:
            eid = adj.edge_at(pos)
        return edge_set_at(adj.bk, arr, eid)

    def edge(self, arr):
        """`arr[eid]`; a constant array (the stride-0 weights of an unweighted graph) gives a stride-0
        view of the same shape instead of a gather (4.7 ms per 7.6M entries at kron:18)."""
        eid = self.eid
        assert eid is not None  # (a head that reads edges runs over entries that have them)
        if arr.ndim == 1 and arr.strides[0] == 0 and len(arr):
            return self.adj.bk.xp.broadcast_to(arr[:1], eid.shape)
        if not self.pushed:  # every entry, or a block of rows: the kept copy in entry order, if any
            vals = self.adj.edge_values(arr, not self.later_block)
            if vals is not None:
                return vals if self._rows is None else vals[self._rows[2]:self._rows[3]]
        return arr[eid]


def edge_set_at(bk: Backend, arr, eid):
    """Edge set `arr` (a bool per local edge, or one bool for all) at edges `eid`; false at -1."""
    xp = bk.xp
    ok = eid >= 0
    if not bk.is_array(arr):
        return ok if bool(arr) else xp.zeros(len(eid), dtype=bool)
    if not len(arr):
        return xp.zeros(len(eid), dtype=bool)
    return xp.logical_and(ok, arr[xp.maximum(eid, 0)].astype(bool, copy=False))


class EdgeIndex:
    """Which local edge joins an owned vertex x and an ext vertex y, x -> y or y -> x: each direction's
    (x, y) pairs as sorted keys x * n_ext + y, with their edges, made on first use.  A rank holds every
    edge with an owned endpoint (partition.py), so every lookup the edge tests make is local."""

    def __init__(self, bk: Backend, lg) -> None:
        self.bk, self.lg = bk, lg  # (no module attribute: a graph's caches are pickled with it)
        self._keys: dict[bool, tuple] = {}

    def _sorted(self, out: bool) -> tuple:
        got = self._keys.get(out)
        if got is None:
            xp, lg, bk = self.bk.xp, self.lg, self.bk
            side = "out" if out and lg.directed else "in"
            indptr, nbr, eid = (getattr(lg, f"{side}_{k}") for k in ("indptr", "nbr", "eid"))
            rows = bk.repeat(xp.arange(lg.n, dtype=xp.int64), indptr[1:] - indptr[:-1])
            keys = rows * lg.n_ext + nbr.astype(xp.int64)
            order = xp.argsort(keys)
            got = self._keys[out] = (keys[order], eid[order].astype(xp.int64))
        return got

    def find(self, x, y, out: bool):
        """The local edge x -> y (`out`) or y -> x of each owned x and ext y; -1 where there is none.
        On an undirected graph either is the edge joining them."""
        xp = self.bk.xp
        keys, eids = self._sorted(out)
        if not len(keys):
            return xp.full(len(x), -1, dtype=xp.int64)
        q = x.astype(xp.int64) * self.lg.n_ext + y.astype(xp.int64)
        p = xp.minimum(xp.searchsorted(keys, q), len(keys) - 1)
        return xp.where(keys[p] == q, eids[p], -1)

    def reverse(self):
        """Each local edge's reverse (v -> u of u -> v; -1 where there is none); on an undirected graph
        the edge itself.  Looked up at whichever endpoint is owned."""
        xp, lg = self.bk.xp, self.lg
        if not lg.directed:
            return xp.arange(lg.m, dtype=xp.int64)
        src, dst = lg.src, lg.dst
        at_src = src < lg.n  # src owned: the edge dst -> src is in src's in-row
        out = xp.full(lg.m, -1, dtype=xp.int64)
        k = self.bk.nonzero(at_src)
        out[k] = self.find(src[k], dst[k], False)
        k = self.bk.nonzero(~at_src)  # else dst is owned: the edge dst -> src is in its out-row
        out[k] = self.find(dst[k], src[k], True)
        return out


def union_csr(bk: Backend, lg, distinct: bool) -> tuple[Array, Array, Array]:
    """(indptr, nbr, eid) of the in- and out-adjacency together: per owned row its in-entries, then its
    out-entries, each in the order they have (so the same on any number of ranks).  `distinct`: a
    neighbour linked both ways once, by its out-edge (`nbrs`); else every entry (`allnvals`)."""
    xp, n = bk.xp, lg.n
    ip_in, nb_in, ei_in = lg.in_indptr, lg.in_nbr, lg.in_eid
    ip_out, nb_out, ei_out = lg.out_indptr, lg.out_nbr, lg.out_eid
    c_in, c_out = ip_in[1:] - ip_in[:-1], ip_out[1:] - ip_out[:-1]
    ar = xp.arange(n, dtype=xp.int64)
    r_in, r_out = bk.repeat(ar, c_in), bk.repeat(ar, c_out)
    at_in = xp.arange(len(nb_in), dtype=xp.int64) - ip_in[r_in]  # position within the row
    if distinct and len(nb_in) and len(nb_out):
        k_out = xp.sort(r_out * lg.n_ext + nb_out.astype(xp.int64))
        k_in = r_in * lg.n_ext + nb_in.astype(xp.int64)
        p = xp.minimum(xp.searchsorted(k_out, k_in), len(k_out) - 1)
        keep = bk.nonzero(k_out[p] != k_in)  # in-neighbours that are not out-neighbours too
        r_in, nb_in, ei_in = r_in[keep], nb_in[keep], ei_in[keep]
        c_in = bk.bincount(r_in, minlength=n)
        first = xp.cumsum(c_in) - c_in
        at_in = xp.arange(len(r_in), dtype=xp.int64) - first[r_in]
    indptr = xp.zeros(n + 1, dtype=xp.int64)
    xp.cumsum(c_in + c_out, out=indptr[1:])
    pos_in = indptr[r_in] + at_in
    pos_out = indptr[r_out] + c_in[r_out] + (xp.arange(len(nb_out), dtype=xp.int64) - ip_out[r_out])
    total = len(r_in) + len(r_out)
    nbr = xp.empty(total, dtype=xp.result_type(nb_in.dtype, nb_out.dtype))
    eid = xp.empty(total, dtype=xp.result_type(ei_in.dtype, ei_out.dtype))
    nbr[pos_in], nbr[pos_out] = nb_in, nb_out
    eid[pos_in], eid[pos_out] = ei_in, ei_out
    return indptr, nbr, eid
