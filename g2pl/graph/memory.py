"""Refuse, before loading, a graph that cannot fit in memory (with a clear message instead of a crash).

The estimate is deliberately rough: edges from the generator parameters or
the file size, times what the loader and the CSR structures need per edge.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from g2pl.errors import G2PLError
from g2pl.graph import alloc

# Peak bytes per input edge of building a graph with 32-bit indices: the int32 endpoints (8) and their
# int64 sort key (8), then src/dst (8) with the dst order (4), neighbours and edge ids (16) and chunk
# temporaries; measured 32 at kron:20 with the interpreter's own ~55 MB (docs/performance.md).
BYTES_PER_EDGE = 40
BYTES_PER_TEXT_BYTE = 12  # an edge-list line is ~10-20 bytes and becomes one edge
BYTES_PER_VERTEX = 48  # IDs, relabelling, two CSR row pointers


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def estimate_bytes(spec) -> int:
    """Rough peak memory to load a parsed graph spec (a GraphSpec)."""
    p = spec.params or {}
    if spec.kind == "generator":
        if spec.format == "kron":
            m = (2 ** int(p["scale"])) * int(p.get("edgefactor", 16))
            n = 2 ** int(p["scale"])
        elif spec.format == "ws":
            n, m = int(p["n"]), int(p["n"]) * int(p["k"]) // 2
        else:
            n, m = int(p["n"]), int(p["m"])
        return m * BYTES_PER_EDGE + n * BYTES_PER_VERTEX
    try:
        size = os.path.getsize(spec.path)
    except OSError:
        return 0  # the loader reports a missing file itself
    if spec.format == "npz":
        return size * 10
    if spec.format == "binary":
        return size + size // 2  # the arrays read from the file, plus the checking pass and the degree view
    return size * BYTES_PER_TEXT_BYTE


def check_fits(spec) -> None:
    need = estimate_bytes(spec)
    have = available_memory()
    if have is not None and need > have:
        raise G2PLError(
            f"this graph needs about {need / 2**30:.1f} GiB to load, but only {have / 2**30:.1f} GiB of memory "
            "is available; use a smaller graph or more ranks on more machines", file=spec.spec)


def check_declared(path: str, *, vertices: int, edges: int, what: str, line: int | None = None) -> None:
    """Refuse a file whose header declares more vertices and edges than memory can hold, before
    anything of that size is allocated (a 100-byte .mtx may declare 2e9 x 2e9)."""
    need = edges * BYTES_PER_EDGE + vertices * BYTES_PER_VERTEX
    have = available_memory()
    if have is not None and need > have:
        raise G2PLError(f"{what}: loading it needs about {need / 2**30:.1f} GiB, but only "
                        f"{have / 2**30:.1f} GiB of memory is available", file=path, line=line)


_M_MMAP_MAX = -4
_M_MMAP_THRESHOLD = -3
#: while building, blocks from this size on are mapped (and unmapped when freed): the edge-sized
#: arrays; smaller temporaries (a generator's or a reader's per-block buffers) are reused from the heap
_RETURNED_FROM = 16 << 20


@contextmanager
def temporaries_returned() -> Iterator[None]:
    """While a graph is built, large blocks are mapped and unmapped again when freed.

    The allocator tuning (alloc.py, applied before a run) keeps freed memory in the
    heap so that supersteps reuse it; during building, whose temporaries are
    larger than anything a run allocates later, that retained memory would only
    raise the peak (measured at kron:20: 804 MB against 690 MB). Blocks below
    _RETURNED_FROM stay in the heap for reuse.  Outside a tuned process this does
    nothing.
    """
    if not alloc.tuned():
        yield
        return
    mallopt = alloc.libc_mallopt()
    assert mallopt is not None  # tuned: it was found
    # glibc's default count; and a fixed threshold, since any mallopt setting (tune()'s) turns glibc's
    # rising threshold off: at its 128 KiB start every per-block buffer would be mapped and unmapped
    # again, a page fault per 4 KiB each time (kron:20's generator: 1.2 s of its 3.5 s)
    mallopt(_M_MMAP_MAX, 65536)
    mallopt(_M_MMAP_THRESHOLD, _RETURNED_FROM)
    try:
        yield
    finally:
        mallopt(_M_MMAP_MAX, 0)  # alloc.tune()'s setting again
