"""The Backend protocol: the array module and the primitives the runtime verbs are written in.

The verbs (engine, neighbourhood, edges, transport) name no array library:
they use `bk.xp` for what NumPy and CuPy share (zeros, flatnonzero, cumsum,
concatenate, ...) and the methods below for everything that differs between
libraries (segmented reductions, scatter-reductions, sparse products, bit
packing, aggregator partials, the counter-based RNG) or that crosses the
host/device line.  `NumPyBackend` (numpy_backend.py) is the reference
implementation and the only importer of the NumPy kernels.
"""

from __future__ import annotations

from typing import Any, Protocol


class Ops(Protocol):
    """Elementwise operations of the generated code (`ops.*`): where NumPy's own spelling would
    differ between backends or give the wrong answer for the language."""

    def select(self, cond, a, b): ...  # `cond ? a : b`, elementwise, without branches
    def to_int(self, x): ...  # `int(x)`: truncation, saturating, nan -> 0
    def to_float(self, x): ...
    def mod(self, a, b): ...  # `a % b`, 0 where b == 0


class Backend(Ops, Protocol):
    name: str
    xp: Any  # the array module (numpy, cupy)

    def dtype(self, elem: str) -> Any: ...
    def is_array(self, x) -> bool: ...  # a 1-d array of this backend (not a scalar)
    def int64(self, x) -> Any: ...  # a scalar with int64 wrap-around

    # structure
    def segments(self, indptr) -> Any: ...  # CSR rows: .n .indptr .counts .owner .gather_reduce(...)
    def csr_matrix(self, indptr, cols, n_cols: int, kind: str) -> Any: ...  # ones, `@` a vector
    def transpose(self, indptr, cols, data, n_cols: int) -> tuple[Any, Any, Any]: ...
    def expand_ranges(self, starts, lens) -> Any: ...

    # neighbourhood reductions
    def seg_reduce(self, seg, op: str, value, mask, elem: str, ids=None) -> Any: ...
    def scatter_reduce(self, op: str, recv, vals, mask, n: int, elem: str, ids=None) -> Any: ...
    def any_pull(self, seg, nbr, x, budget=None, rows=None) -> Any: ...
    def row_any(self, seg_indptr, rows, nbr, mask) -> Any: ...
    def mean(self, total, count) -> Any: ...
    def identity(self, op: str, dtype) -> Any: ...
    def empty_value(self, op: str, elem: str) -> Any: ...

    # exchanges
    def packbits_segments(self, vals, seg_counts) -> tuple[Any, Any]: ...
    def unpackbits_segments(self, data, byte_counts, bit_counts) -> Any: ...
    def segment_counts(self, sel, seg_counts) -> Any: ...
    def pack_records(self, arrays, layout, rb: int, idx) -> Any: ...
    def unpack_field(self, rbytes, off: int, elem: str) -> Any: ...

    # aggregators and randomness
    def partial(self, op: str, value, mask, elem: str, ids, vk: str) -> Any: ...
    def value_kind(self, op: str, value, elem: str) -> str: ...
    def finish(self, op: str, elem: str, vk: str, slots) -> Any: ...
    def uniform(self, seed: int, site: int, count: int, key_a, key_b=None) -> Any: ...

    # host and device
    def to_host(self, a) -> Any: ...
    def from_host(self, a) -> Any: ...
    def synchronize(self) -> None: ...
    def memory_info(self) -> dict: ...

    # reads that synchronize a device (a GPU backend counts them: `syncs` in --stats)
    def item(self, x) -> Any: ...  # a Python scalar of a 0-d array
    def nonzero(self, mask) -> Any: ...  # flatnonzero
    def bincount(self, x, minlength: int = 0) -> Any: ...
    def repeat(self, a, counts) -> Any: ...
    def put_where(self, arr, mask, value) -> None: ...  # arr[mask] = value, no read
    def reset(self) -> None: ...  # a run starts: zero the transfer and sync counters


_LOADED: dict[tuple, Backend] = {}


def load(name: str) -> Backend:
    """The backend called `name` for this process (cupy: the device of this rank), one instance per
    process: the device copies of graph parts and their structures keep the backend they were made
    with, so its counters (`reset` at the start of every run) see every run's work."""
    key: tuple = (name,)
    if name == "cupy":
        from g2pl.runtime.cupy_backend import CuPyBackend, import_cupy

        key = (name, id(import_cupy()[0]))  # the CuPy module imported now (tests swap in a stand-in)
    bk = _LOADED.get(key)
    if bk is None:
        if name == "cupy":
            bk = CuPyBackend()
        else:
            from g2pl.runtime.numpy_backend import NumPyBackend

            bk = NumPyBackend()
        _LOADED[key] = bk
    bk.reset()
    return bk
