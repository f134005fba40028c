"""Ghost exchange: vertex values to the ranks that mirror them, as an exchange's spec says.

Transports (spec.transport): `entries` sends the program's whole record once
per cross-rank adjacency entry (Pregel's naive messages), `records` once per
mirror, `packed` only the spec's fields (bools as bits).  With a send mask
(spec.presence) only the mirrors whose sender condition holds send, after a
presence bitmap.  One rank sends nothing: the ext array is the array itself.
"""

from __future__ import annotations

import time

from g2pl.contract import ELEM_SIZE, Spec
from g2pl.runtime.backend import Backend
from g2pl.runtime.stats import Tally


def elem_of(a) -> str:
    k = a.dtype.kind
    return "bool" if k == "b" else "float" if k == "f" else "int"


class Transport:
    """Moves ghost values for one rank's part `lg` over communicator `comm`."""

    #: send masks whose received presence is kept for reuse (matching: Deps, its delta flips, argmin)
    MASKS_KEPT = 3

    def __init__(self, bk: Backend, lg, comm, tally: Tally) -> None:
        self.bk, self.xp, self.lg, self.comm, self.tally = bk, bk.xp, lg, comm, tally
        self._present_counts = None
        # (send mask, its senders, counts per rank, received presence, its counts per rank) of the last
        # few exchanges with a send mask, newest last: see _presence
        self._recent: list[tuple] = []

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

    def _senders(self, sendm) -> tuple:
        """Mirrors that send (all, or those whose sender condition holds), counts per destination, and
        the presence bitmaps (None when everyone sends)."""
        lg = self.lg
        if sendm is None:
            return lg.send_idx, lg.send_counts, None
        sel = sendm[lg.send_idx]
        bits = self.bk.packbits_segments(sel, lg.send_counts)
        return lg.send_idx[self.bk.nonzero(sel)], self.bk.segment_counts(sel, lg.send_counts), bits

    def _presence(self, sendm) -> tuple:
        """(sending mirrors, their counts per destination, the ghosts' presence or None when all send).

        The presence bitmaps cross ranks once per send mask: an exchange sending from the very array an
        earlier one sent from (matching's Deps and argmin both send from `NotMatched`, a superstep
        apart) reuses what arrived.  Program arrays are never written in place, the mask is held here
        so that its identity cannot be reused, and every rank runs the same program, so all ranks skip
        the same exchanges."""
        for got in self._recent if sendm is not None else ():
            if got[0] is sendm:
                self._present_counts = got[4]
                return got[1], got[2], got[3]
        idx, counts, bits = self._senders(sendm)
        present = None if bits is None else self._recv_presence(bits)
        if sendm is not None:
            self._recent = [*self._recent[-(self.MASKS_KEPT - 1):], (sendm, idx, counts, present, self._present_counts)]
        return idx, counts, present

    def _records(self, spec: Spec, arrays, sendm) -> tuple[list, object]:
        """Fixed-size records (the program's record at -O1), optionally only from present mirrors."""
        lg, bk = self.lg, self.bk
        layout, rb = self._layout(spec, arrays)
        idx, counts, present = self._presence(sendm)
        buf = bk.pack_records(arrays, layout, rb, idx)
        if present is not None:
            recv, _ = self.comm.alltoallv(buf.reshape(-1).view(f"V{rb}"), counts)
        else:
            recv, _ = self.comm.alltoallv(buf.reshape(-1).view(f"V{rb}"), counts, lg.recv_counts)
        rbytes = recv.view(self.xp.uint8).reshape(-1, rb)
        return [self._ext(a, bk.unpack_field(rbytes, off, e), present, e) for a, (off, e) in zip(arrays, layout)], present

    def _packed(self, arrays, sendm) -> tuple[list, object]:
        """Only the needed fields: bool fields bit-packed, others as values, per destination rank."""
        lg, bk = self.lg, self.bk
        idx, counts, present = self._presence(sendm)
        n_recv = int(lg.recv_counts.sum()) if present is None else int(self.bk.item(self.xp.count_nonzero(present)))
        value_counts = lg.recv_counts if present is None else self._present_counts
        out = []
        for a in arrays:
            e = elem_of(a)
            vals = a[idx]
            if e == "bool":
                got = self._bits(bk.packbits_segments(vals, counts), value_counts)
            else:
                got, _ = self.comm.alltoallv(vals.astype(bk.dtype(e)), counts, value_counts)
            assert len(got) == n_recv
            out.append(self._ext(a, got, present, e))
        return out, present

    def _bits(self, packed: tuple, bit_counts):
        """Bools bit-packed per destination (`packbits_segments`) to their ranks, `bit_counts` from each
        source: the receivers know the byte counts, so no count exchange precedes the data."""
        byte_counts = (bit_counts + 7) // 8
        recv, rc = self.comm.alltoallv(packed[0], packed[1], byte_counts)
        return self.bk.unpackbits_segments(recv, rc, bit_counts)

    def _recv_presence(self, bits: tuple):
        """Presence of each ghost (in ghost order), from the senders' bitmaps."""
        present = self._bits(bits, self.lg.recv_counts)
        self._present_counts = self.bk.segment_counts(present, self.lg.recv_counts)
        return present

    def _ext(self, a, ghost_vals, present, e: str):
        xp, dt = self.xp, self.bk.dtype(e)
        if present is None:
            ghosts = ghost_vals
        else:
            ghosts = xp.zeros(self.lg.n_ghosts, dtype=dt)
            ghosts[self.bk.nonzero(present)] = ghost_vals
        return xp.concatenate([a.astype(dt, copy=False), ghosts.astype(dt, copy=False)])

    def broadcast(self, record: tuple) -> None:
        """The naive code's superstep record, to every mirror along every cross-rank entry (zeros: no
        field is read), when the superstep sent nothing else."""
        if self.lg.size > 1 and record:
            spec = Spec(-1, "nbr", transport="entries", record=record)
            self.exchange(spec, (), None)
