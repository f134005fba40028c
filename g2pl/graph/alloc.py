"""Keep freed array memory in the process instead of handing it back to the kernel after every superstep.

A superstep allocates vertex- and edge-sized temporaries and frees them a
moment later.  With glibc's defaults, blocks above the mmap threshold (an
edge array at kron:20 is 128 MB) are unmapped on free, and the top of the
heap is trimmed once a few MB are free, so the next superstep page-faults
the same memory in again: measured here, `a * 2` on 16M floats costs 10 ms
into fresh pages against 6 ms into reused ones.  `tune()` asks glibc to
serve large blocks from the heap and to trim only above 1 GiB of free
space, so the steady state reuses memory; peak memory is unchanged (RSS
stays near the peak instead of falling between supersteps).

Process-wide, applied once, on Linux/glibc only; `G2PL_MALLOC_TUNING=0`
turns it off.  `g2pl run` tunes before loading the graph, and the runtime
before a run; it lives here, below both, because building a graph undoes it
for its own temporaries (memory.temporaries_returned asks `tuned()`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable

M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
TRIM_BYTES = 1 << 30

_applied: bool | None = None  # None: not tried yet


def tuned() -> bool:
    """Whether `tune()` has put the settings in effect in this process (without trying to)."""
    return _applied is True


def tune() -> bool:
    """Apply the allocator settings (once per process); True when they are in effect."""
    global _applied
    if _applied is None:
        _applied = _mallopt()
    return _applied


def _mallopt() -> bool:
    if os.environ.get("G2PL_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    mallopt = libc_mallopt()
    if mallopt is None:  # not glibc (musl has no mallopt)
        return False
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_BYTES))


@functools.lru_cache(maxsize=1)
def libc_mallopt() -> Callable[[int, int], int] | None:
    """glibc's `mallopt`, or None.  Looked up among the symbols the process has loaded (libc is one),
    not with `ctypes.util.find_library`, which runs `ldconfig -p` in a subprocess on every call."""
    for lib in (None, "libc.so.6"):
        try:
            fn = ctypes.CDLL(lib).mallopt
        except (OSError, AttributeError):
            continue
        fn.argtypes = (ctypes.c_int, ctypes.c_int)
        return fn
    return None


def warm(nbytes: int) -> None:
    """Fault `nbytes` of heap in now and leave them free for the arrays to come (only while `tune()`
    keeps freed memory in the process).  A rank that received its graph part starts with a small heap
    and page-faults its temporaries in superstep after superstep, while rank 0's heap is still warm
    from partitioning the whole graph: the others wait for it (ws:1M matching, 2 ranks: rank 1
    computed 3.0 s against rank 0's 1.8 s)."""
    if nbytes > 0 and tune():
        import numpy as np

        np.ones(int(nbytes), dtype=np.uint8)
