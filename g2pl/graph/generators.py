"""Synthetic graphs named by a spec string: `kron:SCALE[:EDGEFACTOR]`, `ws:N:K:P`, `er:N:M`.

Benchmarks need graphs of tens of millions of edges without shipping files,
and results must be reproducible, so every generator is fully vectorized and
driven only by `numpy.random.default_rng(seed)`: the same spec and seed give
the same graph on every machine, a different seed a different graph.
All generated graphs have vertex IDs 0..N-1, isolated vertices included.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.graph.graph import Graph, build_graph_from, index_dtype
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


_GATHER_BYTES = np.uint64(0x0102040810204080)  # byte i's bit 0 -> bit 56 + i (bytes are 0 or 1)


def kronecker_edges(scale: int, edgefactor: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Graph500 Kronecker edge list (2^scale vertices, edgefactor * 2^scale edges).

    Each of the SCALE bit levels picks one quadrant of the initiator matrix
    [[A, B], [C, D]] per edge; one uniform per level and edge is the same
    distribution as Graph500's two conditional draws. Uniforms are 32-bit
    halves of the raw PCG64 output (fastest NumPy route). A level's row bit is
    "C or D" (r >= A+B) and its column bit "B or D", which is the parity of
    r >= A, r >= A+B and r >= A+B+C. The bits of all levels (one byte each, in
    a row padded to whole 8-byte words) are gathered into an integer by one
    multiplication per word (0x0102040810204080 moves byte i's low bit to bit
    56 + i), which is twice as fast as `packbits`. Finally vertex labels are
    randomly permuted, as Graph500 does. Endpoints are int32 up to scale 31
    (the same values as int64, half the memory).
    """
    n = 1 << scale
    m = edgefactor * n
    vt = index_dtype(n)
    t_a = np.uint32(int(KRON_A * 2**32))
    t_ab = np.uint32(int((KRON_A + KRON_B) * 2**32))
    t_abc = np.uint32(int((KRON_A + KRON_B + KRON_C) * 2**32))
    u = np.empty(m, dtype=vt)
    v = np.empty(m, dtype=vt)
    chunk = 1 << 16
    words = (scale + 7) // 8
    rows = np.zeros((2, chunk, 8 * words), dtype=np.uint8)  # row and column bits, zero-padded per edge
    ibit = rows[0, :, :scale].view(bool)
    jbit = rows[1, :, :scale].view(bool)
    tmp = np.empty((chunk, scale), dtype=bool)
    acc = np.empty(chunk, dtype=np.uint64)
    bitgen = rng.bit_generator
    for start in range(0, m, chunk):
        k = min(chunk, m - start)
        draws = scale * k
        r = bitgen.random_raw((draws + 1) // 2).view(np.uint32)[:draws].reshape(k, scale)
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
            out[start : start + k] = acc[:k]
    perm = rng.permutation(n).astype(vt)
    for a in (u, v):  # relabel in place, a chunk at a time (no second edge-sized array)
        for lo in range(0, m, 1 << 22):
            a[lo : lo + (1 << 22)] = perm[a[lo : lo + (1 << 22)]]
    return u, v


def watts_strogatz_edges(n: int, k: int, p: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Ring lattice (each vertex to its K/2 successors), each edge's far end rewired with prob. P.

    Rewired ends are uniform over all vertices; the self-loops and duplicates this
    can create are dropped/merged (and counted) by `build_graph`, which keeps the
    generator a single vectorized pass.
    """
    half = k // 2
    vt = index_dtype(2 * n)  # u + offset stays below 2n
    u = np.repeat(np.arange(n, dtype=vt), half)
    v = np.tile(np.arange(1, half + 1, dtype=vt), n)
    v += u
    v %= n
    rewire = rng.random(u.size) < p
    v[rewire] = rng.integers(0, n, size=int(np.count_nonzero(rewire)), dtype=np.int64)
    return u, v


def _decode_pairs(idx: np.ndarray, n: int, directed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Map pair indices 0..P-1 to distinct vertex pairs (ordered u != v, or u < v)."""
    if directed:
        u = idx // (n - 1)
        r = idx - u * (n - 1)
        return u, r + (r >= u)
    # Row u of the strict upper triangle starts at T(u) = u*(2n-u-1)/2; invert with a float
    # estimate, then correct the rare off-by-one from rounding.
    b = 2 * n - 1
    u = np.floor((b - np.sqrt(np.maximum(float(b) * b - 8.0 * idx, 0.0))) / 2).astype(np.int64)
    u = np.clip(u, 0, n - 2)
    for _ in range(3):
        start = u * (b - u) // 2
        u = np.where(idx < start, u - 1, u)
        nxt = (u + 1) * (b - u - 1) // 2
        u = np.where(idx >= nxt, u + 1, u)
    start = u * (b - u) // 2
    return u, idx - start + u + 1


def erdos_renyi_edges(
    n: int, m: int, directed: bool, rng: np.random.Generator, spec: str
) -> tuple[np.ndarray, np.ndarray]:
    """G(n, m): exactly M distinct non-loop pairs, uniformly at random.

    Dense requests draw M pair indices without replacement; sparse ones draw
    random pairs and keep the first M distinct (rejection), which is uniform and
    needs no O(N^2) memory.
    """
    max_pairs = n * (n - 1) if directed else n * (n - 1) // 2
    if m > max_pairs:
        raise G2PLError(
            f"bad generator spec '{spec}': M={m} exceeds the {max_pairs} possible "
            f"{'directed' if directed else 'undirected'} edges on N={n} vertices"
        )
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if max_pairs <= 4 * m + (1 << 20):
        idx = rng.choice(max_pairs, size=m, replace=False).astype(np.int64)
        return _decode_pairs(np.sort(idx), n, directed)
    keys = np.zeros(0, dtype=np.int64)  # pair keys in draw order, distinct
    while keys.size < m:
        need = m - keys.size
        draw = need + need // 8 + 64
        u = rng.integers(0, n, size=draw, dtype=np.int64)
        v = rng.integers(0, n, size=draw, dtype=np.int64)
        ok = u != v
        u, v = u[ok], v[ok]
        if not directed:
            u, v = np.minimum(u, v), np.maximum(u, v)
        cand = np.concatenate([keys, u * n + v])
        # First occurrence of each key, in draw order.
        order = np.argsort(cand, kind="stable")
        sc = cand[order]
        first = np.empty(sc.size, dtype=bool)
        first[:1] = True
        np.not_equal(sc[1:], sc[:-1], out=first[1:])
        keep = np.sort(order[first])
        keys = cand[keep][:m]
    keys = np.sort(keys)
    return keys // n, keys % n


def generate(spec: str, directed: bool = False, seed: int = 0) -> Graph:
    """Build the graph a generator spec names (see module docstring)."""
    gen, params = parse_generator(spec)
    rng = _rng(seed, spec)
    info: dict[str, Any] = {"format": f"generator:{gen}", "generator": gen, "seed": int(seed), **params}
    if gen == "kron":
        n = 1 << params["scale"]
        u, v = kronecker_edges(params["scale"], params["edgefactor"], rng)
    elif gen == "ws":
        n = params["n"]
        u, v = watts_strogatz_edges(n, params["k"], params["p"], rng)
    else:
        n = params["n"]
        u, v = erdos_renyi_edges(n, params["m"], directed, rng, spec)
    edges = [u, v]
    del u, v  # the builder frees each array once it is consumed
    return build_graph_from(edges, None, directed=directed, name=spec, extra_ids=np.arange(n, dtype=np.int64),
                            info=info)


__all__ = [
    "GENERATOR_FORMS",
    "generate",
    "looks_like_generator",
    "parse_generator",
    "kronecker_edges",
    "watts_strogatz_edges",
    "erdos_renyi_edges",
]
