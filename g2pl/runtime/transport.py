"""Ghost exchange: vertex values to the ranks that mirror them, as an exchange's spec says.

Transports (spec.transport): `entries` sends the program's whole record once
per cross-rank adjacency entry (Pregel's naive messages), `records` once per
mirror, `packed` only the spec's fields (bools as bits).  With a send mask
(spec.presence) only the mirrors whose sender condition holds send, after
their presence.  One rank sends nothing: the ext array is the array itself.

Bool vectors (a send mask's presence, packed bool fields) cross to each peer
in whichever form is fewer bytes, chosen per exchange and peer: a bitmap, or
the positions of the set entries within what goes to that peer (a frontier
of a few vertices costs a few positions, not one bit per mirror).  A header
goes first, one `2 * set + sparse` per bool vector and peer in the narrowest
width the peer's mirror count allows, so the receiver knows each form and
every size before the payload arrives (packed: the presence, bool fields and
values to one peer in one buffer; records: the presence, then the records).
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

from g2pl.contract import ELEM_SIZE, Spec
from g2pl.runtime import array_kernels as AK
from g2pl.runtime.backend import Array, Backend
from g2pl.runtime.stats import Tally

#: the per-rank counts and byte sizes of an exchange are small host arrays, whatever the backend
_host = AK.HostOps.xp

#: testing hook: `dense` or `sparse` sends every bool vector in that form (default: the fewer bytes)
FORM_ENV = "G2PL_EXCHANGE_FORM"


def elem_of(a) -> str:
    k = a.dtype.kind
    return "bool" if k == "b" else ("float32" if a.dtype.itemsize == 4 else "float") if k == "f" else "int"


class Flags(NamedTuple):
    """A bool vector to send, in send order: per destination rank its entries (`seg`) and how many of
    them are set (`k`), both on the host; `ghosts`: one per mirror (a presence), else one per value
    sent; `nz`: flatnonzero(vals) when made."""

    vals: Array
    seg: Array
    k: Array
    ghosts: bool
    nz: Array | None = None


class _Kept(NamedTuple):
    """A send mask's presence as it crossed (see Transport._presence)."""

    mask: Array
    idx: Array  # the sending mirrors, grouped by destination
    counts: Array  # how many go to each rank
    present: Array  # the ghosts' presence
    present_counts: Array  # present ghosts from each rank


class Transport:
    """Moves ghost values for one rank's part `lg` over communicator `comm`."""

    #: send masks whose received presence is kept for reuse (matching: Deps, its delta flips, argmin)
    MASKS_KEPT = 3

    def __init__(self, bk: Backend, lg, comm, tally: Tally) -> None:
        self.bk, self.xp, self.lg, self.comm, self.tally = bk, bk.xp, lg, comm, tally
        # the last few exchanges with a send mask, newest last: see _presence
        self._recent: list[_Kept] = []
        self._form = os.environ.get(FORM_ENV) or None
        if self._form not in (None, "dense", "sparse"):
            raise ValueError(f"{FORM_ENV}={self._form}: expected dense or sparse")

    def exchange(self, spec: Spec, arrays: tuple, sendm) -> tuple[list, object]:
        """(ext arrays: owned values followed by ghost values; ext presence, or None when all send)."""
        lg = self.lg
        if lg.size == 1:
            return list(arrays), sendm
        t0 = time.perf_counter()
        if spec.transport == "packed":
            out, present = self._packed(arrays, sendm)
        elif spec.transport == "entries" and lg.nv_send_idx is not None:
            out, present = self._per_entry(spec, arrays), None
        else:
            out, present = self._records(spec, arrays, sendm)
        self.tally.comm_s += time.perf_counter() - t0
        if sendm is not None:
            present = self.xp.concatenate([sendm, present])
        return out, present

    def _layout(self, spec: Spec, arrays) -> tuple[list[tuple[int, str]], int]:
        """(offset, element type) of each field in a record, and the record size: the program's whole
        record (spec.record, at -O0 and -O1), else just these fields back to back."""
        elems = [elem_of(a) for a in arrays]
        if spec.record:
            offsets, off = {}, 0
            for name, e in spec.record:
                offsets[name] = off
                off += ELEM_SIZE[e]
            return [(offsets.get(nm, 0), e) for (nm, _e), e in zip(spec.fields, elems)], max(off, 1)
        layout, rb = [], 0
        for e in elems:
            layout.append((rb, e))
            rb += ELEM_SIZE[e]
        return layout, max(rb, 1)

    def _per_entry(self, spec: Spec, arrays) -> list:
        """One whole program record per cross-rank adjacency entry; the receiver keeps one value per ghost."""
        lg, bk, xp = self.lg, self.bk, self.xp
        layout, rb = self._layout(spec, arrays)
        buf = bk.pack_records(arrays, layout, rb, lg.nv_send_idx)
        recv, _ = self.comm.alltoallv(buf.reshape(-1).view(f"V{rb}"), lg.nv_send_counts, lg.nv_recv_counts)
        rbytes = recv.view(xp.uint8).reshape(-1, rb)
        out = []
        for a, (off, e) in zip(arrays, layout):
            ghosts = xp.zeros(lg.n_ghosts, dtype=bk.dtype(e))
            ghosts[lg.nv_recv_ghost] = bk.unpack_field(rbytes, off, e)
            out.append(xp.concatenate([a.astype(bk.dtype(e), copy=False), ghosts]))
        return out

    # ------------------------------------------------------------ who sends

    def _set_counts(self, nz, seg: Array) -> Array:
        """Per consecutive segment (`seg` entries each), how many of the positions `nz` (ascending)
        fall in it: one search of the few set positions, one read."""
        bounds = _host.concatenate([[0], _host.cumsum(seg)]).astype(_host.int64)
        at = self.bk.to_host(self.xp.searchsorted(nz, self.bk.from_host(bounds)))
        return _host.diff(_host.asarray(at, dtype=_host.int64))

    def _flags(self, vals, seg: Array, ghosts: bool) -> Flags:
        nz = self.bk.nonzero(vals)
        return Flags(vals, seg, self._set_counts(nz, seg), ghosts, nz)

    def _presence(self, sendm) -> tuple:
        """(sending mirrors, their counts per destination, the presence to send or None, the ghosts'
        presence or None, present ghosts per source or None): None for what is not known before the
        exchange (a new send mask's presence arrives with it) or not needed (all send).

        The presence crosses ranks once per send mask: an exchange sending from the very array an
        earlier one sent from (matching's Deps and argmin both send from `NotMatched`, a superstep
        apart) reuses what arrived.  Program arrays are never written in place, the mask is held here
        so that its identity cannot be reused, and every rank runs the same program, so all ranks skip
        the same exchanges."""
        lg = self.lg
        if sendm is None:
            return lg.send_idx, lg.send_counts, None, None, lg.recv_counts
        for got in self._recent:
            if got.mask is sendm:
                return got.idx, got.counts, None, got.present, got.present_counts
        pres = self._flags(sendm[lg.send_idx], lg.send_counts, True)
        return lg.send_idx[pres.nz], pres.k, pres, None, None

    def _keep(self, sendm, idx, counts: Array, present, present_counts: Array) -> None:
        self._recent = [*self._recent[-(self.MASKS_KEPT - 1):], _Kept(sendm, idx, counts, present, present_counts)]

    # ------------------------------------------------------------ transports

    def _records(self, spec: Spec, arrays, sendm) -> tuple[list, object]:
        """Fixed-size records (the program's record at -O1), optionally only from present mirrors."""
        bk = self.bk
        layout, rb = self._layout(spec, arrays)
        idx, counts, pres, present, value_counts = self._presence(sendm)
        if pres is not None:
            (present,), rk = self._send([pres], counts, None)
            value_counts = rk[0]
            self._keep(sendm, idx, counts, present, value_counts)
        buf = bk.pack_records(arrays, layout, rb, idx)
        recv, _ = self.comm.alltoallv(buf.reshape(-1).view(f"V{rb}"), counts, value_counts)
        rbytes = recv.view(self.xp.uint8).reshape(-1, rb)
        at = None if present is None else bk.nonzero(present)
        return [self._ext(a, bk.unpack_field(rbytes, off, e), at, e) for a, (off, e) in zip(arrays, layout)], present

    def _packed(self, arrays, sendm) -> tuple[list, object]:
        """Only the needed fields, from the present mirrors only: bool fields as flags (bitmap or
        positions), others as values; everything to one rank in one buffer."""
        bk = self.bk
        idx, counts, pres, present, value_counts = self._presence(sendm)
        parts: list = [] if pres is None else [pres]
        for a in arrays:
            vals = a[idx]
            parts.append(self._flags(vals, counts, False) if vals.dtype == bool else vals.astype(bk.dtype(elem_of(a))))
        if not parts:
            return [], present
        got, rk = self._send(parts, counts, value_counts)
        if pres is not None:
            present, value_counts = got[0], rk[0]
            got = got[1:]
            self._keep(sendm, idx, counts, present, value_counts)
        at = None if present is None else bk.nonzero(present)
        n_recv = int(value_counts.sum())
        out = []
        for a, g in zip(arrays, got):
            assert len(g) == n_recv
            out.append(self._ext(a, g, at, elem_of(a)))
        return out, present

    # ------------------------------------------------------------ the wire

    def _forms(self, f: Flags) -> list[bool]:
        """Per destination rank: do `f`'s flags go as positions (else as a bitmap)?"""
        if self._form is not None:
            return [self._form == "sparse"] * len(f.seg)
        return [AK.flags_sparse(int(n), int(k)) for n, k in zip(f.seg, f.k)]

    def _send(self, parts: list, counts: Array, value_counts: Array | None
              ) -> tuple[list, list[Array]]:
        """Every part (`Flags`, or a value array in send order, `counts` values to each rank) to its
        ranks in one buffer per rank, after the header when any part is flags.  Returns (each part as
        received, in ghost order; each flags part's set entries from each source).  `value_counts`:
        values arriving from each source, None when the presence (the first part) tells."""
        lg, xp, bk = self.lg, self.xp, self.bk
        flags = [p for p in parts if isinstance(p, Flags)]
        sparse = [self._forms(f) for f in flags]
        rk, rs = self._header(flags, sparse)
        if value_counts is None:
            value_counts = rk[0]
        send: list[list] = [[] for _ in range(lg.size)]  # per destination: its chunks, part after part
        sizes: list[list[int]] = []  # per part: the bytes arriving from each source
        vo = _host.concatenate([[0], _host.cumsum(counts)]).astype(_host.int64)
        j = 0
        for p in parts:
            if isinstance(p, Flags):
                for r, c in enumerate(AK.encode_flags(bk, p.vals, p.seg, p.k, sparse[j], p.nz)):
                    send[r].append(c)
                n = lg.recv_counts if p.ghosts else value_counts
                sizes.append([AK.flags_bytes(int(a), int(k), bool(s)) for a, k, s in zip(n, rk[j], rs[j])])
                j += 1
            else:
                raw, it = p.view(xp.uint8), p.dtype.itemsize
                for r in range(lg.size):
                    send[r].append(raw[int(vo[r]) * it:int(vo[r + 1]) * it])
                sizes.append([int(c) * it for c in value_counts])
        flat = [c for cs in send for c in cs]
        buf = xp.concatenate(flat) if flat else xp.zeros(0, dtype=xp.uint8)
        send_bytes = _host.array([sum(len(c) for c in cs) for cs in send], dtype=_host.int64)
        recv_bytes = _host.array([sum(s[r] for s in sizes) for r in range(lg.size)], dtype=_host.int64)
        recv, _ = self.comm.alltoallv(buf, send_bytes, recv_bytes)
        pieces: list[list] = [[] for _ in parts]  # per part: what each source sent of it
        pos = 0
        for r in range(lg.size):
            for i, s in enumerate(sizes):
                pieces[i].append(recv[pos:pos + s[r]])
                pos += s[r]
        out, j = [], 0
        for p, got in zip(parts, pieces):
            if isinstance(p, Flags):
                out.append(AK.decode_flags(bk, got, lg.recv_counts if p.ghosts else value_counts, rk[j], rs[j]))
                j += 1
            else:  # (a fresh concatenation: aligned for its element type)
                out.append((xp.concatenate(got) if got else xp.zeros(0, dtype=xp.uint8)).view(p.dtype))
        return out, rk

    def _header(self, flags: list[Flags], sparse: list[list[bool]]) -> tuple[list[Array], list[Array]]:
        """Each flags part's (set entries, sparse form) from each source rank, on the host: one
        `2 * set + sparse` per part and peer, little-endian in the narrowest width holding twice the
        mirrors between the two (both sides know that count; none between them: nothing)."""
        lg, size, nf = self.lg, self.lg.size, len(flags)
        if not nf:
            return [], []
        words = _host.array([[2 * int(f.k[r]) + int(s[r]) for f, s in zip(flags, sparse)] for r in range(size)],
                         dtype="<u8")
        sw = [AK.uint_width(2 * int(c) + 1) if c else 0 for c in lg.send_counts]
        rw = [AK.uint_width(2 * int(c) + 1) if c else 0 for c in lg.recv_counts]
        send = _host.concatenate([words[r].view(_host.uint8).reshape(nf, 8)[:, :sw[r]].reshape(-1) for r in range(size)])
        recv, _ = self.comm.alltoallv(send, _host.array(sw, dtype=_host.int64) * nf, _host.array(rw, dtype=_host.int64) * nf)
        got = _host.zeros((size, nf, 8), dtype=_host.uint8)
        pos = 0
        for r in range(size):
            got[r, :, :rw[r]] = _host.asarray(recv[pos:pos + rw[r] * nf]).reshape(nf, rw[r])
            pos += rw[r] * nf
        w = got.view("<u8").reshape(size, nf)
        return [(w[:, j] >> 1).astype(_host.int64) for j in range(nf)], [(w[:, j] & 1).astype(bool) for j in range(nf)]

    def _ext(self, a, ghost_vals, at, e: str):
        """Owned values, then ghost values (at the ghosts `at` only, zeros elsewhere, when not None)."""
        xp, dt = self.xp, self.bk.dtype(e)
        if at is None:
            ghosts = ghost_vals
        else:
            ghosts = xp.zeros(self.lg.n_ghosts, dtype=dt)
            ghosts[at] = ghost_vals
        return xp.concatenate([a.astype(dt, copy=False), ghosts.astype(dt, copy=False)])

    def broadcast(self, record: tuple) -> None:
        """The naive code's superstep record, to every mirror along every cross-rank entry (zeros: no
        field is read), when the superstep sent nothing else."""
        if self.lg.size > 1 and record:
            spec = Spec(-1, "nbr", transport="entries", record=record)
            self.exchange(spec, (), None)
