"""The NumPy backend (see backend.py): the reference implementation of every primitive.

The only module of the runtime that imports the NumPy kernels (kernels.py)
and SciPy's sparse matrices; a CuPy backend implements the same methods.
"""

from __future__ import annotations

import resource
from types import ModuleType

import numpy as np

from g2pl.contract import ELEM_SIZE
from g2pl.runtime import array_kernels as AK
from g2pl.runtime import cpu_kernels, intops  # (cpu_kernels imports numba on first use, not here)
from g2pl.runtime import kernels as K
from g2pl.runtime import partials as P
from g2pl.runtime.column_blocks import ColumnBlocks


def load_sparse() -> ModuleType:
    """scipy.sparse, imported on first use: a run that neither sums over neighbours nor has several
    ranks never needs it (a quarter of `g2pl run`'s start-up).  The engine calls this before a run's
    clock starts when the program may need it, not in the first superstep that builds a CSR product."""
    import scipy.sparse

    return scipy.sparse


class OnesMatrix:
    """The adjacency as a CSR matrix of ones, for `@` a vector (sums and counts over neighbours).

    On a large adjacency where numba is there, the product is one compiled pass that adds each row's
    gathered entries (kernels.row_reduce; by column blocks, column_blocks.py, where the adjacency has
    them): 4 bytes of column index read per entry, where SciPy's
    `csr_matvec` also reads the matrix's 8-byte 1.0 (and the matrix holds those 8 bytes per entry).
    Otherwise SciPy's product, its matrix made on first use.  Both add a row's entries in order from
    +0, so the result has the same bits either way, on any number of ranks."""

    def __init__(self, indptr: np.ndarray, cols: np.ndarray, n_cols: int, kind: str,
                 blocks: ColumnBlocks | None = None) -> None:
        self.indptr, self.cols, self.n_cols, self.blocks = indptr, cols, n_cols, blocks
        self.dtype = np.dtype(np.float64 if kind == "f" else np.int64)
        self._scipy = None

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.indptr) - 1, self.n_cols

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if not (x.dtype == np.float32 and self.dtype.kind == "f"):  # (float32: gathered as it is, added as float64)
            x = x.astype(self.dtype, copy=False)
        got = K.row_reduce("sum", self.indptr, self.cols, x, blocks=self.blocks)
        if got is not None:
            return got
        if self._scipy is None:
            self._scipy = load_sparse().csr_matrix((np.ones(len(self.cols), dtype=self.dtype), self.cols, self.indptr),
                                                   shape=self.shape)
        return self._scipy @ x


class NumPyBackend(intops.IntOpsMixin, AK.HostOps):
    """Host arrays; every primitive vectorized over whole arrays (no Python loop over elements)."""

    name = "numpy"
    xp = np

    # ---- elementwise operations of the generated code

    select = staticmethod(K.select)
    select_into = staticmethod(K.select_into)

    @staticmethod
    def to_int(x):
        """`int(x)`: see K.float_to_int (floats); bools and vids as they are (an int64 array is itself, not
        a copy: no array of a value is written after it is made but by its sole holder, select_into).
        Scalars stay np.int64."""
        a = np.asarray(x)
        r = K.float_to_int(a) if a.dtype.kind == "f" else a.astype(np.int64, copy=False)
        return r if r.ndim else r[()]

    @staticmethod
    def to_float(x):
        a = np.asarray(x).astype(np.float64)
        return a if a.ndim else float(a)

    @staticmethod
    def narrow32(x):
        with np.errstate(over="ignore"):  # (beyond single precision's range: ±inf, as IEEE rounds)
            return np.asarray(x).astype(np.float64, copy=False).astype(np.float32)

    @classmethod
    def to_float32(cls, x):
        a = cls.narrow32(x).astype(np.float64)
        return a if a.ndim else float(a)

    # integer operations (intops.py): scalars stay np.int64
    @staticmethod
    def _int_op(name: str, *args):
        r = intops.FUNCS[name](np, *args)
        return r if np.ndim(r) else np.int64(r)

    # ---- types

    @staticmethod
    def dtype(elem: str):
        return K.DTYPES[elem]

    @staticmethod
    def is_array(x) -> bool:
        return isinstance(x, np.ndarray) and x.ndim == 1

    @staticmethod
    def int64(x) -> np.int64:
        """A scalar int with int64 wrap-around (the language's `int` is 64-bit everywhere)."""
        return np.int64(((int(x) + 2**63) % 2**64) - 2**63)

    # ---- structure

    segments = staticmethod(K.Segments)
    #: a per-entry head is evaluated on blocks of whole rows of about this many entries, so that its
    #: entry-length temporaries stay in cache (and int32 indices are widened a block at a time)
    entry_block = 1 << 17
    expand_ranges = staticmethod(K.expand_ranges)

    @staticmethod
    def csr_matrix(indptr, cols, n_cols: int, kind: str, blocks: ColumnBlocks | None = None):
        return OnesMatrix(indptr, cols, n_cols, kind, blocks)

    @staticmethod
    def column_blocks(indptr, cols, order) -> ColumnBlocks:
        return ColumnBlocks(indptr, cols, order)

    @staticmethod
    def oriented_triangles(indptr, cols, count_only: bool):
        """A merge of the sorted rows compiled by numba (cpu_kernels.py); None without numba, or for
        fewer wedges than repay loading it."""
        deg = indptr[1:] - indptr[:-1]
        wedges = int(deg @ deg - deg.sum()) // 2  # the NumPy path's lookups
        return cpu_kernels.oriented_triangles(indptr, cols, count_only) if cpu_kernels.use(wedges) else None

    @staticmethod
    def scatter_argmin(lp, v, ix, t1, t2, n: int):
        """One compiled pass (cpu_kernels.py); None without numba, or for fewer entries than repay
        loading it."""
        return cpu_kernels.scatter_argmin(lp, v, ix, t1, t2, n) if cpu_kernels.use(lp.size) else None

    @staticmethod
    def transpose(indptr, cols, data, n_cols: int):
        """(indptr over columns, rows, data) of the CSR matrix: CSR -> CSC in linear time.  Rows and data
        keep their narrow types (int32 below 2^31): this copy of the adjacency is as big as the CSR."""
        values = np.zeros(len(cols), dtype=np.int8) if data is None else data  # (a byte per entry: structure only)
        t = load_sparse().csr_matrix((values, cols, indptr), shape=(len(indptr) - 1, n_cols)).tocsc()  # keeps zeros
        return t.indptr.astype(np.int64), t.indices, None if data is None else t.data

    @staticmethod
    def graph_part(lg):
        """The graph part the verbs work on: the host part itself."""
        return lg

    @classmethod
    def gather(cls, table, idx):
        """`table[idx]` for a 1-d table, through take_into (int32 indices a block at a time)."""
        out = np.empty(len(idx), dtype=table.dtype)
        cls.take_into(table, idx, out)
        return out

    @staticmethod
    def take_into(table, idx, out) -> None:
        """out[:] = table[idx] without a temporary (valid indices; see kernels.TAKE_MODE).  NumPy's take
        widens int32 indices into a full-length intp copy first: they go a block at a time instead."""
        n, block = len(idx), K.Segments.BLOCK
        if idx.dtype == np.intp or n <= 2 * block:
            np.take(table, idx, out=out, mode=K.TAKE_MODE)
            return
        for i in range(0, n, block):
            np.take(table, idx[i:i + block], out=out[i:i + block], mode=K.TAKE_MODE)

    # ---- neighbourhood reductions

    seg_reduce = staticmethod(K.seg_reduce)

    def value_counts(self, value, mask):
        return AK.value_counts(self, value, mask)

    scatter_reduce = staticmethod(K.scatter_reduce)
    any_pull = staticmethod(K.any_pull)
    plus_edge_reduce = staticmethod(K.plus_edge_reduce)
    pull_modes = staticmethod(K.pull_modes)
    push_plus_edge = staticmethod(K.push_plus_edge)
    identity = staticmethod(K.identity)
    empty_value = staticmethod(K.empty_value)

    narrow_int32 = staticmethod(K.narrow_int32)
    widen_int32 = staticmethod(K.widen_int32)

    @staticmethod
    def rows_with_any(indptr, rows, nbr, mask):
        """Per row of `rows`: does any of its entries have a sender where `mask` holds?"""
        starts = indptr[rows]
        lens = indptr[rows + 1] - starts
        sent = NumPyBackend.gather(mask, nbr[K.expand_ranges(starts, lens)])
        nz = np.flatnonzero(lens)
        out = np.zeros(len(rows), dtype=bool)
        if len(nz):
            out[nz] = np.add.reduceat(sent.astype(np.int64), (np.cumsum(lens) - lens)[nz]) > 0
        return out

    @staticmethod
    def mean(total, count):
        """total / count, NaN where count is 0 (an empty average)."""
        with np.errstate(all="ignore"):
            return np.where(count == 0, np.nan, total / np.maximum(count, 1))

    # ---- exchanges

    @staticmethod
    def packbits_segments(vals, seg_counts):
        return AK.packbits_segments(NumPyBackend, vals, seg_counts)

    @staticmethod
    def unpackbits_segments(data, byte_counts, bit_counts):
        return AK.unpackbits_segments(NumPyBackend, data, byte_counts, bit_counts)

    @staticmethod
    def pack_records(arrays, layout, rb: int, idx):
        """Rows of `rb` bytes, one per sending vertex in `idx`, each field's bytes at its offset."""
        buf = np.zeros((len(idx), rb), dtype=np.uint8)
        for a, (off, e) in zip(arrays, layout):
            sz = ELEM_SIZE[e]
            buf[:, off:off + sz] = np.ascontiguousarray(a[idx].astype(K.DTYPES[e])).view(np.uint8).reshape(-1, sz)
        return buf

    @staticmethod
    def unpack_field(rbytes, off: int, elem: str):
        return np.ascontiguousarray(rbytes[:, off:off + ELEM_SIZE[elem]]).view(K.DTYPES[elem]).reshape(-1)

    # ---- aggregators and randomness

    @staticmethod
    def partial(op: str, value, mask, elem: str, ids, vk: str):
        """partials.partial, given the elements' IDs only where it reads them (argmin, argmax, pick): a
        masked sum or count would otherwise gather the IDs of every selected element for nothing; a
        float sum's bins by one compiled pass where numba serves."""
        return P.partial(op, value, mask, elem, ids if op in ("argmin", "argmax", "pick") else None, vk, K.float_bins)

    value_kind = staticmethod(P.value_kind)
    finish = staticmethod(P.finish)
    uniform = staticmethod(K.uniform)

    @staticmethod
    def host_int64(parts):
        """One host int64 vector of aggregator slots (or control values) for the communicator."""
        return np.concatenate([np.asarray(p, dtype=np.int64).reshape(-1) for p in parts]) if len(parts) else \
            np.zeros(0, np.int64)

    # ---- host and device: one memory

    @staticmethod
    def to_host(a):
        return a

    @staticmethod
    def from_host(a):
        return a

    @staticmethod
    def reset() -> None:
        return None

    @staticmethod
    def synchronize() -> None:
        return None

    @staticmethod
    def staged(comm):
        """The communicator the verbs use: host arrays go to MPI as they are."""
        return comm

    @staticmethod
    def memory_info() -> dict:
        return {"device": "host", "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
