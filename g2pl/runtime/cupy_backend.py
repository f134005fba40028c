"""The CuPy backend (see backend.py): the same primitives as the NumPy backend, on a GPU.

Written in what CuPy 14.1+ has, plus raw CUDA kernels (raw_kernels.py, cuda/kernels.cu) for the
primitives that dominate a superstep: segmented min/max/sum/or/and per CSR row (CuPy has no
`minimum.reduceat`; exact, deterministic, the gather fused in), the adjacency's values-free SpMV, the
bottom-up pull with early exit over a frontier bitmap, and exact float64 scatter min/max (CuPy's own
float64 `minimum.at` rounds through float32).  Integer scatters use int64 atomics (exact, wrapping
like the language's `int`), exchanges are bit-packed, and the rank's graph part is uploaded to the
device array by array, on first read.  MPI sees host arrays only: `StagingComm` copies device buffers
to host memory and back (the PyPI MPICH is not CUDA-aware).  Transfers and scalar reads are counted
(`device` in `--stats`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.runtime import array_kernels as AK
from g2pl.runtime import cupy_kernels as CK
from g2pl.runtime import intops, rng
from g2pl.runtime import partials as P
from g2pl.runtime import raw_kernels as RK
from g2pl.runtime.cupy_comm import DeviceComm, StagingComm, mpi_cuda_aware
from g2pl.runtime.grid import GridComm
from g2pl.runtime.numpy_backend import NumPyBackend
from g2pl.runtime.partition import GraphCache, LocalGraph
from g2pl.runtime.values import DTYPES, INT64_MAX

#: LocalGraph fields that stay on the host: counts per rank (control values of the exchanges)
HOST_FIELDS = ("send_counts", "recv_counts", "nv_send_counts", "nv_recv_counts")


def import_cupy():
    """(cupy, cupyx.scipy.sparse), or a G2PLError saying how to install CuPy / that no device exists."""
    try:
        import cupy
        import cupyx.scipy.sparse as sparse
    except ImportError:
        raise G2PLError("--backend cupy needs CuPy 14: pip install -e '.[gpu]' (CUDA 12) or "
                        "pip install -e '.[gpu-cuda13]' (CUDA 13), or pip install cupy-cuda12x") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # CUDARuntimeError: no driver or no device
        count = 0
    if not count:
        raise G2PLError("--backend cupy: no CUDA device (CuPy is installed, but cupy.cuda.runtime.getDeviceCount() "
                        "finds none); use --backend numpy")
    return cupy, sparse


class DevicePart(LocalGraph):
    """A rank's graph part with its arrays on the device (counts per rank stay on the host)."""

    @property
    def xp(self):
        import cupy

        return cupy


class CuPyBackend(intops.IntOpsMixin):
    """Device arrays; the NumPy backend's answers (ints exact, float sums in another order)."""

    name = "cupy"
    entry_block = 0  # per-entry heads over every entry at once (one kernel launch per operation)

    def __init__(self, device: int | None = None) -> None:
        self.xp, self.sparse = import_cupy()
        xp = self.xp
        if device is None:  # one device per rank: the local rank modulo the device count
            local = int(os.environ.get("MPI_LOCALRANKID", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")))
            device = local % xp.cuda.runtime.getDeviceCount()
        xp.cuda.Device(device).use()
        self.device = device
        self.h2d_bytes = self.d2h_bytes = self.syncs = 0
        self._pinned: dict[str, np.ndarray] = {}  # page-locked staging buffer per dtype (see to_pinned)

    # ---- elementwise operations of the generated code

    def select(self, cond, a, b):
        return self.xp.where(cond, a, b)

    def select_into(self, cond, a, x):
        """A new array, as `select` (on the device the copy the NumPy backend saves is a memory-bound
        kernel at the GPU's bandwidth)."""
        return self.xp.where(cond, a, x)

    def to_int(self, x):
        """`int(x)`: truncation toward zero, saturating at the int64 range, nan -> 0 (as NumPy's)."""
        xp = self.xp
        a = x if isinstance(x, xp.ndarray) else xp.asarray(x)
        if a.dtype.kind != "f":
            r = a.astype(xp.int64)
        else:
            r = xp.trunc(xp.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)).astype(xp.int64)
            r = xp.where(a >= 2.0**63, INT64_MAX, r)
            r = xp.where(a < -(2.0**63), -INT64_MAX - 1, r)
        return r if r.ndim else np.int64(self._item(r))

    def to_float(self, x):
        xp = self.xp
        a = (x if isinstance(x, xp.ndarray) else xp.asarray(x)).astype(xp.float64)
        return a if a.ndim else float(self._item(a))

    def narrow32(self, x):
        xp = self.xp
        return (x if isinstance(x, xp.ndarray) else xp.asarray(x)).astype(xp.float64, copy=False).astype(xp.float32)

    def to_float32(self, x):
        a = self.narrow32(x).astype(self.xp.float64)
        return a if a.ndim else float(self._item(a))

    # integer operations (intops.py): on the device when an operand is a device array, else on the host
    def _int_op(self, name: str, *args):
        xp = self.xp
        if any(isinstance(x, xp.ndarray) for x in args):
            return intops.FUNCS[name](xp, *args)
        return np.int64(intops.FUNCS[name](np, *args))

    # ---- types

    @staticmethod
    def dtype(elem: str):
        return DTYPES[elem]

    def is_array(self, x) -> bool:
        return isinstance(x, self.xp.ndarray) and x.ndim == 1

    int64 = staticmethod(NumPyBackend.int64)

    def _item(self, a):
        self.syncs += 1
        return a.item()

    # ---- the reads that synchronize the device: counted (`syncs` in --stats)

    def item(self, x):
        """A Python scalar of a 0-d device array (a read), or of a host scalar (none)."""
        return self._item(x) if isinstance(x, self.xp.ndarray) else (x.item() if hasattr(x, "item") else x)

    def nonzero(self, mask):
        self.syncs += 1  # the output size is read back
        return self.xp.flatnonzero(mask)

    def bincount(self, x, minlength: int = 0, weights=None):
        self.syncs += 1  # the largest value is read back
        return self.xp.bincount(x, weights=weights, minlength=minlength)

    def put_where(self, arr, mask, value) -> None:
        arr[...] = self.xp.where(mask, value, arr)

    def at_minmax(self, op: str, out, idx, vals) -> None:
        """out[idx] = min/max(out[idx], vals) with the device's atomics, exactly: CuPy's float64
        `minimum.at`/`maximum.at` round every update through float32 (its atomicMin on double calls
        fminf) and drop NaN, so floats go through a compare-and-swap kernel (raw_kernels)."""
        xp = self.xp
        if out.dtype != xp.float64:
            (xp.minimum if op == "min" else xp.maximum).at(out, idx, vals)
            return
        vals = vals if isinstance(vals, xp.ndarray) else xp.full(len(idx), vals, dtype=xp.float64)
        RK.scatter_minmax(xp, op, out, idx, vals)

    def repeat(self, a, counts):
        if isinstance(counts, self.xp.ndarray):
            self.syncs += 1  # the output size is read back
        return self.xp.repeat(a, counts)

    # ---- structure

    def segments(self, indptr):
        return CK.Segments(self, indptr)

    def expand_ranges(self, starts, lens):
        return AK.expand_ranges(self, starts, lens)

    @staticmethod
    def oriented_triangles(indptr, cols, count_only: bool):
        return None  # listed with array operations on the device (common_neighbours.RowHash)

    @staticmethod
    def scatter_argmin(lp, v, ix, t1, t2, n: int):
        return None  # scatter reductions on the device (keyed.Keyed._scatter_winners)

    @staticmethod
    def plus_edge_reduce(op: str, indptr, nbr, x, sent, w, eid, elem: str):
        return None  # the head over entry arrays on the device (neighbourhood.Neighbourhood._reduce)

    @staticmethod
    def pull_modes(indptr, nbr, x, sent, elem: str):
        return None  # the device sorts (row, value) pairs (array_kernels.group_mode)

    @staticmethod
    def push_plus_edge(op: str, indptr, recv, eid, senders, x, w, n: int, elem: str):
        return None  # the pushed entries' head scattered on the device (neighbourhood.Neighbourhood._push)

    def csr_matrix(self, indptr, cols, n_cols: int, kind: str, blocks=None):
        return CK.DeviceCSR(self, self.sparse, indptr, cols, n_cols)

    @staticmethod
    def column_blocks(indptr, cols, order):
        return None  # (the device's gathers are not cache-bound the same way: one thread per row)

    def transpose(self, indptr, cols, data, n_cols: int):
        xp = self.xp  # edge ids travel as float64 data: exact below 2**53 edges
        values = xp.ones(len(cols), dtype=xp.float32) if data is None else (data + 1).astype(xp.float64)
        t = self.sparse.csr_matrix((values, cols, indptr), shape=(len(indptr) - 1, n_cols))
        t = t.tocsc()
        if data is None:  # the structure only
            return t.indptr.astype(xp.int64), t.indices, None
        eids = (t.data - 1).astype(data.dtype)  # narrow types, as the NumPy backend gives them
        return t.indptr.astype(xp.int64), t.indices, eids

    def graph_part(self, lg: LocalGraph) -> DevicePart:
        """The device copy of a graph part, made once and kept in the part's cache.  Each array is
        uploaded on its first read (a BFS reads the in-adjacency only: not the edge endpoints, weights
        or out-adjacency), arrays the host part shares (an undirected graph's in- and out-adjacency)
        are uploaded once, and all-equal weights (stride 0) travel as one value."""
        key = (id(self.xp), self.device)
        part = lg.cache.devices.get(key)
        if part is not None:
            return part
        fields: dict[str, Any] = {}
        later: list[str] = []
        held = lg.__dict__
        for f in dataclasses.fields(LocalGraph):
            if f.name == "cache":
                fields[f.name] = GraphCache()
            elif f.name in held and not isinstance(held[f.name], np.ndarray) or f.name in HOST_FIELDS:
                fields[f.name] = getattr(lg, f.name)  # scalars, None, and the per-rank counts
            else:  # a host array, or one the host part builds on first read
                fields[f.name] = None
                later.append(f.name)
        part = lg.cache.devices[key] = DevicePart(**fields)
        uploaded: dict[int, tuple] = {}  # id(host array) -> (host array, device array)

        def upload(name: str) -> Any:
            h = getattr(lg, name)
            got = uploaded.get(id(h))
            if got is None:
                if h.ndim == 1 and len(h) > 1 and h.strides[0] == 0:
                    d = self.xp.broadcast_to(self.from_host(np.ascontiguousarray(h[:1])), h.shape)
                else:
                    d = self.from_host(h)
                got = uploaded[id(h)] = (h, d)
            return got[1]

        for name in later:
            if hasattr(DevicePart, name):  # a field with a class default: attribute reads never miss, so
                setattr(part, name, upload(name))  # a lazy one would read the default (None): upload now
            else:
                part._lazy((name,), functools.partial(upload, name))
        return part

    def take_into(self, table, idx, out):
        self.xp.take(table, idx, out=out)

    def gather(self, table, idx):
        return table[idx]

    # ---- neighbourhood reductions

    def seg_reduce(self, seg, op: str, value, mask, elem: str, ids=None):
        return AK.seg_reduce(self, seg, op, value, mask, elem, ids)

    def value_counts(self, value, mask):
        return AK.value_counts(self, value, mask)

    def scatter_reduce(self, op: str, recv, vals, mask, n: int, elem: str, ids=None):
        return AK.scatter_reduce(self, op, recv, vals, mask, n, elem, ids)

    def any_pull(self, seg, nbr, x, budget=None, rows=None):
        """Per row: does any neighbour have x?  A raw kernel, one thread per row, stops at the row's first
        neighbour whose bit is set in a bitmap of x (Beamer's bottom-up step); with `rows`, only those
        rows are looked at and every other row is False.  Early exit bounds the pull's reads, so it
        never gives up for `budget` (None would make the caller push instead)."""
        return RK.pull_any(self.xp, seg.indptr, nbr, x, rows)

    def narrow_int32(self, v, mask, ident32: int):
        return AK.narrow_int32(self, v, mask, ident32)

    def widen_int32(self, r32, ident32: int, ident: int):
        return AK.widen_int32(self, r32, ident32, ident)

    def rows_with_any(self, indptr, rows, nbr, mask):
        """Per listed row: does any entry's neighbour have `mask`?  The early-exit pull over those rows."""
        return RK.pull_any(self.xp, indptr, nbr, mask, rows)[rows]

    def mean(self, total, count):
        xp = self.xp
        return xp.where(count == 0, xp.nan, total / xp.maximum(count, 1))

    identity = staticmethod(NumPyBackend.identity)
    empty_value = staticmethod(NumPyBackend.empty_value)

    # ---- exchanges: bits packed on the device, records assembled on the host (MPI sees host memory)

    def packbits_segments(self, vals, seg_counts):
        return AK.packbits_segments(self, vals, seg_counts)

    def unpackbits_segments(self, data, byte_counts, bit_counts):
        return AK.unpackbits_segments(self, data, byte_counts, bit_counts)

    def pack_records(self, arrays, layout, rb: int, idx):
        return NumPyBackend.pack_records([self.to_host(a) for a in arrays], layout, rb, self.to_host(idx))

    def unpack_field(self, rbytes, off: int, elem: str):
        return self.from_host(NumPyBackend.unpack_field(rbytes, off, elem))

    # ---- aggregators (two host int64 slots each) and randomness

    def value_kind(self, op: str, value, elem: str) -> str:
        if op == "avg":
            return "f"
        if op in ("count", "or", "and"):
            return "i"
        return "f" if np.dtype(getattr(value, "dtype", type(value))).kind == "f" else "i"

    def partial(self, op: str, value, mask, elem: str, ids, vk: str):
        """This rank's slots, reduced on the device; one scalar read each."""
        xp = self.xp
        if mask is not None:
            sel = self.nonzero(mask)
            value = value[sel]
            ids = ids[sel] if ids is not None else None
        cnt = len(value)
        if op == "count":
            return np.array([cnt, cnt], dtype=np.int64)
        if op in ("or", "and"):
            hit = self._item(value.any() if op == "or" else value.all()) if cnt else op == "and"
            return np.array([int(bool(hit)), cnt], dtype=np.int64)
        if cnt == 0:  # the empty partial: identity slots, as the NumPy backend's
            return P.partial(op, np.zeros(0, dtype=value.dtype), None, elem, np.zeros(0, np.int64), vk)
        v = value.astype(xp.int64) if value.dtype == xp.bool_ else value
        if op in ("sum", "avg"):
            if vk == "f":  # the bins on the device (one kernel, one read back), the limbs on the host
                bits = xp.ascontiguousarray(v, dtype=xp.float64).view(xp.int64)
                return P.bins_slots(RK.float_bins(xp, bits, self.to_host), cnt)
            return np.array([int(self._item(v.sum(dtype=xp.int64))), cnt], dtype=np.int64)
        if op in ("min", "max"):
            r = self._item(v.min() if op == "min" else v.max())
            return np.array([P._bits(r) if vk == "f" else int(r), cnt], dtype=np.int64)
        if op == "pick":
            best, i = self._item(v[0]), self._item(ids[0])
        else:
            b = v.min() if op == "argmin" else v.max()
            best, i = self._item(b), self._item(ids[self.nonzero(v == b)].min())
        return np.array([P._bits(best) if vk == "f" else int(best), int(i)], dtype=np.int64)

    finish = staticmethod(P.finish)

    @staticmethod
    def host_int64(parts):
        return NumPyBackend.host_int64(parts)

    def uniform(self, seed: int, site: int, count: int, key_a, key_b=None):
        """The NumPy backend's counter-based RNG, bit for bit, on the device."""
        return rng.uniform(seed, site, count, key_a, key_b, xp=self.xp)

    # ---- host and device

    def to_host(self, a):
        if isinstance(a, self.xp.ndarray):
            self.d2h_bytes += a.nbytes
            self.syncs += 1
            return self.xp.asnumpy(a)
        return a

    def to_pinned(self, a):
        """A device array copied into a reused page-locked host buffer (the copy DMA needs for speed),
        valid until the next call: for a buffer MPI sends at once."""
        import cupyx

        key = a.dtype.str
        buf = self._pinned.get(key)
        if buf is None or buf.size < a.size:
            buf = self._pinned[key] = cupyx.empty_pinned(max(a.size, 1 << 16), dtype=a.dtype)
        out = buf[:a.size]
        self.xp.asnumpy(a.ravel(), out=out)
        self.d2h_bytes += a.nbytes
        self.syncs += 1
        return out

    def from_host(self, a):
        if isinstance(a, np.ndarray):
            self.h2d_bytes += a.nbytes
            return self.xp.asarray(a)
        return a

    def reset(self) -> None:
        self.h2d_bytes = self.d2h_bytes = self.syncs = 0

    def synchronize(self) -> None:
        self.xp.cuda.Stream.null.synchronize()

    def memory_info(self) -> dict:
        """What `--stats` reports under `device`: the device, the memory pool's high-water mark (the
        pool keeps freed blocks, so its size is the run's peak), device->host reads and copies."""
        xp = self.xp
        pool = xp.get_default_memory_pool()
        try:
            name = xp.cuda.runtime.getDeviceProperties(self.device)["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
        except Exception:  # the stand-in in tests, or a driver without properties
            name = f"device {self.device}"
        return {"device": self.device, "name": name, "peak_bytes": int(pool.total_bytes()),
                "used_bytes": int(pool.used_bytes()), "syncs": self.syncs, "h2d_bytes": self.h2d_bytes,
                "d2h_bytes": self.d2h_bytes}

    def staged(self, comm):
        """The communicator the verbs use: staged through host memory, or, with G2PL_CUDA_AWARE_MPI=1
        and an MPI library that says it is CUDA-aware, device buffers handed to MPI directly (a
        grid-routed communicator, g2pl.runtime.grid, regroups on the host: always staged)."""
        if (os.environ.get("G2PL_CUDA_AWARE_MPI") == "1" and getattr(comm, "size", 1) > 1
                and not isinstance(comm, GridComm)):
            if not mpi_cuda_aware():
                raise G2PLError("G2PL_CUDA_AWARE_MPI=1, but this MPI library is not CUDA-aware "
                                "(MPIX_Query_cuda_support() is 0); unset it to stage through host memory")
            return DeviceComm(comm, self)
        return StagingComm(comm, self)
