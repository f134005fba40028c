"""The two edge orders a graph build needs, from sorts of packed integer keys.

An edge list is needed sorted by (src, dst), duplicates merged (`sort_unique_pairs`), and by
(dst, src) for the transposed adjacency (`TargetKeys`, else `by_target`). Both are sorts of pairs
of small integers: with a, b < 2^B, the int64 key a << B | b orders the pairs lexicographically,
decodes with a shift and a mask (no division), and carries what would otherwise be a payload, so
no permutation array is built and no edge array is gathered through one.

Why a sort of plain int64 and not counting or radix passes: NumPy sorts 64-bit integers with a
SIMD quicksort, while a counting sort needs each entry's rank within its bucket, which NumPy only
offers through `argsort(kind="stable")` (radix on keys of 16 bits or less, timsort above).
Measured at kron:20 (16.8M edges, one thread, CPU seconds on a busy 2-core machine): the int64
sort 0.3-0.5 s; an LSD radix sort of the same keys by three stable argsorts of 14/13/13-bit uint16
digits 3.7-4.3 s; a stable sort by the 20-bit destination in two such passes 2.1-2.6 s.
"""

from __future__ import annotations

import threading

import numpy as np

from g2pl.graph import cores

#: Entries per chunk of the chunked passes: temporaries stay a few tens of MB at any size.
CHUNK = 1 << 20


#: keys from which `sort_keys` shares a sort among threads (below, starting threads costs more than it saves)
PARALLEL_SORT = 1 << 20


def sort_keys(key: np.ndarray) -> None:
    """`key.sort()` in place, on `cores.threads()` threads where the keys are many: `partition` puts the
    keys around T - 1 evenly spaced ranks in place (one linear pass, about a tenth of the sort), then
    each of the T stretches, which hold all keys between two of those ranks, is sorted by its own thread
    (NumPy sorts without the GIL).  Integers sorted either way are the same array.  kron:20's 16.8M int64
    keys on 2 cores: 0.22-0.26 s against 0.30-0.38 s."""
    t = min(cores.threads(), max(key.size // (PARALLEL_SORT // 2), 1))
    if t <= 1:
        key.sort()
        return
    cuts = [key.size * i // t for i in range(t + 1)]
    key.partition(cuts[1:-1])
    failed: list[BaseException] = []

    def sort(part: np.ndarray) -> None:
        try:
            part.sort()
        except BaseException as e:  # noqa: BLE001 - raised again in the calling thread
            failed.append(e)

    workers = [threading.Thread(target=sort, args=(key[lo:hi],)) for lo, hi in zip(cuts[1:-1], cuts[2:])]
    for w in workers:
        w.start()
    sort(key[:cuts[1]])
    for w in workers:
        w.join()
    if failed:
        raise failed[0]


def bits_for(count: int) -> int:
    """Bits that hold every value 0..count-1 (at least one)."""
    return max(1, (int(count) - 1).bit_length())


def sort_unique_pairs(pair: list, n: int, weight: np.ndarray | None = None, *, undirected: bool = False,
                      drop_loops: bool = True, chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """(src, dst, weight, self-loops): the pairs of `pair` = [a, b] (values below n) sorted by (a, b),
    self-loops (a == b) dropped and counted, duplicates merged keeping the smallest weight.

    `undirected` orders each pair as (min, max) first, so (a, b) and (b, a) are duplicates; without
    `drop_loops`, a self-loop is an edge like any other. `pair` is emptied: the caller's list no
    longer holds the inputs, which are freed once keyed (they are never written). The outputs have
    the inputs' dtype. Self-loops are keyed -1, so the sort gathers them in front, out of the way.
    """
    a, b = pair
    pair.clear()
    vt = a.dtype
    bits = bits_for(n)
    if a.size == 0:
        return a[:0].copy(), b[:0].copy(), None if weight is None else weight[:0], 0
    if 2 * bits > 62:  # more than 2^31 vertices: lexicographic sort of the two columns
        return _lexsort_pairs(a, b, weight, undirected, drop_loops)
    key = np.empty(a.size, dtype=np.int64)
    loops = 0
    for lo in range(0, a.size, chunk):
        x, y, k = a[lo : lo + chunk], b[lo : lo + chunk], key[lo : lo + chunk]
        if undirected:
            np.minimum(x, y, out=k)
            k <<= bits
            k |= np.maximum(x, y)
        else:
            np.left_shift(x, bits, out=k, dtype=np.int64)
            k |= y
        if drop_loops:
            same = x == y
            c = int(np.count_nonzero(same))
            if c:
                loops += c
                k[same] = -1
    del a, b, x, y, k
    w = weight
    if w is None:
        sort_keys(key)
    elif not bool(np.all(key[1:] >= key[:-1])):
        order = np.argsort(key)  # stability not needed: each group keeps its minimum
        key = key[order]
        w = w[order]
        del order
    first = np.empty(key.size, dtype=bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    first[:loops] = False
    if w is not None:
        starts = np.flatnonzero(first)
        w = np.minimum.reduceat(w, starts) if starts.size else w[:0]
        del starts
    m = int(np.count_nonzero(first))
    src = np.empty(m, dtype=vt)
    dst = np.empty(m, dtype=vt)
    mask = (1 << bits) - 1
    at = 0
    for lo in range(0, key.size, chunk):
        sel = key[lo : lo + chunk][first[lo : lo + chunk]]
        np.right_shift(sel, bits, out=src[at : at + sel.size], casting="unsafe")
        np.bitwise_and(sel, mask, out=dst[at : at + sel.size], casting="unsafe")
        at += sel.size
    return src, dst, w, loops


def _lexsort_pairs(a: np.ndarray, b: np.ndarray, w: np.ndarray | None, undirected: bool, drop_loops: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """`sort_unique_pairs` for IDs too wide to pack two in an int64 (never below 2^31 vertices)."""
    if undirected:
        a, b = np.minimum(a, b), np.maximum(a, b)
    keep = a != b if drop_loops else np.ones(a.size, dtype=bool)
    loops = int(keep.size - np.count_nonzero(keep))
    a, b = a[keep], b[keep]
    w = None if w is None else w[keep]
    if a.size == 0:
        return a, b, w, loops
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    first = np.empty(a.size, dtype=bool)
    first[0] = True
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    starts = np.flatnonzero(first)
    if w is not None:
        w = np.minimum.reduceat(w[order], starts)
    return a[starts], b[starts], w, loops


def row_pointers(rows: np.ndarray, n: int) -> np.ndarray:
    """int64 row pointers (n + 1) of rows 0..n-1 holding the entries of `rows` (in any order, so the
    destinations need no sort first): a count and a prefix sum."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    if rows.size:
        np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr


def by_target(dst: np.ndarray, n: int, eid_dtype: np.dtype, chunk: int = CHUNK) -> np.ndarray:
    """Edge ids in (dst, src) order, of edges sorted by (src, dst): the transposed adjacency's ids.

    Within one destination, source order is edge-id order, so sorting the keys dst << bits(m) | id
    (unique, plain int64) is the stable sort by destination. The ids are then decoded over the keys
    themselves (entry i's id lands at or before key i, and each chunk's keys are read before that
    chunk is written) and the buffer shrunk to them: no second m-sized array beside the keys. Past 63
    bits (never below 2^31 vertices) a stable argsort of `dst`.
    """
    m = dst.size
    et = np.dtype(eid_dtype)
    mbits = bits_for(m)
    if m == 0:
        return np.zeros(0, dtype=et)
    if bits_for(n) + mbits > 63:
        return np.argsort(dst, kind="stable").astype(et)
    buf = np.empty(m * 8 // et.itemsize, dtype=et)
    key = buf.view(np.int64)
    for lo in range(0, m, chunk):
        k = key[lo : lo + chunk]
        np.left_shift(dst[lo : lo + chunk], mbits, out=k, dtype=np.int64)
        k |= np.arange(lo, lo + k.size, dtype=np.int64)
    del k
    sort_keys(key)
    mask = (1 << mbits) - 1
    for lo in range(0, m, chunk):
        hi = min(lo + chunk, m)
        buf[lo:hi] = key[lo:hi] & mask
    del key
    if buf.size > m:
        buf.resize(m, refcheck=False)  # nothing else refers to this buffer: realloc in place
    return buf


class TargetKeys:
    """Edges (sorted by (src, dst)) in (dst, src) order as sorted uint64 keys dst | edge id | src, for
    graphs where the three fit in 64 bits (`fits`: 2 bits(n) + bits(m) <= 64, kron:20 and below).

    Both the source and the edge id of each entry decode from its key, so the transposed adjacency
    needs neither `src` (the caller may let it go meanwhile) nor a gather of it through the ids, whose
    random reads cost about as much as the sort at kron:20. The key sorts as (dst, edge id), which
    is (dst, src) order.
    """

    def __init__(self, src: np.ndarray, dst: np.ndarray, n: int, chunk: int = CHUNK) -> None:
        m = src.size
        self.bits, self.mbits, self.vt = bits_for(n), bits_for(m), src.dtype
        key = np.empty(m, dtype=np.uint64)
        for lo in range(0, m, chunk):
            k = key[lo : lo + chunk]
            k[:] = dst[lo : lo + chunk]  # non-negative: the cast is exact
            k <<= np.uint64(self.bits + self.mbits)
            ids = np.arange(lo, lo + k.size, dtype=np.uint64)
            ids <<= np.uint64(self.bits)
            k |= ids
            k |= src[lo : lo + chunk].astype(np.uint64)
        sort_keys(key)
        self.key = key

    @staticmethod
    def fits(n: int, m: int) -> bool:
        return 2 * bits_for(n) + bits_for(m) <= 64

    def sources(self, lo: int, hi: int) -> np.ndarray:
        """The sources of entries lo..hi-1."""
        out = np.empty(hi - lo, dtype=self.vt)  # written as computed: no uint64 temporary
        return np.bitwise_and(self.key[lo:hi], np.uint64((1 << self.bits) - 1), out=out, casting="unsafe")

    def eids(self, lo: int, hi: int, dtype: np.dtype) -> np.ndarray:
        """The edge ids of entries lo..hi-1."""
        k = self.key[lo:hi] >> np.uint64(self.bits)
        out = np.empty(hi - lo, dtype=dtype)
        return np.bitwise_and(k, np.uint64((1 << self.mbits) - 1), out=out, casting="unsafe")
