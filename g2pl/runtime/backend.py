"""The Backend protocol: the array module and the primitives the runtime verbs are written in.

The verbs (engine, neighbourhood, edges, transport, remote, common_neighbours, keyed) name no array
library: they use `bk.xp` for what NumPy and CuPy share (zeros, flatnonzero, cumsum, concatenate,
...) and the methods below for everything that differs between libraries (segmented reductions,
scatter-reductions, sparse products, bit packing, aggregator partials, the counter-based RNG) or that
crosses the host/device line.  `NumPyBackend` (numpy_backend.py) is the reference implementation and
the only importer of the NumPy kernels; `CuPyBackend` (cupy_backend.py) implements the same members.

Every member is used by the runtime or by generated code, and both backends implement every one with
a compatible signature: tests/runtime/test_backend_protocol.py checks both directions.  Arrays are typed
`Array`: a NumPy or a CuPy array, for which no static type covers both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from g2pl.runtime.partition import LocalGraph

#: an array of the backend's array module (numpy.ndarray or cupy.ndarray; often 1-d)
Array = Any
#: an array, or a scalar where the generated code works on one value (`S` domain)
Value = Any
#: the `Segments` this backend's `segments` made: each backend reads its own class's internals
Seg = Any


class Segments(Protocol):
    """CSR row structure (`Backend.segments`): `n` rows over `indptr`, and per-row reductions."""

    n: int
    indptr: Array
    counts: Array  # entries per row
    _owner: Array | None  # `owner` once made; an adjacency view that already has it sets it

    @property
    def owner(self) -> Array:
        """The row of every entry."""
        ...

    def reduce(self, ufunc: Any, vals: Array, fill: Any) -> Array:
        """Per-row `ufunc` reduction of per-entry `vals`; rows without entries get `fill`."""
        ...

    def sum(self, vals: Array) -> Array:
        """Per-row sum of per-entry `vals` (0 for empty rows)."""
        ...

    def gather_reduce(self, ufunc: Any, table: Array, idx: Array, fill: Any, blocks: Any = None) -> Array:
        """`reduce(ufunc, table[idx], fill)` without the entry-length temporary (`blocks`: the backend's
        `column_blocks` of these entries, or None)."""
        ...

    def count(self, mask: Array) -> Array:
        """Entries per row where the per-entry `mask` holds (int64)."""
        ...


class RowBlocks(Segments, Protocol):
    """The segments of a backend whose `entry_block` is positive: they also cut the rows in blocks."""

    def row_blocks(self, size: int) -> list[tuple[int, int, int, int]]:
        """Consecutive blocks of whole rows of about `size` entries: (first row, end row, first entry,
        end entry)."""
        ...


class KernelOps(Protocol):
    """What the kernels written once for any array module (array_kernels.py) ask of their `ops`: a
    backend, or `HostOps` for host arrays.  The reads here synchronize a device, so a GPU backend
    counts them (`syncs` in --stats)."""

    @property
    def xp(self) -> Any:
        """The array module (numpy, cupy): what both libraries spell alike."""
        ...

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        """`cond ? a : b` elementwise (also the generated code's `ops.select`)."""
        ...

    def item(self, x: Any) -> Any:
        """A Python scalar of a 0-d array: the host needs a value (a loop bound, a count)."""
        ...

    def nonzero(self, mask: Array) -> Array:
        """`flatnonzero(mask)`: its length is read back to size the result."""
        ...

    def bincount(self, x: Array, minlength: int = 0, weights: Array | None = None) -> Array:
        """`bincount` (of `weights` where given): its largest value is read back to size the result."""
        ...

    def repeat(self, a: Array, counts: Array) -> Array:
        """`repeat(a, counts)`: the output size is read back when `counts` is an array."""
        ...

    def put_where(self, arr: Array, mask: Array, value: Any) -> None:
        """`arr[mask] = value` in place, without reading the mask back (a boolean store would)."""
        ...

    def at_minmax(self, op: str, out: Array, idx: Array, vals: Value) -> None:
        """`out[idx] = min/max(out[idx], vals)`, unbuffered and exact (NaN wins): CuPy's own float64
        `minimum.at` rounds through float32."""
        ...


class Ops(Protocol):
    """Elementwise operations of the generated code (`ops.*`): where NumPy's own spelling would
    differ between backends or give the wrong answer for the language."""

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        """`cond ? a : b`, elementwise, without branches."""
        ...

    def select_into(self, cond: Value, a: Value, x: Value) -> Value:
        """`select(cond, a, x)` for `X = { c ? e : x | x <- X }`, whose old X dies with the statement: a
        backend may write the result into x itself where nothing else holds it (the NumPy backend, by
        x's reference count), else it returns a new array."""
        ...

    def to_int(self, x: Value) -> Value:
        """`int(x)`: truncation toward zero, saturating at the int64 range, nan -> 0."""
        ...

    def to_float(self, x: Value) -> Value:
        """`float(x)`."""
        ...

    def to_float32(self, x: Value) -> Value:
        """`float32(x)`: float(x) rounded to the nearest single-precision value (beyond its range ±inf), a
        float (64-bit) like any other."""
        ...

    def narrow32(self, x: Value) -> Array:
        """`float32(x)` as a float32 array (exact: single precision holds it): a message value that
        travels and is gathered in 4 bytes; whatever reads it widens it back without change."""
        ...

    # integer operations, total on int64 (intops.py)
    def mod(self, a: Value, b: Value) -> Value:
        """`a % b`, the remainder of `idiv` (the sign of `b`); `a` where b == 0."""
        ...

    def idiv(self, a: Value, b: Value) -> Value:
        """Floor division; 0 where b == 0, and int64's minimum over -1 wraps."""
        ...

    def bitand(self, a: Value, b: Value) -> Value:
        """`a & b` on int64."""
        ...

    def bitor(self, a: Value, b: Value) -> Value:
        """`a | b` on int64."""
        ...

    def bitxor(self, a: Value, b: Value) -> Value:
        """`a ^ b` on int64."""
        ...

    def bitnot(self, a: Value) -> Value:
        """`~a` on int64."""
        ...

    def shl(self, a: Value, n: Value) -> Value:
        """`a * 2**n` modulo 2**64; counts of 64 or more shift everything out, negative ones right."""
        ...

    def shr(self, a: Value, n: Value) -> Value:
        """`floor(a / 2**n)`, arithmetic; counts of 64 or more leave the sign, negative ones shift left."""
        ...


class Backend(Ops, KernelOps, Protocol):
    """One array library under the runtime (see the module docstring)."""

    name: str  # "numpy" or "cupy": --stats reports it
    #: per-entry heads are evaluated on blocks of whole rows of about this many entries (0: all at once);
    #: when positive, `segments` returns `RowBlocks`
    entry_block: int

    # ---- types

    def dtype(self, elem: str) -> np.dtype:
        """The dtype of an element type (bool, int, float, vid)."""
        ...

    def is_array(self, x: Any) -> bool:
        """Whether `x` is a 1-d array of this backend (a vertex or edge value), not a scalar."""
        ...

    def int64(self, x: Any) -> np.int64:
        """A scalar int with int64 wrap-around (the language's `int` is 64-bit everywhere)."""
        ...

    # ---- structure

    def graph_part(self, lg: LocalGraph) -> LocalGraph:
        """The rank's graph part the verbs work on: the host part itself, or its device copy."""
        ...

    def segments(self, indptr: Array) -> Segments:
        """The CSR row structure of `indptr` (the adjacency's rows), with per-row reductions."""
        ...

    def csr_matrix(self, indptr: Array, cols: Array, n_cols: int, kind: str, blocks: Any = None) -> Any:
        """The adjacency as a matrix of ones for `@` a vector: sums and counts as one SpMV (`blocks`: the
        backend's `column_blocks` of these entries, or None)."""
        ...

    def column_blocks(self, indptr: Array, cols: Array, order: Array) -> Any:
        """What this backend's reductions over the CSR's entries (`gather_reduce`, `csr_matrix`) may
        use to go faster, the same bits; `order`: each column's original ID (a row's entries are in
        that order).  None where the backend has nothing of the kind."""
        ...

    def transpose(self, indptr: Array, cols: Array, data: Array | None, n_cols: int
                  ) -> tuple[Array, Array, Array | None]:
        """(indptr over columns, rows, data) of a CSR matrix: the reverse adjacency, for pushing
        (data None: the structure only, and None for the data)."""
        ...

    def expand_ranges(self, starts: Array, lens: Array) -> Array:
        """The concatenation of `arange(s, s + l)` for each (s, l): the entries of chosen rows."""
        ...

    def oriented_triangles(self, indptr: Array, cols: Array, count_only: bool) -> Any:
        """The triangles a < b < c of an oriented CSR graph (row a: a's higher neighbours, ascending) by a
        compiled kernel: per entry the triangles through it (count only), else the entry positions of
        each one's edges ab, ac, bc; None where the backend has no such kernel (the caller lists them
        with array operations, the same triangles)."""
        ...

    def plus_edge_reduce(self, op: str, indptr: Array, nbr: Array, x: Array, sent: Array | None, w: Array,
                         eid: Array | None, elem: str) -> Array | None:
        """Per CSR row, `op` (min, max) of x[nbr[k]] + w[eid[k]] (w[k] where `eid` is None) over its entries
        k whose sender is `sent` (every entry where None), with the language's empty value, by a compiled
        kernel; None where the backend has none (the caller evaluates the head, the same answer)."""
        ...

    def push_plus_edge(self, op: str, indptr: Array, recv: Array, eid: Array, senders: Array, x: Array, w: Array,
                       n: int, elem: str) -> Array | None:
        """Per receiver r < n, `op` (min, max) of x[s] + w[eid[k]] over the entries k of the transposed CSR
        (`indptr` over senders, `recv`, `eid`) of the pushing `senders` s that reach r, as the pushed
        entries' scatter gives it, with the language's empty value, by a compiled kernel; None where the
        backend has none (the caller gathers the pushed entries and scatters the head, the same answer)."""
        ...

    def pull_modes(self, indptr: Array, nbr: Array, x: Array, sent: Array | None, elem: str) -> Array | None:
        """Per CSR row the `mode` of x[nbr[k]] over its entries k whose sender is `sent` (every entry where
        None), ties to the smaller value, the language's default where none, by a compiled kernel; None
        where the backend has none (the caller gathers the values and reduces them, the same answer)."""
        ...

    def scatter_argmin(self, lp: Array, v: Array, ix: Array, t1: Array, t2: Array, n: int) -> tuple | None:
        """Per row r < n, of the entries (j, i) with lp[j, i] == r, the i with the least (v[i], t1[ix[i]],
        t2[ix[i]], i): (the rows that have entries, ascending; their winners' i), by a compiled kernel;
        None where the backend has none (the caller's scatter reductions pick the same)."""
        ...

    def gather(self, table: Array, idx: Array) -> Array:
        """`table[idx]` for a 1-d table, int32 indices at full speed."""
        ...

    def take_into(self, table: Array, idx: Array, out: Array) -> None:
        """`out[:] = table[idx]` without a temporary."""
        ...

    # ---- neighbourhood reductions

    def seg_reduce(self, seg: Seg, op: str, value: Array, mask: Array | None, elem: str,
                   ids: Array | None = None) -> Array:
        """Aggregate per-entry `value` into rows with the language's empty and tie rules (the pull)."""
        ...

    def scatter_reduce(self, op: str, recv: Array, vals: Array, mask: Array | None, n: int, elem: str,
                       ids: Array | None = None) -> Array:
        """Aggregate entries in any order into `n` receivers (the push)."""
        ...

    def any_pull(self, seg: Seg, nbr: Array, x: Array, budget: int | None = None,
                 rows: Array | None = None) -> Array | None:
        """Per row: does any neighbour have `x`?  An early-exit pull; None when it would read more than
        `budget` entries (the caller pushes instead)."""
        ...

    def rows_with_any(self, indptr: Array, rows: Array, nbr: Array, mask: Array) -> Array:
        """Per row of `rows`: does any of its entries' neighbours have `mask`?  (An `or` limited to a
        receivers pass's rows.)"""
        ...

    def narrow_int32(self, v: Array, mask: Array | None, ident32: int) -> Array | None:
        """The int64 `v` as int32 where `mask` holds (everywhere where None) and `ident32` elsewhere, for
        a min/max pull over half the bytes; None where a value is not strictly inside int32 (so that
        `ident32`, int32's least or greatest, stands for no value)."""
        ...

    def widen_int32(self, r32: Array, ident32: int, ident: int) -> tuple[Array, int]:
        """(`r32` as int64 with `ident` where it is `ident32`, how many are): a narrowed pull's result."""
        ...

    def mean(self, total: Array, count: Array) -> Array:
        """`total / count`, NaN where count is 0 (an empty average)."""
        ...

    def identity(self, op: str, dtype: Any) -> Any:
        """The neutral element of `op` in `dtype`, padding masked-out entries before a reduction."""
        ...

    def empty_value(self, op: str, elem: str) -> Any:
        """The result of aggregation `op` over no elements."""
        ...

    def value_counts(self, value: Array, mask: Array | None) -> tuple[Array, Array]:
        """(distinct values, their counts) where `mask` holds: a global `mode`'s histogram."""
        ...

    # ---- exchanges

    def packbits_segments(self, vals: Array, seg_counts: Array) -> tuple[Array, Array]:
        """Bools packed into bytes per destination rank: (bytes, byte counts per rank)."""
        ...

    def unpackbits_segments(self, data: Array, byte_counts: Array, bit_counts: Array) -> Array:
        """The inverse of `packbits_segments`: the bools each rank sent, in rank order."""
        ...

    def pack_records(self, arrays: list[Array], layout: list[tuple[int, str]], rb: int, idx: Array) -> np.ndarray:
        """Host rows of `rb` bytes, one per sending vertex in `idx`, each field at its (offset, type):
        the entries and records transports."""
        ...

    def unpack_field(self, rbytes: np.ndarray, off: int, elem: str) -> Array:
        """One field of received records, as an array of this backend."""
        ...

    # ---- aggregators and randomness

    def partial(self, op: str, value: Array, mask: Array | None, elem: str, ids: Array | None,
                vk: str) -> np.ndarray:
        """This rank's int64 slots of a global aggregation (partials.slots: two, or a float sum's exact
        limbs), on the host for the communicator."""
        ...

    def value_kind(self, op: str, value: Any, elem: str) -> str:
        """'f' or 'i': how a global aggregation's slots hold its values."""
        ...

    def finish(self, op: str, elem: str, vk: str, slots: np.ndarray) -> Any:
        """The value of a global aggregation from its slots reduced over ranks."""
        ...

    def host_int64(self, parts: list[Any]) -> np.ndarray:
        """One host int64 vector of aggregator slots (or control values) for the communicator."""
        ...

    def uniform(self, seed: int, site: int, count: int, key_a: Array, key_b: Array | None = None) -> Array:
        """`rand()`: uniform floats in [0, 1) from a counter-based RNG, the same on every backend."""
        ...

    # ---- host and device

    def to_host(self, a: Any) -> Any:
        """A host (NumPy) copy of a device array; other values as they are."""
        ...

    def from_host(self, a: Any) -> Any:
        """A device copy of a host array; other values as they are."""
        ...

    def staged(self, comm: Any) -> Any:
        """The communicator the verbs use: MPI sees host memory (or a CUDA-aware MPI device memory)."""
        ...

    def synchronize(self) -> None:
        """Wait for the device: superstep times measure finished work."""
        ...

    def memory_info(self) -> dict[str, Any]:
        """What --stats reports under `device` (or the host's peak RSS)."""
        ...

    def reset(self) -> None:
        """A run starts: zero the transfer and sync counters."""
        ...
