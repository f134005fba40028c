"""Remote reads and marks: values at, or marks on, the vertices that original IDs name, wherever
they are owned (the `remote_request`, `remote_reply` and `mark` verbs' communication)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from g2pl.contract import Spec
from g2pl.runtime.backend import Backend
from g2pl.runtime.stats import Tally


@dataclass
class RemoteRequest:
    """State between the request and the reply superstep of a remote read."""

    ids: Any  # requested original IDs, per requesting element
    order: Any  # requesting elements sorted by owner rank
    send_counts: Any
    received: Any  # IDs other ranks asked this rank for
    recv_counts: Any


class Remote:
    def __init__(self, bk: Backend, lg, comm, tally: Tally) -> None:
        self.bk, self.xp, self.lg, self.comm, self.tally = bk, bk.xp, lg, comm, tally

    def _route(self, ids) -> tuple:
        """Send requested IDs (not -1) to their owners: (order, send_counts, received IDs, recv_counts)."""
        xp = self.xp
        valid = self.bk.nonzero(ids != -1)
        if self.comm.size == 1:  # one owner: nothing to group by rank (a remote mark; reads skip routing)
            order, send_counts = valid, xp.full(1, len(valid), dtype=xp.int64)
        else:
            owners = self.lg.owner_of(ids[valid]) if len(valid) else xp.zeros(0, xp.int64)
            order = valid[xp.argsort(owners, kind="stable")]
            send_counts = self.bk.bincount(owners, minlength=self.comm.size).astype(xp.int64)
        t0 = time.perf_counter()
        received, recv_counts = self.comm.alltoallv(ids[order].astype(xp.int64), send_counts)
        self.tally.comm_s += time.perf_counter() - t0
        return order, send_counts, received, recv_counts

    def request(self, ids) -> RemoteRequest:
        self.tally.exchanged = True
        xp = self.xp
        ids = ids.astype(xp.int64, copy=False)
        if self.comm.size == 1:  # nothing to route: the reply reads at the IDs themselves (see reply)
            self.tally.messages += int(self.bk.item(xp.count_nonzero(ids != -1)))
            none = xp.zeros(0, dtype=xp.int64)
            return RemoteRequest(ids, none, xp.zeros(1, dtype=xp.int64), none, xp.zeros(1, dtype=xp.int64))
        order, sc, received, rc = self._route(ids)
        self.tally.messages += len(order)
        return RemoteRequest(ids, order, sc, received, rc)

    def reply(self, arr, rq: RemoteRequest, elem: str, default):
        xp = self.xp
        self.tally.exchanged = True
        dt = self.bk.dtype(elem)
        if self.comm.size == 1:
            return self._gather(arr, rq.ids, dt, default)
        pos = self.lg.id_to_local(rq.received)
        ok = pos >= 0
        vals = xp.where(ok, arr[xp.where(ok, pos, 0)] if len(arr) else default, default).astype(dt)
        self.tally.messages += int(self.bk.item(xp.count_nonzero(ok)))
        t0 = time.perf_counter()
        back, _ = self.comm.alltoallv(vals, rq.recv_counts, rq.send_counts)
        self.tally.comm_s += time.perf_counter() - t0
        out = xp.full(len(rq.ids), default, dtype=dt)
        out[rq.order] = back
        return out

    def _gather(self, arr, ids, dt, default):
        """One rank's reply: `arr` at the vertices `ids` name (a gather through the ID lookup), the
        default where an ID names no vertex; the same values and message count as routing them."""
        xp, bk = self.xp, self.bk
        pos = self.lg.id_to_local(ids)
        missing = pos < 0
        nmiss = int(bk.item(xp.count_nonzero(missing)))
        self.tally.messages += len(pos) - nmiss
        arr = arr.astype(dt, copy=False)
        if nmiss == 0:
            return bk.gather(arr, pos)
        if nmiss == len(pos) or len(arr) == 0:
            return xp.full(len(pos), default, dtype=dt)
        out = bk.gather(arr, xp.where(missing, 0, pos))
        out[missing] = default
        return out

    def mark(self, spec: Spec, ids, mask):
        xp, lg = self.xp, self.lg
        self.tally.exchanged = True
        size = lg.n if spec.dom == "V" else lg.m
        ids = (ids if self.bk.is_array(ids) else xp.full(size, ids)).astype(xp.int64)
        sel = None
        if mask is not None:
            sel = self.bk.nonzero(mask if self.bk.is_array(mask) else xp.full(size, mask))
            ids = ids[sel]
        if spec.dom == "E" and lg.size > 1:  # each edge sends once, from the rank owning its u endpoint
            ids = ids[self.bk.nonzero(lg.edge_owned if sel is None else lg.edge_owned[sel])]
        _order, _sc, received, _rc = self._route(ids)
        self.tally.messages += int(self.bk.item(xp.count_nonzero(ids != -1)))
        pos = lg.id_to_local(received)
        out = xp.zeros(lg.n, dtype=bool)
        out[pos[self.bk.nonzero(pos >= 0)]] = True
        return out
