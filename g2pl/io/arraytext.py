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
"""

from __future__ import annotations

import sys

import numpy as np

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


class Rows:
    """Rows of text built column by column over a chunk of `n` rows; `text()` is their bytes."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._cols: list[bytes | Field] = []

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

    def text(self) -> bytes:
        """Every row's text, in row order.  Each row is laid out in a (n, width) byte matrix: the
        constants in a template row copied to every row at once, each field at an 8-byte boundary,
        written a word per row; the matrix's bytes without its NULs (one C loop) are the text."""
        n = self.n
        if n == 0:
            return b""
        template = bytearray()
        places = []
        for c in self._cols:
            if isinstance(c, bytes):
                template += c
            else:
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
        return chars.tobytes().translate(None, b"\0")


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
                 ends: tuple[np.ndarray, np.ndarray] | None = None, depth: int = 0) -> bytes:
    """The entries of a vertex value over vertices `ids` or an edge value over edges `ends` (u, v),
    as `json.dumps(document, indent=1)` writes them where the value is nested `depth` levels deep:
    joined by ",\\n", no newline before the first or after the last (b"" when none is listed).
    Vertex sets and edge sets (`elem` "bool") list their members only."""
    pad1, pad2 = b" " * (depth + 1), b" " * (depth + 2)
    if elem == "bool":
        sel = np.flatnonzero(data)
        if kind == "vertex":
            assert ids is not None
            rows = Rows(sel.size).const(pad1).field(int_field(ids[sel]))
        else:
            assert ends is not None
            rows = (Rows(sel.size).const(pad1 + b"[\n" + pad2).field(int_field(ends[0][sel]))
                    .const(b",\n" + pad2).field(int_field(ends[1][sel])).const(b"\n" + pad1 + b"]"))
    elif kind == "vertex":
        assert ids is not None
        rows = (Rows(data.size).const(pad1 + b'"').field(int_field(ids)).const(b'": ')
                .field(value_field(elem, data, JSON_NONFINITE)))
    else:
        assert ends is not None
        rows = (Rows(data.size).const(pad1 + b"[\n" + pad2).field(int_field(ends[0])).const(b",\n" + pad2)
                .field(int_field(ends[1])).const(b",\n" + pad2).field(value_field(elem, data, JSON_NONFINITE))
                .const(b"\n" + pad1 + b"]"))
    return rows.const(b",\n").text()[:-2]
