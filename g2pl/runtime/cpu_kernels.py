"""Compiled CPU kernels (numba), for the loops NumPy cannot vectorise without a pass per step.

Sorted-list intersection is one: listing the triangles of a degree-oriented graph vectorised needs a
lookup per wedge, each a dozen array passes (common_neighbours.RowHash); a merge of the two sorted
lists is a few instructions per entry.  A keyed argmin is another: one pass instead of a scatter-min,
a comparison and the tie passes.

numba is optional (`pip install g2pl[fast]`).  Without it, or with G2PL_NUMBA=0, the callers keep
their NumPy paths, which give the same answers (tests/runtime/test_cpu_kernels.py runs both).  Loading
the kernels costs a process seconds (numba's import and LLVM's set-up, even with the compiled code
cached on disk beside this file or in the user's cache directory), so by default (`auto`) a
kernel runs only for work large enough to repay that, or once some kernel is loaded; G2PL_NUMBA=1
uses them whatever the size.  numba is imported on first use, never when g2pl is.

The per-row kernels (kernels.row_reduce, kernels.any_pull) run on `threads()` threads: G2PL_THREADS, else
the CPUs this process may use, shared among the MPI ranks on this machine.  Each row is still reduced
in order by one thread, so the answers have the same bits for any thread count.
"""

from __future__ import annotations

import hashlib
import os
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from g2pl.graph import cores
from g2pl.io import arraytext, compiled, shortest_float

_state: dict[str, Any] = {}

#: numba's `prange` in a compiled kernel: `_jit` binds it in the kernel's module before compiling (numba
#: is imported on first use only); a serial build runs it as `range`
prange = range

#: work (elements a kernel visits) from which a process loads the kernels in `auto` mode: about the
#: work whose NumPy path costs what loading them does
AUTO_WORK = 1 << 24


def available() -> bool:
    """Is numba importable here, and not turned off by G2PL_NUMBA=0?"""
    if os.environ.get("G2PL_NUMBA", "auto") == "0":
        return False
    if "numba" not in _state:
        try:
            import numba
        except ImportError:  # the optional dependency is absent: the NumPy paths serve
            _state["numba"] = None
        else:
            _state["numba"] = numba
    return _state["numba"] is not None


def use(work: int) -> bool:
    """Should a kernel run for `work` elements: numba there, and G2PL_NUMBA=1, or a kernel already loaded
    in this process, or work from AUTO_WORK on (below it, loading costs more than it saves)?"""
    mode = os.environ.get("G2PL_NUMBA", "auto")
    if mode == "0" or not (mode == "1" or work >= AUTO_WORK or any(k.startswith("jit:") for k in _state)):
        return False
    return available()


#: threads a compiled row kernel runs on (G2PL_THREADS, else the CPUs this process may use, shared among
#: the MPI ranks on this machine): the process-wide policy of g2pl.graph.cores
threads = cores.threads


def row_cuts(indptr: np.ndarray, parts: int) -> np.ndarray:
    """Row boundaries of `parts` consecutive blocks of about equal entries (int64, from 0 to the row
    count; a row longer than a block's share is one block): the work a parallel row kernel hands out."""
    n = len(indptr) - 1
    total = int(indptr[-1])
    if parts <= 1 or n <= 1 or total == 0:
        return np.array([0, n], dtype=np.int64)
    marks = np.arange(1, parts, dtype=np.int64) * total // parts
    cuts = np.concatenate([[0], np.searchsorted(indptr[1:], marks, side="left") + 1, [n]]).astype(np.int64)
    cuts = np.minimum(cuts, n)
    return cuts[np.append(True, cuts[1:] != cuts[:-1])]


#: blocks per thread of a parallel row kernel, handed out one at a time (numba's chunk size 1), so that a
#: thread whose blocks run slower (more cache misses) is helped by the others
BLOCKS_PER_THREAD = 8


def run_rows(fn: Callable, args: tuple, indptr: np.ndarray | None = None, items: int = 0,
             nthreads: int | None = None) -> Any:
    """`fn(*args, cuts)` compiled, where `fn` loops `for b in prange(len(cuts) - 1)` over blocks of
    consecutive rows: blocks of about equal entries of the CSR `indptr` (`row_cuts`), or of equally many
    of `items` rows.  On one thread the serial build over one block, else the parallel build on `nthreads`
    (default `threads()`, at most numba's NUMBA_NUM_THREADS) threads.  A kernel that writes only its own
    rows' outputs gives the same result on any number of threads."""
    t = threads() if nthreads is None else nthreads
    numba = _state["numba"]
    n = len(indptr) - 1 if indptr is not None else items
    if t <= 1 or n <= 1:
        return _jit(fn)(*args, np.array([0, n], dtype=np.int64))
    parts = t * BLOCKS_PER_THREAD  # (as asked, even where numba has fewer threads: the same blocks)
    t = min(t, numba.config.NUMBA_NUM_THREADS)
    if indptr is not None:
        cuts = row_cuts(indptr, parts)
    else:
        cuts = np.unique(np.linspace(0, n, parts + 1).astype(np.int64))
    kernel = _jit(fn, parallel=True)
    numba.set_num_threads(t)  # (this calling thread's count: numba keeps one per thread)
    with numba.parallel_chunksize(1):
        return kernel(*args, cuts)


def _jit(fn: Callable, parallel: bool = False, inline: bool = False) -> Callable:
    """`fn` compiled (once per process; from numba's on-disk cache when it is there), with `prange`
    numba's in its module: over threads with `parallel`, else as `range`; with `inline`, compiled into
    each compiled caller instead (a call between compiled functions passes each array as its seven
    fields and counts references on them: for a small function called per element, more than its work)."""
    key = "jit:" + fn.__name__ + (":parallel" if parallel else "")
    if key not in _state:
        numba = _state["numba"]
        fn.__globals__["prange"] = numba.prange
        if parallel:  # a copy under its own name: numba's disk cache files a function by its name and
            # types, not its options, so the serial and the parallel build would load each other's code
            fn = _renamed(fn, fn.__name__ + "__parallel")
        _state[key] = numba.njit(cache=True, nogil=True, parallel=parallel, inline="always" if inline else "never")(fn)
    return _state[key]


def _renamed(fn: Callable, name: str) -> Callable:
    """The function `fn` (same code, globals and module) under another name."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = name  # (the kernels are module-level functions)
    copy.__module__ = fn.__module__
    return copy


#: float elements of a text output from which its writer loads the kernels for it alone: the array path
#: formats each distinct float through `repr` (about 0.7 µs for values that hardly repeat), the compiled
#: writer any float in about 0.05 µs, and loading costs about 0.5 s and 170 MB (bench/output.py)
FLOATS_TO_LOAD = 1 << 21
_loading = threading.Lock()


def row_writer(floats: int = 0) -> Callable | None:
    """`g2pl.io.arraytext.write_rows` compiled, for writing large outputs as text, where this process
    has loaded kernels already, G2PL_NUMBA=1, or the output holds `floats` float elements from
    FLOATS_TO_LOAD on; else None (the array path, the same bytes).  Integers and booleans alone never
    load them: their array path is within a few tenths of a second of the compiled one on a 16M-edge
    JSON result, whose chunks are made on two threads anyway."""
    if not use(AUTO_WORK if floats >= FLOATS_TO_LOAD else 0):
        return None
    with _loading:  # (chunks may be formatted on several threads at once)
        if "row_writer" not in _state:
            _load_row_writer()
    return _state["row_writer"]


def _load_row_writer() -> None:
    """The float functions write_rows calls compiled (into it), in place of the plain ones in their
    module (called from Python they answer alike), then write_rows, under a name carrying a digest of
    their module's source: numba's disk cache checks only the caller's own file, and would otherwise
    reuse a write_rows compiled with an older copy of them inside."""
    for name in shortest_float.COMPILED:
        fn = getattr(shortest_float, name)
        setattr(shortest_float, name, _jit(getattr(fn, "py_func", fn), inline=True))
    digest = hashlib.sha256(Path(shortest_float.__file__).read_bytes()).hexdigest()[:12]
    _state["row_writer"] = _jit(_renamed(arraytext.write_rows, f"write_rows__{digest}"))


def kernel(fn: Callable, work: int) -> Callable | None:
    """`fn` compiled where kernels serve `work` elements (`use`), else None: the policy the layers below
    the runtime get through g2pl.io.compiled (the text rows of g2pl.io.textrows)."""
    return _jit(fn) if use(work) else None


compiled.kernel = kernel  # (installed on import: g2pl.io.compiled)


# ------------------------------------------------------------ triangles of an oriented graph


def _oriented(indptr, cols, out):  # pragma: no cover (compiled)
    """Each triangle a < b < c found by merging rows a and b: counted on its three entries in `out` when
    `out` has an entry per entry of `cols`, else listed (the entry positions of ab, ac and bc).  The
    merge walks row b and moves row a's pointer up to each of its entries in a tight loop (as GAPBS's
    `tc` does): about 5x fewer cycles per step than a three-way comparison per step, whose branch
    the processor mispredicts about every other time."""
    count = len(out) == len(cols)
    cap = 16 if count else max(len(cols), 16)
    ab = np.empty(cap, dtype=np.int64)
    ac = np.empty(cap, dtype=np.int64)
    bc = np.empty(cap, dtype=np.int64)
    t = 0
    n = len(indptr) - 1
    for a in range(n):  # (unsigned indices below: no test for a negative one in the loops)
        end = indptr[a + 1]
        for j in range(indptr[a], end):  # edge ab; its third vertices c: in row a after b and in row b
            b = np.uint64(cols[np.uint64(j)])
            i = j + 1
            if i == end:
                break
            ci = cols[np.uint64(i)]
            for k in range(indptr[b], indptr[b + np.uint64(1)]):  # each c of row b, row a's pointer moved up to it
                ck = cols[np.uint64(k)]
                while ci < ck:
                    i += 1
                    if i == end:
                        break
                    ci = cols[np.uint64(i)]
                if i == end:
                    break
                if ci == ck:  # triangle a < b < c: its edges ab (j), ac (i) and bc (k)
                    if count:
                        out[np.uint64(j)] += 1
                        out[np.uint64(i)] += 1
                        out[np.uint64(k)] += 1
                    else:
                        if t == cap:  # grow by doubling: one pass, no count pass before it
                            cap *= 2
                            ab2 = np.empty(cap, dtype=np.int64)
                            ac2 = np.empty(cap, dtype=np.int64)
                            bc2 = np.empty(cap, dtype=np.int64)
                            ab2[:t] = ab[:t]
                            ac2[:t] = ac[:t]
                            bc2[:t] = bc[:t]
                            ab, ac, bc = ab2, ac2, bc2
                        ab[t] = j
                        ac[t] = i
                        bc[t] = k
                        t += 1
    return ab[:t].copy(), ac[:t].copy(), bc[:t].copy()


def oriented_triangles(indptr: np.ndarray, cols: np.ndarray, count_only: bool) -> Any:
    """The triangles a < b < c of an oriented graph: row a of the CSR (`indptr`, `cols`) holds a's higher
    neighbours, ascending.  Count only: triangles through each entry (edge); else the entry positions of
    each triangle's edges ab, ac and bc, three arrays.  Call only where `available()`."""
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    out = np.zeros(len(cols) if count_only else 0, dtype=np.int64)
    listed = _jit(_oriented)(indptr, cols, out)
    return out if count_only else listed


# ------------------------------------------------------------ keyed argmin


def _scatter_argmin(lp, v, ix, t1, t2, n):  # pragma: no cover (compiled)
    win = np.full(n, -1, dtype=np.int64)
    for j in range(lp.shape[0]):  # (unsigned indices: no test for a negative one)
        for i in range(lp.shape[1]):
            u = np.uint64(i)
            r = lp[np.uint64(j), u]
            if r < 0:
                continue
            r = np.uint64(r)
            w = win[r]
            if w < 0 or v[u] < v[np.uint64(w)]:
                win[r] = i
            elif v[u] == v[np.uint64(w)] and w != i:  # equal values: the least (t1, t2), read only here
                a, b = np.uint64(ix[u]), np.uint64(ix[np.uint64(w)])
                if t1[a] < t1[b] or (t1[a] == t1[b] and (t2[a] < t2[b] or (t2[a] == t2[b] and i < w))):
                    win[r] = i
    return win


def scatter_argmin(lp: np.ndarray, v: np.ndarray, ix: np.ndarray, t1: np.ndarray, t2: np.ndarray,
                   n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row r < n, of the entries (j, i) with lp[j, i] == r, the i with the least (v[i], t1[ix[i]],
    t2[ix[i]], i): (the rows that have entries, ascending; their winners' i).  One pass, the tie arrays
    read only on equal values.  Call only where `available()`."""
    win = _jit(_scatter_argmin)(np.ascontiguousarray(lp), v, ix, t1, t2, n)
    rows = np.flatnonzero(win >= 0)
    return rows, win[rows]


# ------------------------------------------------------------ CSR rows in another order


def _take_rows(old_ptr, new_ptr, order, arr, table, mapped, out, cuts):  # pragma: no cover (compiled)
    for c in prange(len(cuts) - 1):  # blocks of new rows (run_rows): each writes its own rows
        for k in range(cuts[c], cuts[c + 1]):
            a, b = old_ptr[order[k]], new_ptr[k]
            for j in range(new_ptr[k + 1] - b):  # (`mapped` is loop-invariant: LLVM takes its test out)
                u = np.uint64(a + j)
                out[np.uint64(b + j)] = table[np.uint64(arr[u])] if mapped else arr[u]


def take_rows(old_ptr: np.ndarray, new_ptr: np.ndarray, order: np.ndarray, arr: np.ndarray,
              table: np.ndarray | None, out: np.ndarray) -> None:
    """out = the CSR entries `arr` (rows `old_ptr`) with rows taken in `order` (new rows `new_ptr`),
    mapped through `table` if given: one pass that writes each new row in place, where NumPy builds an
    entry-position array and gathers through it (runtime/partition.py's degree view), its rows shared
    among `threads()` threads (the same array on any count).  Call only where `available()`."""
    mapped = table is not None
    run_rows(_take_rows, (old_ptr, new_ptr, order, arr, table if mapped else arr[:1], mapped, out), new_ptr)
