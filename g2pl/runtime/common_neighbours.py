"""Common neighbours of edges' endpoints: the `common` verb (triangles, listed vectorized).

One exchange, one superstep: every rank sends the neighbour lists of its
owned vertices (only the edges of `within`, with the edge values the
aggregation reads) to the ranks that mirror them, and the vertex values it
reads to their ghosts.  A rank then holds, for every local edge (u, v), the
whole neighbour lists of u and v, and lists the triangles of its *view*:
its local edges plus the ghost-ghost edges it received.  Every triangle
through a local edge lies in the view, so the rank computes the result of
each of its edges alone.

Listing (undirected graphs): the view's vertices are ranked by (degree,
original ID) and every edge is oriented from lower to higher rank, so a
vertex has at most about sqrt(2m) higher neighbours; each triangle a < b < c
is found once, at its edge (a, b), as c in N+(a) after b with (b, c) an edge.
The (b, c) tests run for all edges at once, in bounded chunks: a
`searchsorted` of the keys b * N + c in the sorted keys of the oriented
edges, with the queries grouped by b so the lookups of one b stay in its
row.  Where the backend has a compiled kernel (`Backend.oriented_triangles`: the NumPy
backend with numba, cpu_kernels.py) the rows are merged instead, as GAPBS's `tc` does: a few
instructions per entry where the lookups cost a dozen array passes each; the triangles are the same.
A plain count needs no more: it adds 1 to each edge of each triangle.
Otherwise every triangle gives its three edges one element each (the edge,
its third vertex w, the edges joining w to the edge's ends) and the
aggregation's head is evaluated over those elements.

Directed graphs: `nvals`/`outnvals` are in- and out-neighbours, so
orientation does not apply; for each edge the shorter of the two lists is
looked up in the other (the same chunked lookups of keys x * N + w).

Results per edge are combined in a fixed order (by edge, then the common
neighbour's original ID) wherever the order could change them (float sums
and means), so they are the same on any number of ranks and on any backend.
"""

from __future__ import annotations

from g2pl.contract import Spec
from g2pl.runtime.backend import Backend
from g2pl.runtime.stats import Tally
from g2pl.runtime.transport import Transport


class Elements:
    """The elements a common-neighbour head is evaluated over (`C` in generated code): per element, the
    local edge `edge`, its endpoints `src`, `dst` and the common neighbour `nbr` (ext vertex indices),
    and the edges `src_nbr`, `dst_nbr` joining them (indices into local + shipped edge values)."""

    def __init__(self, ext_ids, edge, src, dst, nbr, src_nbr, dst_nbr) -> None:
        self.edge, self.src, self.dst, self.nbr, self.src_nbr, self.dst_nbr = edge, src, dst, nbr, src_nbr, dst_nbr
        self._ext_ids = ext_ids

    def __len__(self) -> int:
        return len(self.edge)

    @property
    def src_ids(self):
        return self._ext_ids[self.src]

    @property
    def dst_ids(self):
        return self._ext_ids[self.dst]

    @property
    def nbr_ids(self):
        return self._ext_ids[self.nbr]


class RowHash:
    """Per-row open-addressing hash tables of the oriented edges: row r (a vertex) holds its higher
    neighbours c in a table of its own, a power of two at least twice their number, laid out one after
    the other.  A lookup of (b, c) reads row b's table, which the lookups of one b share (they are
    grouped by b): a cache-resident probe instead of a binary search over every edge."""

    #: multiplier of the hash (Knuth's), and the bits dropped below the slot bits
    MULT, SHIFT = 2654435761, 7

    def __init__(self, bk: Backend, indptr, vals) -> None:
        self.bk, self.xp = bk, bk.xp
        xp = self.xp
        n_rows = len(indptr) - 1
        deg = indptr[1:] - indptr[:-1]
        need = xp.maximum(2 * deg, 1)
        size = xp.ones(n_rows, dtype=xp.int64)
        while n_rows and bk.item(xp.any(size < need)):  # the powers of two: a doubling per bit
            size = xp.where(size < need, 2 * size, size)
        self.mask = size - 1
        self.off = xp.cumsum(size) - size
        total = int(bk.item(size.sum())) if n_rows else 0
        self.key = xp.full(total, -1, dtype=xp.int64)
        self.pos = xp.zeros(total, dtype=xp.int64)
        rows = bk.repeat(xp.arange(n_rows, dtype=xp.int64), deg)
        where = xp.arange(len(vals), dtype=xp.int64)
        off, msk = self.off[rows], self.mask[rows]
        slot = off + (self._hash(vals) & msk)
        while len(where):  # place every value: each round, the free slots are claimed (one winner each)
            free = bk.nonzero(self.key[slot] == -1)
            self.key[slot[free]] = vals[where[free]]
            ok = self.key[slot] == vals[where]
            placed = bk.nonzero(ok)
            self.pos[slot[placed]] = where[placed]
            left = bk.nonzero(~ok)
            where, off, msk = where[left], off[left], msk[left]
            slot = off + ((slot[left] - off + 1) & msk)

    def _hash(self, c):
        return (c * self.MULT) >> self.SHIFT

    def find(self, off, msk, vals) -> tuple:
        """(hit, slot) of each value in its row's table (`off`, `msk`: that row's table offset and size - 1);
        `pos[slot]` is the position of a hit."""
        bk = self.bk
        slot = off + (self._hash(vals) & msk)
        got = self.key[slot]
        hit = got == vals
        todo = bk.nonzero(~hit & (got != -1))
        off, msk = off[todo], msk[todo]
        while len(todo):  # linear probing, for the few that met another value first
            s2 = off + ((slot[todo] - off + 1) & msk)
            slot[todo] = s2
            got = self.key[s2]
            h2 = got == vals[todo]
            hit[todo[bk.nonzero(h2)]] = True
            left = bk.nonzero(~h2 & (got != -1))
            todo, off, msk = todo[left], off[left], msk[left]
        return hit, slot


class Common:
    """The `common` verb over one rank's part `lg`."""

    #: lookups per chunk: bounds the memory of the listing (about 40 bytes per lookup)
    CHUNK = 1 << 22

    def __init__(self, bk: Backend, lg, comm, transport: Transport, tally: Tally) -> None:
        self.bk, self.xp, self.lg, self.comm, self.transport, self.tally = bk, bk.xp, lg, comm, transport, tally

    def reduce(self, spec: Spec, vfields: tuple, efields: tuple, head, within=None):
        """`spec.op` over the common neighbours of each local edge's endpoints of what `head` makes of
        the vertex and edge fields (None: count them); with `within`, triangles of that edge set only."""
        bk, xp, lg = self.bk, self.xp, self.lg
        self.tally.exchanged = True
        m = lg.m
        keep = None
        if within is not None:
            keep = within.astype(bool, copy=False) if bk.is_array(within) else xp.full(m, bool(within))
        vext, _ = self.transport.exchange(spec, tuple(self._full(a, lg.n) for a in vfields), None)
        earrs = [self._full(a, m) for a in efields]
        outs = tuple(spec.outs) if lg.directed else (False,)
        # the lists shipped: in (False) and out (True); each adjacent vertex once ("set") takes both
        dirs = sorted({d for o in outs for d in ((False, True) if o == "set" else (bool(o),))})
        # whole neighbour lists (the naive code), or, pruned, only their entries within `keep`
        send_keep = keep if spec.need else None
        if spec.counted:  # else the naive code's per-superstep record is what is counted
            self._count(dirs, send_keep)
        if keep is not None and send_keep is None:  # K travels with the lists, the receiver filters
            shipped = {d: self._only(*got) for d, got in self._ship(dirs, None, [*earrs, keep]).items()}
        else:
            shipped = self._ship(dirs, send_keep, earrs)
        eext = [xp.concatenate([a, *(s[2][k] for s in shipped.values())]) for k, a in enumerate(earrs)]
        if lg.directed:
            found = self._directed(outs, keep, shipped)
            if head is None:
                return bk.bincount(found[0], minlength=m)[:m]
        else:
            found = self._triangles(keep, shipped[False], count_only=head is None)
        if head is None:  # a plain count: triangles through each edge
            return found
        C = Elements(lg.ext_ids, *found)
        value, mask = head(C, *vext, *eext)
        return self._combine(spec.op, value, mask, C, spec.elem)

    def _only(self, owner, nb, vals: list) -> tuple:
        """Shipped entries whose last value (the edge set listed within) holds, that value dropped."""
        sel = self.bk.nonzero(vals[-1])
        return owner[sel], nb[sel], [v[sel] for v in vals[:-1]]

    def _full(self, x, k: int):
        return x if self.bk.is_array(x) else self.xp.full(k, x)

    # ------------------------------------------------------------ shipping neighbour lists

    def _ship(self, dirs: list[bool], keep, earrs: list) -> dict:
        """Per direction (False: in-, True: out-neighbours): (row owner, neighbour) ext indices of the
        received neighbour lists of this rank's ghosts (entries whose neighbour it does not hold
        dropped), and their edge values per field.  One rank receives nothing."""
        bk, xp, lg = self.bk, self.xp, self.lg
        out = {}
        for d in dirs:
            if lg.size == 1:
                z = xp.zeros(0, dtype=xp.int64)
                out[d] = (z, z, [a[:0] for a in earrs])
                continue
            indptr, nbr, eid = (lg.out_indptr, lg.out_nbr, lg.out_eid) if d else (lg.in_indptr, lg.in_nbr, lg.in_eid)
            rows = lg.send_idx
            starts = indptr[rows]
            lens = indptr[rows + 1] - starts
            pos = bk.expand_ranges(starts, lens)
            which = bk.repeat(xp.arange(len(rows), dtype=xp.int64), lens)
            if keep is not None:
                sel = bk.nonzero(keep[eid[pos]])
                pos, which = pos[sel], which[sel]
                lens = bk.bincount(which, minlength=len(rows))
            ends = bk.to_host(xp.cumsum(lens))  # entries per destination rank: at its send-list bounds
            tot = [int(ends[b - 1]) if b > 0 else 0 for b in lg.send_counts.cumsum().tolist()]
            counts = lg.send_counts.copy()
            counts[:] = [t - s for s, t in zip([0] + tot[:-1], tot)]
            got_lens, _ = self.comm.alltoallv(lens.astype(xp.int64), lg.send_counts, lg.recv_counts)
            ids, rc = self.comm.alltoallv(lg.ext_ids[nbr[pos]], counts)
            vals = [self.comm.alltoallv(a[eid[pos]], counts, rc)[0] for a in earrs]
            owner = lg.n + bk.repeat(xp.arange(lg.n_ghosts, dtype=xp.int64), got_lens)
            out[d] = (owner, self._ext_index(ids), vals)
        return out

    def _count(self, dirs: list[bool], keep) -> None:
        """Messages: every vertex sends its neighbour list (within `keep`), one message per entry, as a
        vertex program would; counted by the rank owning the vertex, so the same on any number of
        ranks (the bytes that cross ranks are what the communicator counts)."""
        xp, lg = self.xp, self.lg
        ends = {False: [lg.src, lg.dst]} if not lg.directed else {False: [lg.dst], True: [lg.src]}
        for d in dirs:
            for end in ends[d]:
                owned = end < lg.n
                if keep is not None:
                    owned = owned & keep
                self.tally.messages += int(self.bk.item(xp.count_nonzero(owned)))

    def _ext_index(self, ids):
        """Ext index of each original ID (-1 where this rank holds no such vertex)."""
        xp, lg = self.xp, self.lg
        loc = lg.id_to_local(ids)
        ng = lg.n_ghosts
        if ng == 0 or len(ids) == 0:
            return loc
        gids = lg.ext_ids[lg.n:]  # ghosts: ascending original IDs
        p = xp.minimum(xp.searchsorted(gids, ids), ng - 1)
        return xp.where(loc >= 0, loc, xp.where(gids[p] == ids, lg.n + p, -1))

    # ------------------------------------------------------------ listing

    def _lookup(self, keys, q):
        """Position of each key of `q` in the sorted `keys`, and whether it is there."""
        xp = self.xp
        if len(keys) == 0:
            return xp.zeros(len(q), dtype=xp.int64), xp.zeros(len(q), dtype=bool)
        p = xp.minimum(xp.searchsorted(keys, q), len(keys) - 1)
        return p, keys[p] == q

    def _chunks(self, work):
        """Consecutive index ranges of `work` (lookups per item) of about CHUNK lookups each."""
        xp, bk = self.xp, self.bk
        if len(work) == 0:
            return []
        cum = bk.to_host(xp.cumsum(work))
        total = int(cum[-1])
        cuts = [0]
        for k in range(1, total // self.CHUNK + 1):
            c = int(cum.searchsorted(k * self.CHUNK))
            if c > cuts[-1]:
                cuts.append(c)
        cuts.append(len(work))
        return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]

    def _triangles(self, keep, shipped: tuple, count_only: bool):
        """Undirected: the triangles of this rank's view, by degree orientation.  Count only: the
        triangles through each local edge; else the elements (edge, src, dst, nbr, src_nbr, dst_nbr)."""
        bk, xp, lg = self.bk, self.xp, self.lg
        m, N = lg.m, lg.n_ext
        # the view's edges: local edges (in `keep`), then received ghost-ghost edges, once each
        loc = xp.arange(m, dtype=xp.int64) if keep is None else bk.nonzero(keep)
        owner, nb, _vals = shipped
        sel = bk.nonzero((nb >= lg.n) & (lg.ext_ids[owner] < lg.ext_ids[xp.maximum(nb, 0)]))
        x = xp.concatenate([lg.src[loc], owner[sel]])
        y = xp.concatenate([lg.dst[loc], nb[sel]])
        eidx = xp.concatenate([loc, m + sel])
        deg = bk.bincount(x, minlength=N) + bk.bincount(y, minlength=N)
        order = xp.lexsort(xp.stack([lg.ext_ids, deg]))
        rk = xp.empty(N, dtype=xp.int64)
        rk[order] = xp.arange(N, dtype=xp.int64)
        rx, ry = rk[x], rk[y]
        lo, hi = xp.minimum(rx, ry), xp.maximum(rx, ry)
        srt = xp.argsort(lo * N + hi)
        lo, hi, eidx = lo[srt], hi[srt], eidx[srt]
        indptr = xp.zeros(N + 1, dtype=xp.int64)
        xp.cumsum(bk.bincount(lo, minlength=N), out=indptr[1:])
        found = bk.oriented_triangles(indptr, hi, count_only)  # a compiled merge, where the backend has one
        if found is None:
            found = self._hashed(indptr, lo, hi, count_only)
        if count_only:  # triangles per oriented edge
            counts = xp.zeros(m + len(owner), dtype=xp.int64)
            counts[eidx] = found
            return counts[:m]
        kk, cpos, p = found  # the oriented edges ab, ac, bc of each triangle a < b < c
        return self._roles(eidx[kk], eidx[cpos], eidx[p], order[lo[kk]], order[hi[kk]], order[hi[cpos]])

    def _hashed(self, indptr, lo, hi, count_only: bool):
        """The triangles of the oriented edges (`lo`, `hi` sorted, rows `indptr`) by hashed lookups of the
        wedges (b, c), c in N+(a) after b, in chunks: per oriented edge the triangles through it (count
        only), else the positions of each triangle's edges ab, ac, bc."""
        bk, xp = self.bk, self.xp
        M = len(lo)
        after = indptr[lo + 1] - xp.arange(M, dtype=xp.int64) - 1  # higher neighbours of a after b
        csc = xp.argsort(hi * (len(indptr) - 1) + lo)  # the lookups grouped by b
        work = after[csc]
        table = RowHash(bk, indptr, hi)
        per_pos = xp.zeros(M, dtype=xp.int64)
        parts = []
        for a, b in self._chunks(work):
            ks, c = csc[a:b], work[a:b]
            cpos = bk.expand_ranges(ks + 1, c)
            rows = hi[ks]
            hit, slot = table.find(bk.repeat(table.off[rows], c), bk.repeat(table.mask[rows], c), hi[cpos])
            h = bk.nonzero(hit)
            kk = ks[xp.searchsorted(xp.cumsum(c), h, side="right")]  # the oriented edge of each hit
            cpos, p = cpos[h], table.pos[slot[h]]
            if count_only:
                for e in (kk, cpos, p):
                    per_pos += bk.bincount(e, minlength=M)
            else:
                parts.append((kk, cpos, p))
        if count_only:
            return per_pos
        if not parts:
            z = xp.zeros(0, dtype=xp.int64)
            return z, z, z
        return tuple(xp.concatenate([q[k] for q in parts]) for k in range(3))

    def _roles(self, e_ab, e_ac, e_bc, va, vb, vc) -> tuple:
        """The elements of triangles (a, b, c) whose edge is local: one per local edge of each, with its
        third vertex and the edges joining that vertex to the edge's src and dst."""
        xp, lg, m = self.xp, self.lg, self.lg.m
        out = []
        for e, w, p, e_p, e_q in ((e_ab, vc, va, e_ac, e_bc), (e_ac, vb, va, e_ab, e_bc), (e_bc, va, vb, e_ab, e_ac)):
            # e joins p and q; e_p joins p and w, e_q joins q and w
            k = self.bk.nonzero(e < m)
            e, w, p, e_p, e_q = e[k], w[k], p[k], e_p[k], e_q[k]
            at_src = lg.src[e] == p
            out.append((e, lg.src[e], lg.dst[e], w, xp.where(at_src, e_p, e_q), xp.where(at_src, e_q, e_p)))
        return self._concat(out)

    def _concat(self, parts: list[tuple]) -> tuple:
        xp = self.xp
        if not parts:
            z = xp.zeros(0, dtype=xp.int64)
            return (z,) * 6
        return tuple(xp.concatenate([p[k] for p in parts]) for k in range(6))

    def _lists(self, d: bool, keep, shipped: tuple, base: int):
        """Directed: the sorted keys x * N + w of the direction-d neighbour lists of the ext vertices (w a
        neighbour of x), their edges (local, or `base` + shipped index), and the list starts per x."""
        bk, xp, lg = self.bk, self.xp, self.lg
        m, N = lg.m, lg.n_ext
        loc = xp.arange(m, dtype=xp.int64) if keep is None else bk.nonzero(keep)
        owner, nb, _vals = shipped
        sel = bk.nonzero(nb >= lg.n)  # neighbours this rank owns: the edge is local already
        x = xp.concatenate([lg.src[loc] if d else lg.dst[loc], owner[sel]])
        w = xp.concatenate([lg.dst[loc] if d else lg.src[loc], nb[sel]])
        eidx = xp.concatenate([loc, base + sel])
        keys = x * N + w
        srt = xp.argsort(keys)
        keys, w, eidx = keys[srt], w[srt], eidx[srt]
        indptr = xp.zeros(N + 1, dtype=xp.int64)
        xp.cumsum(bk.bincount(x, minlength=N), out=indptr[1:])
        return keys, w, eidx, indptr

    def _distinct(self, ins: tuple, outs: tuple) -> tuple:
        """Directed: the in- and out-lists of `_lists` as one, each neighbour of x once, by its out-edge
        where both exist (`nbrs`)."""
        bk, xp, N = self.bk, self.xp, self.lg.n_ext
        keys = xp.concatenate([ins[0], outs[0]])
        pref = xp.concatenate([xp.ones(len(ins[0]), dtype=xp.int64), xp.zeros(len(outs[0]), dtype=xp.int64)])
        order = xp.lexsort(xp.stack([pref, keys]))  # by key, the out-edge first
        keys = keys[order]
        first = xp.ones(len(keys), dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        sel = bk.nonzero(first)
        keys = keys[sel]
        w = xp.concatenate([ins[1], outs[1]])[order][sel]
        eidx = xp.concatenate([ins[2], outs[2]])[order][sel]
        indptr = xp.zeros(N + 1, dtype=xp.int64)
        xp.cumsum(bk.bincount(keys // N, minlength=N), out=indptr[1:])
        return keys, w, eidx, indptr

    def _directed(self, outs: tuple, keep, shipped: dict) -> tuple:
        """Directed: for each local edge (u, v) the shorter of u's and v's lists, looked up in the other."""
        bk, xp, lg = self.bk, self.xp, self.lg
        m, N = lg.m, lg.n_ext
        base, lists = m, {}
        for d in sorted(shipped):
            lists[d] = self._lists(d, keep, shipped[d], base)
            base += len(shipped[d][0])
        if "set" in outs:
            lists["set"] = self._distinct(lists[False], lists[True])
        lu, lv = lists[outs[0]], lists[outs[1]]
        cen = xp.arange(m, dtype=xp.int64) if keep is None else bk.nonzero(keep)
        u, v = lg.src[cen], lg.dst[cen]
        first = (lu[3][u + 1] - lu[3][u]) <= (lv[3][v + 1] - lv[3][v])  # walk u's list
        parts = []
        for at_u, walk, look in ((True, lu, lv), (False, lv, lu)):
            idx = bk.nonzero(first if at_u else ~first)
            x, y, ce = (u[idx], v[idx], cen[idx]) if at_u else (v[idx], u[idx], cen[idx])
            n_walk = walk[3][x + 1] - walk[3][x]
            for a, b in self._chunks(n_walk):
                c = n_walk[a:b]
                j = bk.repeat(xp.arange(a, b, dtype=xp.int64), c)
                pos = bk.expand_ranges(walk[3][x[a:b]], c)
                w = walk[1][pos]
                p, hit = self._lookup(look[0], y[j] * N + w)
                h = bk.nonzero(hit)
                j, w, e_walk, e_look = j[h], w[h], walk[2][pos[h]], look[2][p[h]]
                e = ce[j]
                su, sv = (e_walk, e_look) if at_u else (e_look, e_walk)
                parts.append((e, lg.src[e], lg.dst[e], w, su, sv))
        return self._concat(parts)

    # ------------------------------------------------------------ combining per edge

    def _combine(self, op: str, value, mask, C: Elements, elem: str):
        """`op` per local edge over its elements; edges with none get the empty value."""
        bk, xp, m = self.bk, self.xp, self.lg.m
        k = len(C)
        v = self._full(value, k)
        msk = None if mask is None else self._full(mask, k).astype(bool, copy=False)
        if op in ("sum", "avg") and (op == "avg" or v.dtype.kind == "f"):
            # floating-point sums depend on the order: by edge, then the neighbour's original ID
            order = xp.lexsort(xp.stack([C.nbr_ids, C.edge]))
            indptr = xp.zeros(m + 1, dtype=xp.int64)
            xp.cumsum(bk.bincount(C.edge, minlength=m), out=indptr[1:])
            seg = bk.segments(indptr)
            return bk.seg_reduce(seg, op, v[order], None if msk is None else msk[order], elem)
        ids = C.nbr_ids if op in ("argmin", "argmax") else None
        return bk.scatter_reduce(op, C.edge, v, msk, m, elem, ids)
