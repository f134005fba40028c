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
        t1 = t2 = None
        if arg or self._float_sum(spec, vals):  # ties (and the float sums' order) by original IDs
            t1 = (lg.ids if spec.dom == "V" else lg.end_ids("src"))[sel]
            t2 = xp.zeros(len(sel), dtype=xp.int64) if spec.dom == "V" else lg.end_ids("dst")[sel]
        pay = self._arr(payload, size)[sel] if payload is not None else None
        valid = ~xp.isnan(vals) if arg and vals.dtype.kind == "f" else None  # NaN never wins
        if not spec.nkeys:
            if valid is not None:
                assert t1 is not None and t2 is not None  # (made above for argmin/argmax)
                ok = bk.nonzero(valid)
                vals, t1, t2 = vals[ok], t1[ok], t2[ok]
                pay = pay[ok] if pay is not None else None
            return self._global(spec, vals, t1, t2, pay)
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
        fields = self._fields(spec, vals[p], *(None if a is None else a[p] for a in (t1, t2, pay)))
        self.tally.messages += len(K)  # Pregel's count: one message per (element, key); combining saves bytes
        if self._float_sum(spec, fields[0]):
            return self._float_sum_run(spec, K, fields)
        # keys this rank owns are combined in place; the others once per key, then sent to their owners
        lp = lg.id_to_local(K)
        here = bk.nonzero(lp >= 0)
        pos, parts = lp, fields
        eix = sel[p] if spec.result == "edge" else None  # local edge of each entry (-1: another rank's)
        if len(here) < len(K):
            pos, parts = lp[here], [f[here] for f in fields]
            eix = eix[here] if eix is not None else None
        if self.comm.size > 1:
            away = bk.nonzero(lp < 0)
            ukeys, sent = self._combine(spec, K[away], [f[away] for f in fields])
            rkeys, got = self._route(ukeys, sent)
            rpos = lg.id_to_local(rkeys)
            ok = bk.nonzero(rpos >= 0)  # keys naming no vertex are dropped
            pos = xp.concatenate([pos, rpos[ok]])
            parts = [xp.concatenate([a, b[ok]]) for a, b in zip(parts, got)]
            if eix is not None:
                eix = xp.concatenate([eix, xp.full(len(ok), -1, dtype=xp.int64)])
        return self._finish(spec, pos, parts, eix)

    def _route(self, ukeys, fields: list) -> tuple:
        """One record per key (ascending: grouped by owner rank) to the key's owner: what arrived."""
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

    def _finish(self, spec: Spec, pos, parts: list, eix):
        """Combine the entries (owned vertex `pos`, record `parts`) per vertex: the result."""
        xp, bk, n = self.xp, self.bk, self.lg.n
        if spec.op not in ("argmin", "argmax"):
            op = "sum" if spec.op == "count" else spec.op  # counts arrive as partial counts
            return bk.scatter_reduce(op, pos, parts[0], None, n, "int" if spec.op == "count" else spec.elem)
        w = self._scatter_winners(spec.op, pos, parts[0], parts[1], parts[2])
        if spec.result == "edge":
            self.tally.messages += len(w)  # each winner to its endpoints' ranks (a second copy is the same message)
            if self.comm.size == 1:
                out = xp.zeros(self.lg.m, dtype=bool)
                out[eix[w]] = True
                return out
            return self._mark_edges(parts[1][w], parts[2][w])
        if spec.payload:
            out = xp.full(n, DEFAULTS[spec.elem], dtype=bk.dtype(spec.elem))
            out[pos[w]] = parts[3][w].astype(out.dtype, copy=False)
        else:
            out = xp.full(n, -1, dtype=xp.int64)
            out[pos[w]] = parts[1][w]
        return out

    def _scatter_winners(self, op: str, pos, v, t1, t2):
        """Index of each vertex's winning entry: the least (value, t1, t2), or greatest value, per `pos`."""
        xp, bk, n = self.xp, self.bk, self.lg.n
        if op == "argmax":  # a decreasing map, so the least wins: -x for floats, ~x for ints (no overflow)
            v = -v if v.dtype.kind == "f" else ~v
        best = xp.full(n, xp.inf if v.dtype.kind == "f" else INT64_MAX, dtype=v.dtype)
        bk.at_minmax("min", best, pos, v)
        cand = bk.nonzero(v == best[pos])
        rows = pos[cand]
        keep = xp.ones(len(cand), dtype=bool)
        for t in (t1[cand], t2[cand]):  # ties: the least (t1, t2) among the candidates
            tb = xp.full(n, INT64_MAX, dtype=xp.int64)
            xp.minimum.at(tb, rows, bk.select(keep, t, INT64_MAX))
            keep &= t == tb[rows]
        return cand[bk.nonzero(keep)]

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

    def _fields(self, spec: Spec, vals, t1, t2, pay) -> list:
        """The arrays one record holds, per element (before combining)."""
        xp = self.xp
        if spec.op in ("argmin", "argmax"):
            return [vals, t1, t2] + ([pay] if pay is not None else [])
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
        """Group `fields` by `keys` and combine each group: (distinct keys, combined fields)."""
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
        if op == "argmax":  # a decreasing map, so the least wins: -x for floats, ~x for ints (no overflow)
            v = -v if v.dtype.kind == "f" else ~v
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
            order, seg, _uk = self._group(xp.zeros(len(vals), dtype=xp.int64))
            w = order[self._winners(spec.op, seg, vals[order], t1[order], t2[order])]
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
