"""Vertex values at edge endpoints (the `endpoints` verb), edge sets of endpoint memberships, and
the member lists of sparse bool arrays that both these and the sparse `vmap` reuse."""

from __future__ import annotations

import sys
from typing import Any, Literal

from g2pl.contract import Spec
from g2pl.runtime.adjacency import EdgeIndex, edge_set_at
from g2pl.runtime.backend import Array, Backend
from g2pl.runtime.stats import Stats, Tally
from g2pl.runtime.transport import Transport


class Members:
    """Bool arrays whose member count (and index list, when listed) is known, by identity: program
    values are never written once made, so a list made once serves every later reader."""

    KEPT = 4

    def __init__(self, bk: Backend) -> None:
        self.bk, self.xp = bk, bk.xp
        self._known: list[tuple] = []  # (array, member count, index list or None)

    def remember(self, arr, idx, count: int | None = None) -> None:
        self._known = [x for x in self._known if x[0] is not arr][-(self.KEPT - 1):]
        self._known.append((arr, len(idx) if idx is not None else count, idx))

    def known(self, arr) -> tuple:
        """(member count, index list) remembered for `arr`: None where not known."""
        for a, count, idx in self._known:
            if a is arr:
                return count, idx
        return None, None

    def if_few(self, mask):
        """Indices where the bool array `mask` holds when they are at most 1/8 of it, else None;
        counted and listed once per array (every caller asks the same of one array)."""
        count, idx = self.known(mask)
        if count is None:
            count = int(self.bk.item(self.xp.count_nonzero(mask)))
        if count * 8 > len(mask):
            if idx is None:
                self.remember(mask, None, count)
            return None
        if idx is None:
            idx = self.bk.nonzero(mask)
            self.remember(mask, idx)
        return idx


def _free_refs() -> int:
    """What sys.getrefcount reports for an array held only by a (buffer, index) tuple in a list."""
    slots = [(object(), None)]
    return sys.getrefcount(slots[0][0])


_FREE_REFS = _free_refs()


class Counted:
    """The edges a send condition is evaluated at (`_e` in generated code): their endpoints' original
    IDs, made on first use by `ids(side)`."""

    def __init__(self, ids) -> None:
        self._ids = ids
        self._made: dict[str, Any] = {}

    def _get(self, side: str):
        if side not in self._made:
            self._made[side] = self._ids(side)
        return self._made[side]

    @property
    def src_ids(self):
        return self._get("src")

    @property
    def dst_ids(self):
        return self._get("dst")


class Edges:
    """Endpoint reads and edge sets over one rank's local edges."""

    def __init__(self, bk: Backend, lg, transport: Transport, members: Members, tally: Tally,
                 stats: Stats) -> None:
        self.bk, self.xp, self.lg = bk, bk.xp, lg
        self.n, self.m = lg.n, lg.m
        self.transport, self.members, self.tally, self.stats = transport, members, tally, stats
        self._within: dict[int, tuple[list[Array], Array]] = {}  # per exchange spec: see within()
        self._deg = None  # see _degrees()
        self._owned: tuple[int, int] | Literal[False] | None = None  # see _owned_span() (False: not one slice)

    def entries(self, x, k: int):
        return x if self.bk.is_array(x) else self.xp.full(k, x)

    def reverse(self, arr, index: EdgeIndex):
        """Edge set `arr` at each local edge's reverse, false where there is none (the reverses are
        looked up once per graph part: both endpoints' edges are local, so no exchange)."""
        c = self.lg.cache
        if c.reverse_edge is None:
            c.reverse_edge = index.reverse()
        return edge_set_at(self.bk, arr, c.reverse_edge)

    def endpoints(self, spec: Spec, fields: tuple, need=None, keep=None, sent=None) -> list:
        """The verb: each read of `spec.reads` (field at src or dst) per local edge, or, for an edgeset
        spec, the one edge set where every read holds; a delta spec appends the new kept copies."""
        self.tally.exchanged = True
        arrays = tuple(self.entries(a, self.n) for a in fields)
        if spec.delta and keep is not None and all(k is not None for k in keep):
            ext = self._delta(spec, arrays, keep)
        else:
            ext, _ = self.transport.exchange(spec, arrays, None)
            if spec.counted and sent is None:
                self._count(need)
        if spec.within:
            out = [self.within(spec.id, tuple((ext[k], side) for k, side in spec.reads))]
        elif spec.counted and sent is not None:
            out = self._sent_reads(ext, spec.reads, need, sent)
        else:
            out = [self.at_endpoint(ext[k], side, need) for k, side in spec.reads]
        if spec.delta:  # copies: the program's arrays are its own
            out += [e.copy() if e is a else e for e, a in zip(ext, arrays)]
        return out

    def _delta(self, spec: Spec, arrays: tuple, keep: tuple) -> list:
        """Ext arrays from the kept copies and the values that changed since (the delta pass): only
        owned vertices whose value differs from their kept copy send, one message per adjacency entry."""
        xp, n = self.xp, self.n
        changed = None
        for a, k in zip(arrays, keep):
            d = _bits_view(a) != _bits_view(k[:n].astype(a.dtype, copy=False))
            changed = d if changed is None else changed | d
        if len(arrays) == 1 and arrays[0].dtype == bool:  # one set: a change is a flip, the presence says it all
            _none, present = self.transport.exchange(spec, (), changed)
            ext = [xp.logical_xor(keep[0], present) if self.lg.size > 1 else arrays[0]]
        else:
            ext, present = self.transport.exchange(spec, arrays, changed)
            if self.lg.size > 1:
                ext = [xp.where(present, e, k) for e, k in zip(ext, keep)]
        if spec.counted:
            self.tally.pending.append(xp.sum(self._degrees() * changed))
        return ext

    def _degrees(self):
        """Adjacency entries of each owned vertex (in and out on directed graphs): the messages it sends
        along every edge it has."""
        if self._deg is None:
            lg, xp = self.lg, self.xp
            self._deg = xp.diff(lg.in_indptr[:self.n + 1])
            if lg.directed:
                self._deg = self._deg + xp.diff(lg.out_indptr[:self.n + 1])
        return self._deg

    def _count(self, edges) -> None:
        """2 records per local edge owned here where `edges` holds (all edges when None)."""
        xp, lg = self.xp, self.lg
        if edges is None:
            k = self.m if lg.size == 1 else int(self.bk.item(xp.count_nonzero(lg.edge_owned)))
        elif lg.size == 1:  # every local edge is owned
            k = int(self.bk.item(xp.count_nonzero(self.entries(edges, self.m))))
        else:
            k = int(self.bk.item(xp.count_nonzero(self.entries(edges, self.m) & lg.edge_owned)))
        self.tally.messages += 2 * k

    def _sent_reads(self, ext: list, reads: tuple, need, sent) -> list:
        """The endpoint reads (as `at_endpoint` makes them), counting one record per read and local
        edge owned here where `need` and the read's send condition hold.  `sent(E, *values)` gives each
        read's condition (or None: always sent) from arrays at the counted edges: the endpoints' IDs
        (`Counted` E) and the values read there (receivers.sent_conditions: nothing else).  They are
        evaluated at the owned edges only (one slice of the local edges when, as partitions make them,
        they are in global (u, v) order: a rank owns the edges whose u it owns); when the needed edges
        are few, at those only, from the values just gathered for them."""
        xp, bk, lg = self.xp, self.bk, self.lg
        span = self._owned_span()
        lo, hi = span if span is not None else (0, self.m)
        idx = None if need is None else self._needed_edges(need)
        if idx is None:
            out = [self.at_endpoint(ext[k], side, need) for k, side in reads]
            base = None  # every owned edge counts
            if need is not None and self.members.known(need)[0] != self.m:  # (not every edge: a mask)
                base = self.entries(need, self.m).astype(bool, copy=False)[lo:hi]
            if span is None:  # owned edges scattered among the others
                base = lg.edge_owned if base is None else base & lg.edge_owned
            conds = sent(Counted(lambda side: lg.end_ids(side)[lo:hi]), *(o[lo:hi] for o in out))
            k = hi - lo
        else:
            ends: dict[str, Array] = {}  # side -> that endpoint of each needed edge
            out, vals = [], []
            for f, side in reads:
                if side not in ends:
                    ends[side] = bk.gather(lg.ends(side), idx)
                buf, got = self._sparse_read(ext[f], side, idx, ends[side])
                out.append(buf)
                vals.append(got)
            a, b = 0, len(idx)
            if span is not None and lg.size > 1:
                a, b = (int(bk.item(xp.searchsorted(idx, x))) for x in (lo, hi))
            base = lg.edge_owned[idx] if span is None else None

            def ids(side: str):
                at = ends[side][a:b] if side in ends else bk.gather(lg.ends(side), idx[a:b])
                return bk.gather(lg.ext_ids, at)

            conds = sent(Counted(ids), *(v[a:b] for v in vals))
            k = b - a
        for cond in conds:
            if cond is None:
                self.tally.pending.append(k if base is None else xp.count_nonzero(base))
            else:
                cond = self.entries(cond, k)
                self.tally.pending.append(xp.count_nonzero(cond if base is None else base & cond))
        return out

    def _owned_span(self) -> tuple[int, int] | None:
        """[lo, hi): the local edges this rank owns, when they are one slice (all of them on one rank);
        None when they are not."""
        if self._owned is None:
            lg = self.lg
            if lg.size == 1:
                self._owned = (0, self.m)
            else:
                own = self.bk.nonzero(lg.edge_owned)
                lo = int(self.bk.item(own[0])) if len(own) else 0
                contiguous = not len(own) or int(self.bk.item(own[-1])) == lo + len(own) - 1
                self._owned = (lo, lo + len(own)) if contiguous else False
        return self._owned or None

    def at_endpoint(self, ext, side: str, need=None):
        """Vertex values (ext array) at each local edge's `side` endpoint; with `need`, only where the
        values will be used (elsewhere zeros), gathering just those edges when they are few."""
        ends = self.lg.ends(side)
        if need is not None:
            idx = self._needed_edges(need)
            if idx is not None:
                return self._sparse_read(ext, side, idx, self.bk.gather(ends, idx))[0]
        if self.lg.size == 1 and self.bk.is_array(ext) and len(ext) == self.n:
            return self._endpoint_update(ext, side, ends)
        return self.bk.gather(ext, ends)

    def _sparse_read(self, ext, side: str, idx, ends_at) -> tuple:
        """(an edge array of `ext` at each edge's `side` endpoint at `idx` only, zeros elsewhere; those
        values), `ends_at` being that endpoint of the edges `idx`."""
        vals = self.bk.gather(ext, ends_at)
        out = self.sparse_buffer(("at_endpoint", side), self.m, ext.dtype, idx)
        out[idx] = vals
        return out, vals

    def _endpoint_update(self, ext, side: str, ends):
        """`ext[ends]` (one rank), updated from an earlier answer: programs usually read the same vertex
        array at edge endpoints every round while only a few vertices change.  Two (snapshot, answer)
        buffers are kept per side; one the program no longer holds is brought up to date by
        re-gathering only the edges at the vertices whose value changed (bitwise) since its snapshot."""
        lg = self.lg
        slots = lg.cache.endpoint_bufs.setdefault((side, ext.dtype.str), [])
        for k in range(len(slots)):
            if sys.getrefcount(slots[k][1]) != _FREE_REFS:
                continue
            snap, out = slots[k]
            changed = self.bk.nonzero(_bits_view(ext) != _bits_view(snap))
            # edges at a changed vertex: its out-CSR (src) / in-CSR (dst) row lists them (undirected:
            # every incident edge, a superset)
            indptr, eid = (lg.out_indptr, lg.out_eid) if side == "src" else (lg.in_indptr, lg.in_eid)
            starts = indptr[changed]
            lens = indptr[changed + 1] - starts
            if int(self.bk.item(lens.sum())) * 16 < self.m:  # scattered re-gathers cost several times a sequential one
                e = eid[self.bk.expand_ranges(starts, lens)]
                out[e] = self.bk.gather(ext, ends[e])
            else:
                self.bk.take_into(ext, ends, out)
            snap[changed] = ext[changed]
            slots[k] = (snap, out)
            return out
        out = self.bk.gather(ext, ends)
        if len(slots) < 2:
            slots.append((ext.copy(), out))
        return out

    def sparse_buffer(self, key, size: int, dtype, idx):
        """A zero array of `size` about to be written at `idx` only: one of two buffers kept per `key`
        when the program no longer holds it (only its previously written entries are cleared), else a
        new one.  Saves zeroing (and faulting in) a full-length array every superstep."""
        xp = self.xp
        slots = self.lg.cache.sparse_bufs.setdefault((key, size, xp.dtype(dtype).str), [])
        for k in range(len(slots)):
            if sys.getrefcount(slots[k][0]) == _FREE_REFS:  # nothing but this list holds it
                buf, prev = slots[k]
                buf[prev] = 0
                slots[k] = (buf, idx)
                return buf
        buf = xp.zeros(size, dtype=dtype)
        if len(slots) < 2:
            slots.append((buf, idx))
        return buf

    def _needed_edges(self, need):
        """Indices of the edges where `need` holds when they are few (at most 1/8), else None (one
        superstep usually reads several endpoints under the same `need`: see Members.if_few)."""
        if self.xp.ndim(need) == 0:  # a constant (a scalar or 0-d array): every edge, or none
            return None if need else self.xp.zeros(0, dtype=self.xp.int64)
        return self.members.if_few(need)

    def within(self, key: int, parts: tuple):
        """Bool per local edge: the edge's endpoint is in the set for every (ext bool vertex array,
        side) of `parts` (the edgeset pass).  Such sets usually only shrink from round to round, and
        then so does the answer: when every array is a subset of what it was at this exchange's
        previous run, only the previous answer's edges are checked again (when they are few);
        otherwise every edge is."""
        xp, lg = self.xp, self.lg
        arrs = [self.entries(x, lg.n_ext).astype(bool, copy=False) for x, _side in parts]
        ends = [lg.ends(side) for _x, side in parts]
        prev = self._within.get(key)
        # re-checking a listed edge costs several gathers: worth it while they are a few of all edges
        if (prev is not None and len(prev[1]) * 4 < self.m
                and all(not self.bk.item(xp.any(a > s)) for a, s in zip(arrs, prev[0]))):
            cand = prev[1]
            keep = xp.ones(len(cand), dtype=bool)
            for a, e in zip(arrs, ends):
                keep &= self.bk.gather(a, e[cand])
            members = cand[self.bk.nonzero(keep)]
            out = xp.zeros(self.m, dtype=bool)
            out[members] = True
            self.stats.edge_sets["shrunk"] += 1
        else:
            self.stats.edge_sets["full"] += 1
            if all(self.bk.item(a.all()) for a in arrs):  # every vertex is in every set (as sets usually start)
                out, members = xp.ones(self.m, dtype=bool), None
            else:
                out = self.bk.gather(arrs[0], ends[0])
                for a, e in zip(arrs[1:], ends[1:]):
                    out &= self.bk.gather(a, e)
                members = self.bk.nonzero(out) if self.bk.item(xp.count_nonzero(out)) * 4 < self.m else None
        if members is None:  # too many to list: the next run checks every edge
            self._within.pop(key, None)
        else:
            self._within[key] = ([a.copy() for a in arrs], members)
            self.members.remember(out, members)
        return out

    def mark_endpoints(self, mask, sides: tuple[str, ...]):
        """The owned vertices that are a `sides` endpoint of an edge where `mask` holds."""
        xp = self.xp
        out = xp.zeros(self.n, dtype=bool)
        sel = self.members.known(mask)[1]
        if sel is None:
            sel = self.bk.nonzero(self.entries(mask, self.m))
        for side in sides:
            ends = self.lg.ends(side)[sel]
            out[ends[self.bk.nonzero(ends < self.n)]] = True  # ghost endpoints are marked by the rank that owns them
        return out


def _bits_view(a):
    """The array as unsigned integers of its item size (bitwise comparison: -0.0 != 0.0, NaN == NaN)."""
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a
