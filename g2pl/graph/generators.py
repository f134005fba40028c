"""Synthetic graphs named by a spec string: `kron:SCALE[:EDGEFACTOR]`, `ws:N:K:P`, `er:N:M`.

Benchmarks need graphs of tens of millions of edges without shipping files,
and results must be reproducible, so every generator is fully vectorized and
driven only by the seed: the same spec and seed give the same graph on every
machine and for every number of ranks, a different seed a different graph.
Edges (and G(n, m)'s candidate pairs) are drawn in blocks of GEN_BLOCK,
block b from a random stream keyed by (seed, b) alone, so each rank of a
distributed run draws just its own blocks (`generate_share`).
All generated graphs have vertex IDs 0..N-1, isolated vertices included.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.graph.graph import Graph, build_graph_from, index_dtype
from g2pl.graph.share import EdgeShare
from g2pl.io.numtext import beyond_int64, shorten

#: Graph500 initiator probabilities (D = 1 - A - B - C = 0.05).
KRON_A, KRON_B, KRON_C = 0.57, 0.19, 0.19
KRON_DEFAULT_EDGEFACTOR = 16
KRON_MAX_SCALE = 30
MAX_GENERATED_VERTICES = 1 << 31

GENERATOR_FORMS = {
    "kron": "kron:SCALE[:EDGEFACTOR]",
    "ws": "ws:N:K:P",
    "er": "er:N:M",
}

_INT_RE = re.compile(r"[0-9]+\Z")
_SPEC_RE = re.compile(r"([A-Za-z][A-Za-z0-9_]*):")


def looks_like_generator(spec: str) -> bool:
    """True when `spec` has the NAME:... shape of a generator (not a path)."""
    return _SPEC_RE.match(spec) is not None


def _forms() -> str:
    return ", ".join(GENERATOR_FORMS.values())


def _int_param(spec: str, form: str, what: str, text: str) -> int:
    if not _INT_RE.match(text):
        raise G2PLError(
            f"bad generator spec '{shorten(spec)}': {what} must be a non-negative integer, got '{shorten(text)}' "
            f"(expected {form})"
        )
    if beyond_int64(text):
        raise G2PLError(f"bad generator spec '{shorten(spec)}': {what} is far too large (expected {form})")
    return int(text)


def _check_n(spec: str, n: int) -> None:
    if not 1 <= n <= MAX_GENERATED_VERTICES:
        raise G2PLError(f"bad generator spec '{spec}': N must be between 1 and 2^31, got {n}")


def parse_generator(spec: str) -> tuple[str, dict[str, Any]]:
    """Validate a generator spec; returns (name, params). Errors say what was expected."""
    parts = spec.split(":")
    gen = parts[0].lower()
    args = parts[1:]
    if gen not in GENERATOR_FORMS:
        raise G2PLError(f"unknown graph generator '{parts[0]}' in '{spec}'; expected one of {_forms()}")
    form = GENERATOR_FORMS[gen]
    if gen == "kron":
        if len(args) not in (1, 2):
            raise G2PLError(f"bad generator spec '{spec}': expected {form}")
        scale = _int_param(spec, form, "SCALE", args[0])
        if not 1 <= scale <= KRON_MAX_SCALE:
            raise G2PLError(
                f"bad generator spec '{spec}': SCALE must be between 1 and {KRON_MAX_SCALE}, got {scale}"
            )
        ef = KRON_DEFAULT_EDGEFACTOR
        if len(args) == 2:
            ef = _int_param(spec, form, "EDGEFACTOR", args[1])
            if ef < 1:
                raise G2PLError(f"bad generator spec '{spec}': EDGEFACTOR must be at least 1, got {ef}")
        return gen, {"scale": scale, "edgefactor": ef}
    if gen == "ws":
        if len(args) != 3:
            raise G2PLError(f"bad generator spec '{spec}': expected {form}")
        n = _int_param(spec, form, "N", args[0])
        k = _int_param(spec, form, "K", args[1])
        try:
            p = float(args[2])
        except ValueError:
            raise G2PLError(
                f"bad generator spec '{spec}': P must be a probability in [0, 1], got '{args[2]}' (expected {form})"
            ) from None
        _check_n(spec, n)
        if k % 2 != 0 or k < 2 or k >= n:
            raise G2PLError(
                f"bad generator spec '{spec}': K must be an even integer with 2 <= K < N, got K={k}, N={n}"
            )
        if not 0.0 <= p <= 1.0:  # also rejects nan
            raise G2PLError(f"bad generator spec '{spec}': P must be a probability in [0, 1], got {args[2]}")
        return gen, {"n": n, "k": k, "p": p}
    # er
    if len(args) != 2:
        raise G2PLError(f"bad generator spec '{spec}': expected {form}")
    n = _int_param(spec, form, "N", args[0])
    m = _int_param(spec, form, "M", args[1])
    _check_n(spec, n)
    return gen, {"n": n, "m": m}


def _rng(seed: int, name: str) -> np.random.Generator:
    try:
        return np.random.default_rng(int(seed))
    except (ValueError, TypeError) as e:
        raise G2PLError(f"bad seed {seed!r}: {e} (expected a non-negative integer)", file=name) from None


def _check_seed(seed: int, name: str) -> int:
    _rng(seed, name)  # the same refusal as a sequential generator's
    return int(seed)


#: Edges drawn from one random stream: edge block b's draws come from a stream keyed by (seed, b)
#: alone, so any rank can draw any block, and every rank count gives the same graph.
GEN_BLOCK = 1 << 16


def _stream(seed: int, block: int, salt: int = 0) -> np.random.Generator:
    """The random stream of one edge block (counter-based: a pure function of seed, block and salt)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(salt, block))))


def edge_share(m: int, rank: int, size: int) -> tuple[int, int]:
    """The edge range [lo, hi) that rank `rank` of `size` draws: whole blocks, balanced."""
    nb = -(-m // GEN_BLOCK)
    return min(m, nb * rank // size * GEN_BLOCK), min(m, nb * (rank + 1) // size * GEN_BLOCK)


def vertex_share(n: int, rank: int, size: int) -> np.ndarray:
    """The vertex IDs rank `rank` of `size` declares (every generated ID 0..n-1 is a vertex)."""
    return np.arange(n * rank // size, n * (rank + 1) // size, dtype=np.int64)


_GATHER_BYTES = np.uint64(0x0102040810204080)  # byte i's bit 0 -> bit 56 + i (bytes are 0 or 1)


def _permute_labels(a: np.ndarray, scale: int, seed: int) -> None:
    """Relabel vertices 0..2^scale-1 in place by a seeded bijection (Graph500 permutes labels randomly).

    Why not a permutation table: a table of 2^scale entries would be on every rank; this is a
    pure function of the label (odd multiplications, xor-shifts and additions mod 2^scale, each
    invertible), so a rank relabels its own edges with no table at all.
    """
    mask = np.uint32((1 << scale) - 1)
    keys = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(7, 0))))
    consts = keys.integers(0, 1 << 32, size=6, dtype=np.uint64).astype(np.uint32)
    shift = np.uint32(max(1, (scale + 1) // 2))
    step = 1 << 20
    buf = np.empty(min(step, len(a)), dtype=np.uint32)
    for lo in range(0, len(a), step):
        x = buf[: min(step, len(a) - lo)]
        x[:] = a[lo : lo + step]
        for r in range(3):
            x *= consts[2 * r] | np.uint32(1)
            x &= mask
            x ^= x >> shift
            x += consts[2 * r + 1]
            x &= mask
        a[lo : lo + step] = x


def kronecker_edges(scale: int, edgefactor: int, seed: int, lo: int = 0, hi: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Edges lo..hi-1 of the Graph500 Kronecker edge list (2^scale vertices, edgefactor * 2^scale edges).

    Each of the SCALE bit levels picks one quadrant of the initiator matrix
    [[A, B], [C, D]] per edge; one uniform per level and edge is the same
    distribution as Graph500's two conditional draws. Uniforms are 32-bit
    halves of the raw PCG64 output of the edge's block stream (`_stream`). A
    level's row bit is "C or D" (r >= A+B) and its column bit "B or D", which is
    the parity of r >= A, r >= A+B and r >= A+B+C. The bits of all levels (one
    byte each, in a row padded to whole 8-byte words) are gathered into an
    integer by one multiplication per word (0x0102040810204080 moves byte i's
    low bit to bit 56 + i), which is twice as fast as `packbits`. Finally vertex
    labels are permuted by a seeded bijection, as Graph500 permutes them.
    Endpoints are int32 up to scale 31 (the same values as int64, half the memory).
    """
    n = 1 << scale
    m = edgefactor * n
    hi = m if hi is None else hi
    if lo % GEN_BLOCK:
        raise ValueError("an edge share starts at a block boundary")
    vt = index_dtype(n)
    t_a = np.uint32(int(KRON_A * 2**32))
    t_ab = np.uint32(int((KRON_A + KRON_B) * 2**32))
    t_abc = np.uint32(int((KRON_A + KRON_B + KRON_C) * 2**32))
    u = np.empty(hi - lo, dtype=vt)
    v = np.empty(hi - lo, dtype=vt)
    chunk = GEN_BLOCK
    words = (scale + 7) // 8
    rows = np.zeros((2, chunk, 8 * words), dtype=np.uint8)  # row and column bits, zero-padded per edge
    ibit = rows[0, :, :scale].view(bool)
    jbit = rows[1, :, :scale].view(bool)
    tmp = np.empty((chunk, scale), dtype=bool)
    acc = np.empty(chunk, dtype=np.uint64)
    for start in range(lo, hi, chunk):
        k = min(chunk, hi - start)
        draws = scale * k
        raw = _stream(seed, start // GEN_BLOCK).bit_generator.random_raw((draws + 1) // 2)
        r = raw.view(np.uint32)[:draws].reshape(k, scale)
        np.greater_equal(r, t_ab, out=ibit[:k])
        np.greater_equal(r, t_a, out=jbit[:k])
        np.greater_equal(r, t_abc, out=tmp[:k])
        jbit[:k] ^= ibit[:k]
        jbit[:k] ^= tmp[:k]
        for side, out in ((0, u), (1, v)):
            w = rows[side, :k].view(np.uint64)  # (k, words)
            acc[:k] = 0
            for b in range(words):
                acc[:k] |= ((w[:, b] * _GATHER_BYTES) >> np.uint64(56)) << np.uint64(8 * b)
            out[start - lo : start - lo + k] = acc[:k]
    for a in (u, v):
        _permute_labels(a, scale, seed)
    return u, v


def watts_strogatz_edges(n: int, k: int, p: float, seed: int, lo: int = 0, hi: int | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Edges lo..hi-1 of a ring lattice (each vertex to its K/2 successors: edge e joins e // (K/2) and
    its (e % (K/2) + 1)-th successor), each edge's far end rewired with prob. P.

    Rewired ends are uniform over all vertices; the self-loops and duplicates this
    can create are dropped/merged (and counted) by `build_graph`, which keeps the
    generator a single vectorized pass.  Draws come from each edge block's stream.
    """
    half = k // 2
    hi = n * half if hi is None else hi
    if lo % GEN_BLOCK:
        raise ValueError("an edge share starts at a block boundary")
    vt = index_dtype(2 * n)  # u + offset stays below 2n
    e = np.arange(lo, hi, dtype=np.int64)
    u = (e // half).astype(vt)
    v = (e % half + 1).astype(vt)
    del e
    v += u
    v %= n
    for start in range(lo, hi, GEN_BLOCK):
        rng = _stream(seed, start // GEN_BLOCK)
        a, b = start - lo, min(start + GEN_BLOCK, hi) - lo
        rewire = rng.random(b - a) < p
        v[a:b][rewire] = rng.integers(0, n, size=int(np.count_nonzero(rewire)), dtype=np.int64)
    return u, v


class _Alone:
    """The collectives of one rank (a sequential `generate` runs the distributed draw on its own)."""

    rank, size = 0, 1

    @staticmethod
    def allgather(obj: Any) -> list[Any]:
        return [obj]

    @staticmethod
    def alltoallv(send: np.ndarray, counts: Any, recv_counts: Any = None) -> tuple[np.ndarray, np.ndarray]:
        return send, np.asarray(counts, dtype=np.int64)


def erdos_renyi_edges(n: int, m: int, directed: bool, seed: int, spec: str, comm: Any = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """This rank's share of G(n, m): exactly M distinct non-loop pairs, uniformly at random.

    Candidate pairs are drawn in blocks (block b from the stream keyed by (seed, b)), each with its
    draw index; the graph is the first M distinct pairs in draw order, a uniform M-subset.  Each rank
    draws its share of the blocks and sends every candidate to the owner of its pair's range, which
    keeps each pair's first draw; rounds of blocks are added until M distinct pairs exist, then a
    search over the draw index (counts summed over the ranks) finds the M-th.  When M is more than
    half of all pairs the same draw picks the pairs left out instead, so the draws stay below
    ln 2 of the pairs.  The result is the same for every rank count; each rank returns the pairs of
    its own range.
    """
    comm = comm or _Alone()
    max_pairs = n * (n - 1) if directed else n * (n - 1) // 2
    if m > max_pairs:
        raise G2PLError(
            f"bad generator spec '{spec}': M={m} exceeds the {max_pairs} possible "
            f"{'directed' if directed else 'undirected'} edges on N={n} vertices"
        )
    left_out = m > max_pairs // 2
    want = max_pairs - m if left_out else m
    keyspace = n * n  # key u * n + v (below 2^62 for n <= 2^31)
    span = -(-keyspace // comm.size)  # each rank owns keys [rank * span, (rank + 1) * span)
    keys = np.zeros(0, dtype=np.int64)  # this rank's distinct pairs and the index of their first draw
    first = np.zeros(0, dtype=np.int64)
    drawn = 0
    while want:
        total = want + want // 8 + 64  # draws of this round
        nb = -(-total // GEN_BLOCK)
        b0 = drawn // GEN_BLOCK
        mine = range(b0 + nb * comm.rank // comm.size, b0 + nb * (comm.rank + 1) // comm.size)
        got_k, got_i = [], []
        for b in mine:
            rng = _stream(seed, b, salt=3)
            u = rng.integers(0, n, size=GEN_BLOCK, dtype=np.int64)
            v = rng.integers(0, n, size=GEN_BLOCK, dtype=np.int64)
            ok = np.flatnonzero(u != v)
            u, v = u[ok], v[ok]
            if not directed:
                u, v = np.minimum(u, v), np.maximum(u, v)
            got_k.append(u * n + v)
            got_i.append(b * GEN_BLOCK + ok)
        k = np.concatenate(got_k) if got_k else np.zeros(0, np.int64)
        idx = np.concatenate(got_i) if got_i else np.zeros(0, np.int64)
        owner = k // span
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=comm.size)
        k, recv = comm.alltoallv(k[order], counts)
        idx = comm.alltoallv(idx[order], counts, recv)[0]
        keys, first = _first_draws(np.concatenate([keys, k]), np.concatenate([first, idx]))
        drawn = (b0 + nb) * GEN_BLOCK
        if sum(comm.allgather(len(keys))) >= want:
            break
    if want:  # the want-th smallest first draw, by bisection on the draw index
        lo, hi = 0, drawn
        while lo < hi:
            mid = (lo + hi) // 2
            if sum(comm.allgather(int(np.count_nonzero(first <= mid)))) >= want:
                hi = mid
            else:
                lo = mid + 1
        keys = keys[first <= lo]
    if left_out:  # every pair of this rank's range, less the ones drawn
        r0, r1 = comm.rank * span, min(keyspace, (comm.rank + 1) * span)
        every = np.arange(r0, r1, dtype=np.int64)
        u, v = np.divmod(every, n)
        every = every[(u != v) if directed else (u < v)]
        keys = np.setdiff1d(every, keys, assume_unique=True)
    return keys // n, keys % n


def _first_draws(keys: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each distinct key once (ascending), with the smallest of its draw indices."""
    order = np.lexsort((draws, keys))
    keys, draws = keys[order], draws[order]
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    return keys[new], draws[new]


def _edges(gen: str, params: dict[str, Any], directed: bool, seed: int, spec: str, rank: int, size: int,
           comm: Any = None) -> tuple[int, np.ndarray, np.ndarray]:
    """(N, this share's edge endpoints) of generator `gen`: rank `rank` of `size` draws its edge blocks."""
    if gen == "kron":
        n = 1 << params["scale"]
        lo, hi = edge_share(params["edgefactor"] * n, rank, size)
        return n, *kronecker_edges(params["scale"], params["edgefactor"], seed, lo, hi)
    if gen == "ws":
        n = params["n"]
        lo, hi = edge_share(n * (params["k"] // 2), rank, size)
        return n, *watts_strogatz_edges(n, params["k"], params["p"], seed, lo, hi)
    n = params["n"]
    return n, *erdos_renyi_edges(n, params["m"], directed, seed, spec, comm)


def generate(spec: str, directed: bool = False, seed: int = 0) -> Graph:
    """Build the graph a generator spec names (see module docstring)."""
    gen, params = parse_generator(spec)
    seed = _check_seed(seed, spec)
    info: dict[str, Any] = {"format": f"generator:{gen}", "generator": gen, "seed": seed, **params}
    n, u, v = _edges(gen, params, directed, seed, spec, 0, 1)
    edges = [u, v]
    del u, v  # the builder frees each array once it is consumed
    return build_graph_from(edges, None, directed=directed, name=spec, extra_ids=np.arange(n, dtype=np.int64),
                            info=info)


def generate_share(spec: str, directed: bool, seed: int, comm: Any) -> EdgeShare:
    """This rank's share of the generated graph (collective over `comm`: G(n, m) draws its pairs
    together): its edges and its range of the N vertex IDs.  The shares of any number of ranks
    together are the graph `generate` builds."""
    gen, params = parse_generator(spec)
    seed = _check_seed(seed, spec)
    info: dict[str, Any] = {"format": f"generator:{gen}", "generator": gen, "seed": seed, **params}
    rank, size = comm.rank, comm.size
    n, u, v = _edges(gen, params, directed, seed, spec, rank, size, comm)
    return EdgeShare(u, v, None, vertex_share(n, rank, size), directed, spec, info, id_bound=n)


__all__ = [
    "GENERATOR_FORMS",
    "generate",
    "generate_share",
    "looks_like_generator",
    "parse_generator",
    "kronecker_edges",
    "watts_strogatz_edges",
    "erdos_renyi_edges",
]
