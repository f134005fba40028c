"""Numbers in arrays as text, in bulk: rows of JSON or CSV made with array operations, not per number.

Writing a 16M-edge result as text through Python objects (`tolist`, `json.dumps`, f-strings) costs
tens of seconds; here a chunk of rows is one byte matrix instead.  A `Rows` is a sequence of
columns, each either constant text or a field (integers, floats, booleans) whose text varies in
length from row to row: every column becomes a block of a (rows, width) byte matrix, a field's text
padded with NUL bytes (which no number's text holds), and the matrix's bytes read in row order with
the NULs dropped (`bytes.translate`, one C loop) are the rows' text.

Integers are written digit by digit across the whole column (a division by ten per digit, not per
number).  Floats are written as `repr` writes them (the shortest text that reads back the same
float, which is what `json.dumps` writes): integral ones (the common case of counts and distances)
as their integer's digits and ".0", others through `float.__repr__` on the chunk's list, and the
non-finite ones as the caller's words (JSON's `"nan"`, CSV's `nan`).

`Rows(n, writer)` writes the rows in one compiled pass instead, `writer` being `write_rows` compiled
(g2pl.runtime.cpu_kernels.row_writer, where numba's kernels are loaded already): integer columns digit
by digit per number, floats by g2pl.io.shortest_float (the digits `repr` writes, from integer
arithmetic: no Python object per number), constants and fields copied without their NULs, straight
into the output buffer (no byte matrix, no `translate`).  The bytes are the same either way
(tests/cli/test_output_formats.py, tests/cli/test_shortest_float.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from g2pl.io import shortest_float

_ZERO = ord("0")
_MINUS = ord("-")
_INT_FLOAT_LIMIT = 1e16  # from here on repr writes an exponent (1e+16), not "<digits>.0"
_LITTLE = sys.byteorder == "little"

#: one field of a chunk of n rows: a (words, n) uint64 array, row j holding characters 8j to 8j + 7 of
#: every row's text (NUL where a row's text is shorter), so a row's text is written 8 bytes at a time
Field = np.ndarray


def _shift(pos: int | np.ndarray) -> int | np.ndarray:
    """The bit shift of character `pos % 8` inside its 8-byte word, as the word lies in memory."""
    byte = pos % 8
    return 8 * (byte if _LITTLE else 7 - byte)


def int_field(values: np.ndarray, suffix: bytes = b"") -> Field:
    """Decimal text of integers, followed by `suffix`: digits across the whole column, a division per
    digit (in 32 bits when the numbers fit, several times faster), each put in place in its word."""
    a = np.asarray(values).astype(np.int64, copy=False)
    n = a.size
    if n == 0:
        return np.zeros((1, 0), np.uint64)
    neg = a < 0
    any_neg = bool(neg.any())
    mag: np.ndarray
    if any_neg and bool((a == np.iinfo(np.int64).min).any()):
        mag = a.view(np.uint64).copy()  # |INT64_MIN| fits in uint64 only
        np.negative(mag, out=mag, where=neg)
    else:
        mag = np.abs(a) if any_neg else a
    top = int(mag.max())
    if top < 1 << 32:
        mag = mag.astype(np.uint32)
    digits = len(str(top))
    width = any_neg + digits + len(suffix)
    words = -(-width // 8)
    out = np.zeros((words, n), np.uint64)
    last = 8 * words - 1  # the text is right-aligned: its last character at the field's last byte
    for k, ch in enumerate(reversed(suffix)):
        out[(last - k) // 8] |= np.uint64(ch << _shift(last - k))
    end = last - len(suffix)  # where the units digit goes
    ten = mag.dtype.type(10)
    q = mag
    length = np.ones(n, np.uint8) if any_neg else None
    for k in range(digits):
        nxt = q // ten
        d = (q - nxt * ten).astype(np.uint64)
        d += _ZERO
        if k:
            nz = q != 0  # no leading zeros: NUL before the first digit
            d *= nz
            if length is not None:
                length += nz
        d <<= np.uint64(_shift(end - k))
        out[(end - k) // 8] |= d
        q = nxt
    if any_neg:
        assert length is not None
        at = np.flatnonzero(neg)
        pos = end - length[at].astype(np.int64)  # just before the leading digit
        sign = np.uint64(_MINUS) << np.asarray(_shift(pos), dtype=np.uint64)
        out[pos // 8, at] |= sign  # one word per row: no index repeats
    return out


def _bytes_field(chars: np.ndarray) -> Field:
    """A (n, width) matrix of NUL-padded characters as a field."""
    n, width = chars.shape
    words = max(-(-width // 8), 1)
    padded = np.zeros((n, 8 * words), np.uint8)
    padded[:, :width] = chars
    return np.ascontiguousarray(padded.view(np.uint64).T)


def _text_field(texts: list[str]) -> Field:
    """Texts of one row each as a field."""
    if not texts:
        return np.zeros((1, 0), np.uint64)
    arr = np.array(texts, dtype="S")
    return _bytes_field(arr.view(np.uint8).reshape(len(texts), max(arr.dtype.itemsize, 1)))


def _repr_field(x: np.ndarray) -> Field:
    """`repr` of each float: per value, the one step done in Python (its shortest round-trip text);
    values that repeat (weights, thirds, levels) are written once each and gathered."""
    if x.size > 256:
        sample = x[::max(1, x.size // 1024)]
        if 2 * np.unique(sample).size < sample.size:  # mostly repeats: repr of the distinct values only
            distinct, which = np.unique(x, return_inverse=True)
            return _text_field(list(map(float.__repr__, distinct.tolist())))[:, which.reshape(-1)]
    return _text_field(list(map(float.__repr__, x.tolist())))


def float_field(values: np.ndarray, nan: bytes, inf: bytes, neg_inf: bytes) -> Field:
    """Floats as `repr` writes them (see the module docstring); non-finite ones as the words given."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    finite = np.isfinite(x)
    with np.errstate(invalid="ignore"):  # trunc(nan)
        integral = finite & (np.abs(x) < _INT_FLOAT_LIMIT) & (x == np.trunc(x)) & ~((x == 0) & np.signbit(x))
    parts: list[tuple[np.ndarray, Field]] = []
    rows = np.flatnonzero(integral)
    if rows.size:
        parts.append((rows, int_field(x[rows].astype(np.int64), b".0")))
    rows = np.flatnonzero(finite & ~integral)
    if rows.size:
        parts.append((rows, _repr_field(x[rows])))
    if not finite.all():
        for word, sel in ((nan, np.isnan(x)), (inf, x == np.inf), (neg_inf, x == -np.inf)):
            rows = np.flatnonzero(sel)
            if rows.size:
                parts.append((rows, _bytes_field(np.broadcast_to(np.frombuffer(word, np.uint8), (rows.size, len(word))))))
    if len(parts) == 1 and parts[0][0].size == n:
        return parts[0][1]
    words = max((f.shape[0] for _r, f in parts), default=1)
    out = np.zeros((words, n), np.uint64)
    for rows, f in parts:
        out[:f.shape[0], rows] = f
    return out


def bool_field(values: np.ndarray, true: bytes = b"true", false: bytes = b"false") -> Field:
    """Booleans as the two words given."""
    b = np.asarray(values).astype(bool, copy=False)
    width = max(len(true), len(false))
    words = np.zeros((2, width), np.uint8)
    words[0, :len(false)] = np.frombuffer(false, np.uint8)
    words[1, :len(true)] = np.frombuffer(true, np.uint8)
    table = _bytes_field(words)  # (words, 2)
    return table[:, b.view(np.uint8)]


def write_rows(n, prog, consts, ints, fields, floats, little, pairs, powers, tables, out):  # pragma: no cover (compiled)
    """Rows 0..n-1 into `out`, each by the steps of `prog` (triples kind, a, b): kind 0 copies
    consts[a:b], 1 writes ints[a, row] in decimal, 2 copies the non-NUL bytes of words fields[a:b, row],
    3 writes the float64 of bits floats[a, row] as `repr` does (shortest_float.float_text, `tables` its
    powers of five), or where it is not finite the first (NaN), second (inf) or third (-inf) of the
    three words at consts[b:], each after its length; returns the bytes written.  An integer's digits
    are counted against `powers` (10**k) and written from its last, two at a time from `pairs`."""
    hundred = np.uint64(100)
    pos = 0
    for r in range(n):
        for p in range(len(prog) // 3):
            kind, a, b = prog[3 * p], prog[3 * p + 1], prog[3 * p + 2]
            if kind == 0:
                for i in range(a, b):
                    out[np.uint64(pos)] = consts[i]
                    pos += 1
            elif kind == 1:
                v = ints[a, r]
                if v < 0:
                    out[np.uint64(pos)] = 45  # '-'
                    pos += 1
                    m = np.uint64(-(v + 1)) + np.uint64(1)  # |v|, INT64_MIN included
                else:
                    m = np.uint64(v)
                nd = 1
                while nd < 20 and m >= powers[nd]:
                    nd += 1
                end = pos + nd
                at = end
                while m >= hundred:
                    q = m // hundred
                    d = 2 * (m - q * hundred)
                    out[np.uint64(at - 1)] = pairs[d + 1]
                    out[np.uint64(at - 2)] = pairs[d]
                    at -= 2
                    m = q
                if m >= 10:
                    out[np.uint64(at - 1)] = pairs[2 * m + 1]
                    out[np.uint64(at - 2)] = pairs[2 * m]
                else:
                    out[np.uint64(at - 1)] = np.uint8(48 + m)
                pos = end
            elif kind == 3:
                bits = floats[a, r]
                if (bits >> np.uint64(52)) & np.uint64(0x7FF) != np.uint64(0x7FF):
                    pos = shortest_float.float_text(bits, out, pos, tables[0], tables[1], tables[2], tables[3])
                    continue
                word = 0 if bits & np.uint64((1 << 52) - 1) else (2 if bits >> np.uint64(63) else 1)
                at = b
                for _ in range(word):
                    at += 1 + consts[at]
                for i in range(at + 1, at + 1 + consts[at]):
                    out[np.uint64(pos)] = consts[i]
                    pos += 1
            else:
                for j in range(a, b):
                    w = fields[j, r]
                    for byte in range(8):
                        c = (w >> np.uint64(8 * byte if little else 56 - 8 * byte)) & np.uint64(255)
                        if c != 0:
                            out[np.uint64(pos)] = np.uint8(c)
                            pos += 1
    return pos


#: the arguments `write_rows` reads its digits from
_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), np.uint8)
_POWERS = np.array([10**k for k in range(20)], np.uint64)
_TABLES = (shortest_float.INV_LO, shortest_float.INV_HI, shortest_float.POW_LO, shortest_float.POW_HI)


class _Floats:
    """A float column of the compiled writer: the values' bits and the words for nan, inf and -inf."""

    def __init__(self, bits: np.ndarray, words: tuple[bytes, bytes, bytes]) -> None:
        if any(len(w) > 255 for w in words):
            raise ValueError("a word for a non-finite float longer than 255 bytes")
        self.bits, self.words = bits, words


class Rows:
    """Rows of text built column by column over a chunk of `n` rows; `text()` is their bytes (made by
    `writer`, `write_rows` compiled, where given)."""

    def __init__(self, n: int, writer: Callable | None = None) -> None:
        self.n = n
        self.writer = writer
        self._cols: list[bytes | Field | np.ndarray | _Floats] = []

    def const(self, text: bytes) -> Rows:
        """The same text in every row."""
        if text:
            self._cols.append(text)
        return self

    def field(self, f: Field) -> Rows:
        """A field (`int_field`, `float_field`, `bool_field`) of these `n` rows."""
        if f.shape[1] != self.n:
            raise ValueError(f"a field of {f.shape[1]} rows in rows of {self.n}")
        self._cols.append(f)
        return self

    def ints(self, values: np.ndarray) -> Rows:
        """Integers in decimal (as `int_field` writes them)."""
        a = np.asarray(values).astype(np.int64, copy=False)
        if a.ndim != 1 or a.size != self.n:
            raise ValueError(f"{a.size} integers in rows of {self.n}")
        self._cols.append(a if self.writer is not None else int_field(a))
        return self

    def value(self, elem: str, data: np.ndarray, words: tuple[bytes, bytes, bytes]) -> Rows:
        """A returned value's elements (see `value_field`); `words`: the text of nan, inf and -inf."""
        if elem == "float" and self.writer is not None:
            x = np.ascontiguousarray(data, dtype=np.float64)
            if x.ndim != 1 or x.size != self.n:
                raise ValueError(f"{x.size} floats in rows of {self.n}")
            self._cols.append(_Floats(x.view(np.uint64), words))
            return self
        return self.ints(data) if elem not in ("float", "bool") else self.field(value_field(elem, data, words))

    def text(self, drop: int = 0) -> bytes:
        """Every row's text, in row order, less its last `drop` bytes (taken off before the text is
        copied out, not by a second copy).  Each row is laid out in a (n, width) byte matrix: the
        constants in a template row copied to every row at once, each field at an 8-byte boundary,
        written a word per row; the matrix's bytes without its NULs (one C loop) are the text."""
        n = self.n
        if n == 0:
            return b""
        if self.writer is not None:
            return self._compiled_text(drop)
        template = bytearray()
        places: list[tuple[int, np.ndarray]] = []
        for c in self._cols:
            if isinstance(c, bytes):
                template += c
            else:
                assert not isinstance(c, _Floats)  # (made only where there is a compiled writer)
                template += bytes(-len(template) % 8)
                places.append((len(template) // 8, c))
                template += bytes(8 * c.shape[0])
        template += bytes(-len(template) % 8)
        chars = np.empty((n, len(template)), np.uint8)
        chars[:] = np.frombuffer(bytes(template), np.uint8)
        words = chars.view(np.uint64)
        for at, f in places:
            for j in range(f.shape[0]):
                words[:, at + j] = f[j]
        text = chars.tobytes().translate(None, b"\0")
        return text[:len(text) - drop] if drop else text

    def _compiled_text(self, drop: int) -> bytes:
        """`text()` by the compiled `write_rows`, into a buffer of the rows' greatest possible length."""
        prog: list[int] = []
        consts = bytearray()
        ints: list[np.ndarray] = []
        fields: list[np.ndarray] = []
        floats: list[np.ndarray] = []
        width, nwords = 0, 0
        for c in self._cols:
            if isinstance(c, _Floats):
                prog += [3, len(floats), len(consts)]
                floats.append(c.bits)
                for w in c.words:
                    consts += bytes([len(w)]) + w
                width += max(24, *(len(w) for w in c.words))  # (the longest repr: -1.2345678901234567e-308)
            elif isinstance(c, bytes):
                prog += [0, len(consts), len(consts) + len(c)]
                consts += c
                width += len(c)
            elif c.ndim == 1:
                prog += [1, len(ints), 0]
                ints.append(c)
                lo, hi = (int(c.min()), int(c.max())) if c.size else (0, 0)
                width += max(len(str(lo)), len(str(hi)))  # (the longest text: sign and digits)
            else:
                prog += [2, nwords, nwords + c.shape[0]]
                fields.append(c)
                nwords += c.shape[0]
                width += 8 * c.shape[0]
        n = self.n
        out = np.empty(n * width, np.uint8)
        ints_arr = np.stack(ints) if ints else np.zeros((0, n), np.int64)
        fields_arr = np.ascontiguousarray(np.concatenate(fields)) if fields else np.zeros((0, n), np.uint64)
        floats_arr = np.stack(floats) if floats else np.zeros((0, n), np.uint64)
        assert self.writer is not None  # (text() comes here only with one)
        pos = self.writer(n, np.array(prog, np.int64), np.frombuffer(bytes(consts) or b"\0", np.uint8), ints_arr,
                          fields_arr, floats_arr, _LITTLE, _PAIRS, _POWERS, _TABLES, out)
        return out[:pos - drop].tobytes()


def value_field(elem: str, data: np.ndarray, words: tuple[bytes, bytes, bytes]) -> Field:
    """A returned value's elements (`elem`: "int", "vid", "float", "bool") as a field; `words`: the
    text of nan, inf and -inf."""
    if elem == "float":
        return float_field(data, *words)
    if elem == "bool":
        return bool_field(data)
    return int_field(data)


JSON_NONFINITE = (b'"nan"', b'"inf"', b'"-inf"')


def json_entries(kind: str, elem: str, data: np.ndarray, ids: np.ndarray | None = None,
                 ends: tuple[np.ndarray, np.ndarray] | None = None, depth: int = 0,
                 writer: Callable | None = None) -> bytes:
    """The entries of a vertex value over vertices `ids` or an edge value over edges `ends` (u, v),
    as `json.dumps(document, indent=1)` writes them where the value is nested `depth` levels deep:
    joined by ",\\n", no newline before the first or after the last (b"" when none is listed).
    Vertex sets and edge sets (`elem` "bool") list their members only.  `writer`: see `Rows`."""
    pad1, pad2 = b" " * (depth + 1), b" " * (depth + 2)
    if elem == "bool":
        sel = np.flatnonzero(data)
        if kind == "vertex":
            assert ids is not None
            rows = Rows(sel.size, writer).const(pad1).ints(ids[sel])
        else:
            assert ends is not None
            rows = (Rows(sel.size, writer).const(pad1 + b"[\n" + pad2).ints(ends[0][sel])
                    .const(b",\n" + pad2).ints(ends[1][sel]).const(b"\n" + pad1 + b"]"))
    elif kind == "vertex":
        assert ids is not None
        rows = (Rows(data.size, writer).const(pad1 + b'"').ints(ids).const(b'": ')
                .value(elem, data, JSON_NONFINITE))
    else:
        assert ends is not None
        rows = (Rows(data.size, writer).const(pad1 + b"[\n" + pad2).ints(ends[0]).const(b",\n" + pad2)
                .ints(ends[1]).const(b",\n" + pad2).value(elem, data, JSON_NONFINITE)
                .const(b"\n" + pad1 + b"]"))
    return rows.const(b",\n").text(drop=2)
