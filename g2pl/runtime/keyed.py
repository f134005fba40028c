"""Keyed aggregation (`AGG [ ... ] by KEY`, the `keyed` verb): values combined at the vertex each
key names, wherever it is owned; and the argmin/argmax winners (edges, payloads) it picks.

One exchange.  Each element goes to every distinct key of its list (keys are original IDs; -1 and
IDs of no vertex are dropped).  Keys this rank owns are combined in place by scatter reductions;
the others are grouped by a sort, combined once per key (the same combiner) and sent, one record
per key, to the key's owner rank (owners by ID range, as for remote reads), which combines what
arrived with its own.  argmin/argmax pick the least/greatest value, ties to the smaller (u, v)
original IDs for edges and the smaller ID for vertices; NaN values never win.  Float sums (and avg)
are not combined before the owner: it adds them in element order (by original IDs), so they are
the same on any number of ranks.  An edge winner goes, in the same exchange, to the ranks of its
two endpoints (edges live at both), which mark it.  Without keys (a global argmin/argmax whose
result is an edge or a payload), each rank's winner goes to every rank.

argmin/argmax entries are each key's local vertex positions beside the selected elements; their tie
keys and payloads stay in the domain's arrays until read (equal values, the winners, the records
sent), and the winners are one compiled pass where the backend has one (`Backend.scatter_argmin`):
Boruvka's first rounds have two entries per edge, and gathering everything for each cost more than
the minimum itself.
"""
from __future__ import annotations

import time
from typing import Any

from g2pl.contract import Spec
from g2pl.runtime.backend import Backend
from g2pl.runtime.stats import Tally
from g2pl.runtime.values import DEFAULTS, INT64_MAX


class Keyed:
    def __init__(self, bk: Backend, lg, comm, tally: Tally) -> None:
        self.bk, self.xp, self.lg, self.comm, self.tally = bk, bk.xp, lg, comm, tally

    # ------------------------------------------------------------ the verb

    def run(self, spec: Spec, keys: tuple, value, mask, payload=None):
        xp, bk, lg = self.xp, self.bk, self.lg
        self.tally.exchanged = True
        size = lg.n if spec.dom == "V" else lg.m
        sel = xp.arange(size, dtype=xp.int64) if mask is None else bk.nonzero(self._arr(mask, size))
        if spec.dom == "E" and lg.size > 1:  # each edge counts once, at the rank owning its u endpoint
            sel = sel[bk.nonzero(lg.edge_owned[sel])]
        arg = spec.op in ("argmin", "argmax")
        vals = self._arr(value, size)[sel]
        if vals.dtype == bool and spec.op not in ("and", "or"):
            vals = vals.astype(xp.int64)
        ties = None  # the (t1, t2) of every element of the domain: gathered per entry only where read
        if arg or self._float_sum(spec, vals):  # ties (and the float sums' order) by original IDs
            ties = (lg.ids, xp.zeros(size, dtype=xp.int64)) if spec.dom == "V" else \
                (lg.end_ids("src"), lg.end_ids("dst"))
        pays = self._arr(payload, size) if payload is not None else None
        valid = ~xp.isnan(vals) if arg and vals.dtype.kind == "f" else None  # NaN never wins
        if not spec.nkeys:
            assert ties is not None  # (made above for argmin/argmax)
            t1, t2 = ties[0][sel], ties[1][sel]
            pay = pays[sel] if pays is not None else None
            if valid is not None:
                ok = bk.nonzero(valid)
                vals, t1, t2 = vals[ok], t1[ok], t2[ok]
                pay = pay[ok] if pay is not None else None
            return self._global(spec, vals, t1, t2, pay)
        if arg:  # (the same entry twice at one key changes no argmin: no distinct-key selection)
            assert ties is not None
            kjs = [self._arr(k, size).astype(xp.int64, copy=False)[sel] for k in keys]
            return self._arg_run(spec, kjs, vals, valid, sel, ties, pays)
        # every element once per distinct key (-1: none)
        picks, ks = [], []
        for j, k in enumerate(keys):
            kj = self._arr(k, size).astype(xp.int64, copy=False)[sel]
            keep = kj != -1
            if valid is not None:
                keep &= valid
            for k0 in keys[:j]:
                keep &= kj != self._arr(k0, size).astype(xp.int64, copy=False)[sel]
            p = bk.nonzero(keep)
            picks.append(p)
            ks.append(kj[p])
        p = xp.concatenate(picks) if len(picks) > 1 else picks[0]
        K = xp.concatenate(ks) if len(ks) > 1 else ks[0]
        ix = sel[p]  # the element of the domain each entry comes from
        self.tally.messages += len(K)  # Pregel's count: one message per (element, key); combining saves bytes
        t1, t2 = (None, None) if ties is None else (ties[0][ix], ties[1][ix])
        fields = self._fields(spec, vals[p], t1, t2)
        if self._float_sum(spec, fields[0]):
            return self._float_sum_run(spec, K, fields)
        # keys this rank owns are combined in place; the others once per key, then sent to their owners
        lp = lg.id_to_local(K)
        here = bk.nonzero(lp >= 0)
        pos, parts = lp, fields
        if len(here) < len(K):
            pos, parts = lp[here], [f[here] for f in fields]
        if self.comm.size > 1:
            away = bk.nonzero(lp < 0)
            ukeys, sent = self._combine(spec, K[away], [f[away] for f in fields])
            rkeys, got = self._route(ukeys, sent)
            rpos = lg.id_to_local(rkeys)
            ok = bk.nonzero(rpos >= 0)  # keys naming no vertex are dropped
            pos = xp.concatenate([pos, rpos[ok]])
            parts = [xp.concatenate([a, b[ok]]) for a, b in zip(parts, got)]
        op = "sum" if spec.op == "count" else spec.op  # counts arrive as partial counts
        return bk.scatter_reduce(op, pos, parts[0], None, lg.n, "int" if spec.op == "count" else spec.elem)

    def _arg_run(self, spec: Spec, kjs: list, v, valid, ix, ties: tuple, pays):
        """argmin/argmax by keys: element i (domain element `ix[i]`, value `v[i]`) is an entry at each of
        its keys `kjs[j][i]` (-1: none); NaN values (`valid` false) take no part.  Ties (t1, t2) and
        payloads stay in the domain's arrays `ties`, `pays` until read: for the few entries with equal
        values, the winners, and what is sent to other ranks."""
        xp, bk, lg = self.xp, self.bk, self.lg
        t1s, t2s = ties
        L = len(ix)
        counted = 0  # Pregel's count: one message per (element, distinct key)
        lps, sends = [], []
        for j, kj in enumerate(kjs):
            has = kj != -1
            if valid is not None:
                has &= valid
            lj = lg.id_to_local(kj)
            if not bk.item(xp.all(has)):
                lj = xp.where(has, lj, -1)
            lps.append(lj)
            for k0 in kjs[:j]:
                has &= kj != k0
            counted += int(bk.item(xp.count_nonzero(has)))
            if self.comm.size > 1:  # to another rank: once per distinct key (a group holds no repeats)
                sends.append(bk.nonzero(has & (lj < 0)))
        self.tally.messages += counted
        lp = xp.stack(lps) if len(lps) > 1 else lps[0][None, :]  # entry (j, i): element i at key j
        if self.comm.size > 1:  # the others combined once per key and sent; what arrives joins the arrays
            away = xp.concatenate(sends) if len(sends) > 1 else sends[0]
            K = xp.concatenate([kj[a] for kj, a in zip(kjs, sends)]) if len(sends) > 1 else kjs[0][sends[0]]
            aix = ix[away]
            fields = [v[away], t1s[aix], t2s[aix]] + ([pays[aix]] if pays is not None else [])
            ukeys, sent = self._combine(spec, K, fields)
            rkeys, got = self._route(ukeys, sent)
            rpos = lg.id_to_local(rkeys)
            ok = bk.nonzero(rpos >= 0)  # keys naming no vertex are dropped
            r = len(ok)
            base = len(t1s)
            lp = xp.concatenate([lp, xp.full((len(lp), r), -1, dtype=xp.int64)], axis=1)
            lp[0, L:] = rpos[ok]
            v = xp.concatenate([v, got[0][ok]])
            ix = xp.concatenate([ix, base + xp.arange(r, dtype=xp.int64)])
            t1s, t2s = xp.concatenate([t1s, got[1][ok]]), xp.concatenate([t2s, got[2][ok]])
            if pays is not None:
                pays = xp.concatenate([pays, got[3][ok].astype(pays.dtype, copy=False)])
        pos, w = self._scatter_winners(spec.op, lp, v, ix, t1s, t2s)
        win = ix[w]  # the winners' domain elements (or received records)
        n = lg.n
        if spec.result == "edge":
            self.tally.messages += len(w)  # each winner to its endpoints' ranks (a second copy is the same message)
            if self.comm.size == 1:
                out = xp.zeros(lg.m, dtype=bool)
                out[win] = True
                return out
            return self._mark_edges(t1s[win], t2s[win])
        if spec.payload:
            assert pays is not None
            out = xp.full(n, DEFAULTS[spec.elem], dtype=bk.dtype(spec.elem))
            out[pos] = pays[win].astype(out.dtype, copy=False)
        else:
            out = xp.full(n, -1, dtype=xp.int64)
            out[pos] = t1s[win]
        return out

    def _route(self, ukeys, fields: list) -> tuple:
        """The records (keys ascending: grouped by owner rank) to each key's owner: what arrived."""
        xp, bk = self.xp, self.bk
        owners = self.lg.owner_of(ukeys)
        counts = bk.bincount(owners, minlength=self.comm.size).astype(xp.int64)
        t0 = time.perf_counter()
        rkeys, rcounts = self.comm.alltoallv(ukeys, counts)
        got = []
        for f in fields:
            if f.dtype == bool:  # and/or values: one bit per record, as the pack pass sends bools
                data, nbytes = bk.packbits_segments(f, bk.to_host(counts))
                rdata, rbytes = self.comm.alltoallv(data, nbytes)
                got.append(bk.unpackbits_segments(rdata, rbytes, rcounts))
            else:
                got.append(self.comm.alltoallv(f, counts, rcounts)[0])
        self.tally.comm_s += time.perf_counter() - t0
        return rkeys, got

    def _scatter_winners(self, op: str, lp, v, ix, t1s, t2s) -> tuple:
        """(vertices, the element index of each one's winner): per owned vertex r, the least (value, t1,
        t2), or greatest value, over the entries (j, i) with lp[j, i] == r (value v[i], ties t1s[ix[i]],
        t2s[ix[i]]); vertices without entries are left out."""
        xp, bk, n = self.xp, self.bk, self.lg.n
        if op == "argmax":  # a decreasing map, so the least wins: -x for floats, ~x for ints (no overflow)
            v = -v if v.dtype.kind == "f" else ~v
        got = bk.scatter_argmin(lp, v, ix, t1s, t2s, n)  # one compiled pass, where the backend has one
        if got is not None:
            return got
        best = xp.full(n, xp.inf if v.dtype.kind == "f" else INT64_MAX, dtype=v.dtype)
        rows_at = []  # per key: (its entries' vertices, their elements), the key's -1 entries dropped
        for row in lp:
            if bk.item(xp.all(row >= 0)):  # (usual: every element has the key)
                at, i = row, None
            else:
                i = bk.nonzero(row >= 0)
                at = row[i]
            bk.at_minmax("min", best, at, v if i is None else v[i])
            rows_at.append((at, i))
        cands = []  # the entries whose value is their vertex's least
        for at, i in rows_at:
            c = bk.nonzero((v if i is None else v[i]) == best[at])
            cands.append((at[c], c if i is None else i[c]))
        rows = xp.concatenate([c[0] for c in cands])
        ci = xp.concatenate([c[1] for c in cands])
        keep = xp.ones(len(ci), dtype=bool)
        for ts in (t1s, t2s):  # ties: the least (t1, t2) among the candidates
            t = ts[ix[ci]]
            tb = xp.full(n, INT64_MAX, dtype=xp.int64)
            xp.minimum.at(tb, rows, bk.select(keep, t, INT64_MAX))
            keep &= t == tb[rows]
        k = bk.nonzero(keep)
        rows, ci = rows[k], ci[k]
        first = xp.full(n, INT64_MAX, dtype=xp.int64)  # one winner per vertex (an element at two of its keys)
        xp.minimum.at(first, rows, ci)
        r = bk.nonzero(first != INT64_MAX)
        return r, first[r]

    def _float_sum_run(self, spec: Spec, K, fields: list):
        """Float sums and averages: every element to its key's owner, added there in element order
        (by original IDs), so the result is the same on any number of ranks."""
        order = self.xp.argsort(K)
        rkeys, got = self._route(K[order], [f[order] for f in fields])
        pos = self.lg.id_to_local(rkeys)
        ok = self.bk.nonzero(pos >= 0)  # keys naming no vertex are dropped
        upos, combined = self._combine(spec, pos[ok], [f[ok] for f in got])
        return self._float_result(spec, upos, combined)

    # ------------------------------------------------------------ grouping and combining

    @staticmethod
    def _float_sum(spec: Spec, vals) -> bool:
        return spec.op == "avg" or spec.op == "sum" and vals.dtype.kind == "f"

    def _fields(self, spec: Spec, vals, t1, t2) -> list:
        """The arrays one record holds, per element (before combining; argmin/argmax: see _arg_run)."""
        xp = self.xp
        if self._float_sum(spec, vals):
            return [vals.astype(xp.float64, copy=False), t1, t2]
        if spec.op == "count":
            return [xp.ones(len(vals), dtype=xp.int64)]
        return [vals]

    def _group(self, keys, tie=None):
        """Sort order of `keys` (ties by the (t1, t2) arrays of `tie`, else in any order), its segments
        and the distinct keys."""
        xp, bk = self.xp, self.bk
        if tie is None:
            order = xp.argsort(keys)
        else:
            order = xp.arange(len(keys), dtype=xp.int64)
            for t in (*tie[::-1], keys):  # least significant first: stable sorts make a lexicographic order
                order = order[xp.argsort(t[order], kind="stable")]
        ks = keys[order]
        n = len(ks)
        brk = xp.ones(n, dtype=bool)
        if n > 1:
            brk[1:] = ks[1:] != ks[:-1]
        starts = bk.nonzero(brk).astype(xp.int64)
        indptr = xp.concatenate([starts, xp.full(1, n, dtype=xp.int64)])
        return order, bk.segments(indptr), ks[starts]

    def _combine(self, spec: Spec, keys, fields: list) -> tuple[Any, list]:
        """Group `fields` by `keys` and combine each group: (distinct keys, combined fields); for `mode`,
        which no partial result combines, (the keys in order, the fields in their order)."""
        xp, bk = self.xp, self.bk
        op = spec.op
        if op in ("argmin", "argmax"):
            order, seg, uk = self._group(keys)
            win = order[self._winners(op, seg, fields[0][order], fields[1][order], fields[2][order])]
            return uk, [f[win] for f in fields]
        if self._float_sum(spec, fields[0]):  # (at the owner only) in element order
            order, seg, uk = self._group(keys, (fields[1], fields[2]))
            total = seg.sum(fields[0][order])
            return uk, [total, seg.counts.astype(xp.int64)]
        if op == "mode":  # a mode of modes is not the mode: every entry goes, in key order, to be counted
            order = xp.argsort(keys, kind="stable")
            return keys[order], [fields[0][order]]
        order, seg, uk = self._group(keys)
        v = fields[0][order]
        if op in ("count", "sum"):
            return uk, [seg.sum(v)]
        if op in ("and", "or"):
            return uk, [bk.seg_reduce(seg, op, v, None, "bool")]
        return uk, [bk.seg_reduce(seg, op, v, None, spec.elem if v.dtype.kind != "f" else "float")]

    def _winners(self, op: str, seg, v, t1, t2):
        """Index (into the grouped entries) of each segment's least (value, t1, t2), or greatest value."""
        xp, bk = self.xp, self.bk
        v = _least_first(op, v)
        top = xp.inf if v.dtype.kind == "f" else INT64_MAX
        best = seg.reduce(xp.minimum, v, top)
        cand = bk.nonzero(v == best[seg.owner])
        if len(cand) == seg.n:  # no ties: one candidate per segment
            return cand
        rows = seg.owner[cand]  # ties: the least (t1, t2) among each segment's candidates
        keep = xp.ones(len(cand), dtype=bool)
        for t in (t1[cand], t2[cand]):
            tb = xp.full(seg.n, INT64_MAX, dtype=xp.int64)
            xp.minimum.at(tb, rows, bk.select(keep, t, INT64_MAX))
            keep &= t == tb[rows]
        return cand[bk.nonzero(keep)]

    def _one_winner(self, op: str, v, t1, t2):
        """`_winners` for a single group, without sorting: [index of the least (value, t1, t2)], the
        greatest value for argmax."""
        bk = self.bk
        v = _least_first(op, v)
        cand = bk.nonzero(v == v.min())
        for t in (t1, t2):
            if len(cand) == 1:
                break
            tc = t[cand]
            cand = cand[bk.nonzero(tc == tc.min())]
        return cand[:1]

    def _float_result(self, spec: Spec, upos, fields: list):
        """A float sum (empty: 0.0) or average (empty: nan) from (total, count) per key vertex."""
        xp, n = self.xp, self.lg.n
        if spec.op == "avg":
            out = xp.full(n, xp.nan, dtype=xp.float64)
            out[upos] = fields[0] / fields[1]
            return out
        out = xp.zeros(n, dtype=xp.float64)
        out[upos] = fields[0]
        return out

    # ------------------------------------------------------------ without keys: one group

    def _global(self, spec: Spec, vals, t1, t2, pay):
        """argmin/argmax over the whole domain: each rank's winner to every rank, the best kept."""
        xp, bk = self.xp, self.bk
        mine = None
        if len(vals):
            w = self._one_winner(spec.op, vals, t1, t2)
            host = [bk.to_host(a[w]) for a in (vals, t1, t2) + ((pay,) if pay is not None else ())]
            mine = tuple(h[0].item() for h in host)  # (not counted: an aggregator's partial is not a message)
        cands = [c for c in self.comm.allgather(mine) if c is not None]
        if self.comm.size > 1:  # counted as the rest of the traffic: 8 bytes per field, to every other rank
            share = 8 * len(mine or ()) * (self.comm.size - 1)
            self.comm.bytes_sent += share
            self.comm.bytes_received += 8 * sum(len(c) for c in cands) - 8 * len(mine or ())
        sign = 1 if spec.op == "argmin" else -1
        best = min(cands, key=lambda c: (sign * c[0], c[1], c[2])) if cands else None
        if spec.result == "edge":
            if best is None:
                return xp.zeros(self.lg.m, dtype=bool)
            return self._mark_local(xp.asarray([best[1]], dtype=xp.int64), xp.asarray([best[2]], dtype=xp.int64))
        value = DEFAULTS[spec.elem] if best is None else best[3]
        if spec.elem == "bool":
            return bool(value)
        if spec.elem == "float":
            return float(value)
        return bk.int64(value)

    # ------------------------------------------------------------ edge winners

    def _mark_edges(self, u, v):
        """The winning edges (u, v original IDs, at the keys' owners) as this rank's edge set: each
        winner goes to the ranks owning its endpoints."""
        xp, bk, lg = self.xp, self.bk, self.lg
        ou, ov = lg.owner_of(u), lg.owner_of(v)
        two = bk.nonzero(ov != ou)
        dest = xp.concatenate([ou, ov[two]])
        order = xp.argsort(dest, kind="stable")
        su, sv = xp.concatenate([u, u[two]])[order], xp.concatenate([v, v[two]])[order]
        counts = bk.bincount(dest, minlength=self.comm.size).astype(xp.int64)
        t0 = time.perf_counter()
        ru, rc = self.comm.alltoallv(su.astype(xp.int64), counts)
        rv, _ = self.comm.alltoallv(sv.astype(xp.int64), counts, rc)
        self.tally.comm_s += time.perf_counter() - t0
        return self._mark_local(ru, rv)

    def _mark_local(self, u, v):
        """Edge set of the local edges (u, v) names (pairs this rank does not hold are ignored)."""
        xp, lg = self.xp, self.lg
        out = xp.zeros(lg.m, dtype=bool)
        if lg.m == 0 or len(u) == 0:
            return out
        cache = lg.cache.__dict__  # ext index by original ID, local edges by (src, dst) code: once per part
        if "keyed_edge_lookup" not in cache:
            ext_order = xp.argsort(lg.ext_ids, kind="stable")
            code = lg.src.astype(xp.int64) * lg.n_ext + lg.dst.astype(xp.int64)
            corder = xp.argsort(code, kind="stable")
            cache["keyed_edge_lookup"] = (ext_order, lg.ext_ids[ext_order], corder, code[corder])
        ext_order, sorted_ids, corder, codes = cache["keyed_edge_lookup"]
        ok = xp.ones(len(u), dtype=bool)
        ends = []
        for ids in (u, v):
            p = xp.minimum(xp.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            ok &= sorted_ids[p] == ids
            ends.append(ext_order[p])
        c = ends[0] * lg.n_ext + ends[1]
        q = xp.minimum(xp.searchsorted(codes, c), len(codes) - 1)
        ok &= codes[q] == c
        out[corder[q[self.bk.nonzero(ok)]]] = True
        return out

    def _arr(self, x, size: int):
        return x if self.bk.is_array(x) else self.xp.full(size, x)


def _least_first(op: str, v):
    """The values in an order whose least is the winner: argmax's through a decreasing map (-x for
    floats, ~x for ints: no overflow), argmin's as they are."""
    if op != "argmax":
        return v
    return -v if v.dtype.kind == "f" else ~v
