"""Loader and launchers of the CuPy backend's raw CUDA kernels (cuda/kernels.cu).

CuPy 14 has no `minimum.reduceat`, its float64 `minimum.at`/`maximum.at` round through float32, and a
segmented reduction through `ufunc.at` moves a per-entry owner array and an atomic per entry.  These
kernels do the dominant primitives directly: segmented reductions per CSR row (exact, deterministic,
load-balanced over fixed chunks of entries, optionally gathering `table[idx[j]]` on the fly), the
bottom-up pull with early exit over a frontier bitmap, exact float64 scatter min/max, and an exact
float64 sum's bins.

Every wrapper takes the array module `xp` (cupy, or the strict stand-in that runs the same source on
the CPU in tests) and device arrays; the module is compiled once per process and array module, on
first use.  Nothing here reads device memory back: launches stay asynchronous.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

SOURCE = Path(__file__).resolve().parent / "cuda" / "kernels.cu"
#: entries per chunk of a segmented reduction: the work of one thread in phase 1
CHUNK = 64
BLOCK = 256
#: launches use at most this many blocks (the kernels stride over the rest)
MAX_GRID = 8192

_modules: dict[int, tuple[Any, Any]] = {}  # id(xp) -> (xp, RawModule)
_functions: dict[tuple[int, str], Any] = {}

#: kernel type suffix of each value dtype a reduction runs on directly
_SUFFIX = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.float64): "f64",
           np.dtype(np.uint8): "u8"}
#: the array module's ufunc -> the reduction it makes
UFUNC_OPS = {"minimum": "min", "maximum": "max", "add": "sum", "logical_or": "or", "logical_and": "and"}


def ufunc_op(xp, ufunc) -> str | None:
    """The reduction ("min", "max", "sum", "or", "and") `ufunc` of `xp` makes, or None.  By identity:
    CuPy's ufuncs are named "cupy_minimum" and so on."""
    for name, op in UFUNC_OPS.items():
        if ufunc is getattr(xp, name, None):
            return op
    return None


def source() -> str:
    return SOURCE.read_text()


def kernel(xp, name: str):
    """The kernel `name` of the module compiled for `xp` (compiled on first use)."""
    f = _functions.get((id(xp), name))
    if f is None:
        entry = _modules.get(id(xp))
        if entry is None or entry[0] is not xp:
            entry = _modules[id(xp)] = (xp, xp.RawModule(code=source(), options=("--std=c++17",)))
        f = _functions[(id(xp), name)] = entry[1].get_function(name)
    return f


def launch(xp, name: str, n: int, args: tuple) -> None:
    """Launch `name` over `n` work items (grid-stride: the grid is capped); nothing when n is 0."""
    if n <= 0:
        return
    grid = min((n + BLOCK - 1) // BLOCK, MAX_GRID)
    kernel(xp, name)((grid,), (BLOCK,), args)


def dense(xp, a, dtype=None):
    """`a` as a C-contiguous array of `dtype` (no copy when it already is one)."""
    if dtype is not None and a.dtype != dtype:
        a = a.astype(dtype)
    return a if a.flags.c_contiguous else a.copy()


def _index(xp, idx):
    """An index array the kernels take: int32 or int64, contiguous; and its kernel suffix."""
    if idx.dtype == xp.int32:
        return dense(xp, idx), "g32"
    return dense(xp, idx, xp.int64), "g64"


def as_kernel_values(xp, a):
    """(values as a dtype the kernels reduce, that dtype's suffix, the dtype to give back): bools as
    their uint8 bytes (a view), other integers through int64, other floats through float64."""
    dt = a.dtype
    if dt == xp.bool_:
        return dense(xp, a).view(xp.uint8), "u8", dt
    if dt in _SUFFIX:
        return dense(xp, a), _SUFFIX[dt], dt
    wide = xp.float64 if dt.kind == "f" else xp.int64
    return dense(xp, a, wide), _SUFFIX[np.dtype(wide)], dt


def seg_reduce(xp, indptr, op: str, fill, vals=None, table=None, idx=None, chunk: int = CHUNK):
    """Per CSR row of `indptr` (int64), the `op` reduction ("min", "max", "sum"; "or"/"and" of bools)
    of its entries' values: `vals[j]`, or gathered `table[idx[j]]` without an entry-length array.
    Empty rows get `fill`.  Exact: min/max propagate NaN as NumPy's; float sums in a fixed order; a
    gathered float32 table's sum in float64 (the bits of the widened table's)."""
    gathered = vals is None
    src = table if gathered else vals
    v, sfx, back = as_kernel_values(xp, src)
    chunks_name = None
    if gathered and op == "sum" and src.dtype == xp.float32:  # 4-byte reads, float64 sums (SumF32AsF64)
        v, sfx, back, chunks_name = dense(xp, src), "f64", np.dtype(np.float64), "sum_f32w"
    if sfx == "u8":  # bools: or/and are max/min over 0/1; a sum of bools is NumPy's logical or
        op = {"or": "max", "and": "min", "sum": "max"}.get(op, op)
    if op not in ("min", "max", "sum") or (sfx == "u8" and op == "sum"):
        raise ValueError(f"no {op} reduction over {src.dtype}")
    indptr = dense(xp, indptr, xp.int64)
    n = len(indptr) - 1
    acc = np.dtype(np.float64) if chunks_name else v.dtype  # (what the partials and the result hold)
    out = xp.empty(max(n, 0), dtype=acc)
    if n <= 0:
        return out.view(back) if back == xp.bool_ else out
    total = len(idx) if gathered else len(v)
    name = f"{op}_{sfx}"
    if total:
        nchunks = (total + chunk - 1) // chunk
        lead = xp.empty(nchunks, dtype=acc)
        trail = xp.empty(nchunks, dtype=acc)
        head = (indptr, np.int64(n), np.int64(total), np.int64(chunk))
        if gathered:
            ix, g = _index(xp, idx)
            launch(xp, f"seg_chunks_{chunks_name or name}_{g}", nchunks, (*head, v, ix, out, lead, trail))
        else:
            launch(xp, f"seg_chunks_{name}", nchunks, (*head, v, out, lead, trail))
    else:
        lead = trail = xp.empty(1, dtype=acc)
    launch(xp, f"seg_rows_{name}", n, (indptr, np.int64(n), np.int64(chunk), out, lead, trail,
                                        acc.type(fill)))
    if back == xp.bool_:
        return out.view(xp.bool_)
    return out if back == out.dtype else out.astype(back)


def row_counts(xp, indptr, mask, chunk: int = CHUNK):
    """Per CSR row: how many of its entries have `mask` (int64)."""
    m = dense(xp, mask if mask.dtype == xp.bool_ else mask != 0).view(xp.uint8)
    indptr = dense(xp, indptr, xp.int64)
    n = len(indptr) - 1
    out = xp.empty(max(n, 0), dtype=xp.int64)
    if n <= 0:
        return out
    total = len(m)
    nchunks = (total + chunk - 1) // chunk
    lead, trail = xp.empty(max(nchunks, 1), dtype=xp.int64), xp.empty(max(nchunks, 1), dtype=xp.int64)
    launch(xp, "seg_chunks_count", nchunks,
           (indptr, np.int64(n), np.int64(total), np.int64(chunk), m, out, lead, trail))
    launch(xp, "seg_rows_count", n, (indptr, np.int64(n), np.int64(chunk), out, lead, trail, np.int64(0)))
    return out


def pack_bits(xp, x):
    """A bool array as uint32 words, bit i of word i >> 5 being x[i]."""
    xb = dense(xp, x, xp.bool_).view(xp.uint8)
    words = xp.empty((len(xb) + 31) // 32, dtype=xp.uint32)
    launch(xp, "pack_bits", len(words), (xb, np.int64(len(xb)), words))
    return words


def pull_any(xp, indptr, nbr, x, rows=None):
    """Per CSR row: does any entry's neighbour `nbr[j]` have `x`?  Each row stops at its first hit,
    reading a bitmap of x.  With `rows` (row indices), only those rows are looked at; others are False."""
    indptr = dense(xp, indptr, xp.int64)
    n = len(indptr) - 1
    words = pack_bits(xp, x)
    ix, g = _index(xp, nbr)
    if rows is None:
        out = xp.empty(max(n, 0), dtype=xp.uint8)
        launch(xp, f"pull_any_{g}", n, (indptr, np.int64(n), ix, words, out))
    else:
        rows = dense(xp, rows, xp.int64)
        out = xp.zeros(max(n, 0), dtype=xp.uint8)
        launch(xp, f"pull_any_rows_{g}", len(rows), (indptr, rows, np.int64(len(rows)), ix, words, out))
    return out.view(xp.bool_)


def scatter_minmax(xp, op: str, out, recv, vals) -> None:
    """out[recv[k]] = min/max(out[recv[k]], vals[k]) for every k, in place (`out`: float64, int64 or
    int32, contiguous).  Float64 is exact (a compare-and-swap loop on the bits, not CuPy's float32
    atomics): a NaN wins and stays, and -0.0 is below 0.0, whatever order the updates land in."""
    if op not in ("min", "max"):
        raise ValueError(f"no scatter {op}")
    sfx = _SUFFIX.get(np.dtype(out.dtype))
    if sfx not in ("f64", "i64", "i32"):
        raise TypeError(f"scatter {op} into {out.dtype}: float64, int64 or int32 only")
    if not out.flags.c_contiguous:
        raise ValueError("scatter into a non-contiguous array")
    ix, g = _index(xp, recv)
    v = dense(xp, vals, out.dtype)
    launch(xp, f"scatter_{op}_{sfx}_{g}", len(ix), (np.int64(len(ix)), ix, v, out))


#: values a thread of `float_bins` takes (its running pair is added once per change of exponent)
BIN_RUN = 32


def float_bins(xp, bits, host) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """kernels.float_bins's (hi, lo, [NaN, +inf, -inf]) for the float64 bit patterns `bits`, by one
    kernel into 4096 device bins (hi at 0-2045, lo at 2046-4091, two's complement; the counts at
    4092-4094), brought to the host by `host` (one read)."""
    bins = xp.zeros(4096, dtype=xp.uint64)
    n = len(bits)
    launch(xp, "float_bins", (n + BIN_RUN - 1) // BIN_RUN, (dense(xp, bits, xp.int64), np.int64(n), bins))
    got = host(bins).view(np.int64)
    return got[:2046], got[2046:4092], got[4092:4095].tolist()
