"""g2pl.io.textrows.parse_rows, the compiled pass over edge-list text: on what it accepts it gives
NumPy's `loadtxt` rows exactly; everything else it declines (-1), and the loaders then read the
block as before, so files read the same, errors included, with and without it."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pytest

from g2pl.errors import G2PLError
from g2pl.graph import loaders
from g2pl.io import compiled, textrows
from g2pl.runtime import cpu_kernels


def _parse(fn, text: bytes, ncols: int, comma: bool, at: int = 0):
    buf = np.frombuffer(text, np.uint8)
    size = at + len(text) + 1
    u, v, w = np.full(size, -7, np.int64), np.full(size, -7, np.int64), np.full(size, -7.0)
    k = fn(buf, 0, len(buf), ncols, comma, u, v, w, at, textrows.POWERS)
    return k, u[at:at + max(k, 0)], v[at:at + max(k, 0)], w[at:at + max(k, 0)]


def _loadtxt(text: bytes, ncols: int, comma: bool):
    dtype = np.int64 if ncols <= 2 else np.dtype([("u", np.int64), ("v", np.int64), ("w", np.float64)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arr = np.loadtxt(io.BytesIO(text.replace(b"%", b"#")), dtype=dtype, comments="#",
                         delimiter="," if comma else None, ndmin=2 if ncols <= 2 else 1, encoding="utf-8",
                         quotechar=None)
    if ncols == 3:
        return arr["u"], arr["v"], arr["w"]
    return arr[:, 0], (arr[:, 1] if ncols == 2 else None), None


def _weight(rng: np.random.Generator) -> str:
    """A decimal of at most 15 significant digits, in one of the forms parse_rows reads."""
    digits = int(rng.integers(1, 16))
    mant = str(int(rng.integers(0, 10**digits)))
    point = int(rng.integers(0, len(mant) + 1))
    form = int(rng.integers(0, 5))
    if form == 0:
        text = mant
    elif form == 1:
        text = mant[:point] + "." + mant[point:]
    elif form == 2:
        text = "." + mant
    elif form == 3:
        text = mant + "."
    else:
        text = mant[:point] + "." + mant[point:] + rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + str(
            int(rng.integers(0, 8)))
    return "0" * int(rng.integers(0, 3)) + text if text[0] != "." else text


def _text(rng: np.random.Generator, ncols: int, comma: bool, rows: int) -> bytes:
    """Valid lines of every form parse_rows reads: blanks around tokens (not in comma mode), comments
    alone and after rows (# and %), blank lines, \\r\\n endings, leading zeros, no final newline."""
    lines = []
    for _ in range(rows):
        toks = [("0" * int(rng.integers(0, 2))) + str(int(rng.integers(0, 10 ** int(rng.integers(1, 18)))))
                for _ in range(min(ncols, 2))]
        if ncols == 3:
            toks.append(_weight(rng))
        if comma:
            line = ",".join(toks)
        else:
            seps = [rng.choice([" ", "\t", "  ", " \t "]) for _ in toks]
            line = rng.choice(["", " ", "\t"]) + "".join(s + t for s, t in zip(["", *seps[1:]], toks, strict=True))
            line += rng.choice(["", " ", "\t "])
        if rng.random() < 0.1:
            line += rng.choice(["#", "%"]) + " a comment, 1 2 3"
        lines.append(line)
        r = rng.random()
        if r < 0.05:
            lines.append(rng.choice(["# comment", "% comment", ""] + ([] if comma else ["   ", "\t"])))
    end = [rng.choice(["\n", "\r\n"]) for _ in lines]
    text = "".join(a + b for a, b in zip(lines, end, strict=True))
    if rng.random() < 0.3:
        text = text.rstrip("\r\n")
    return text.encode()


@pytest.mark.parametrize("seed", range(12))
def test_parse_rows_reads_what_loadtxt_reads(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ncols, comma = (1, 2, 3)[seed % 3], seed % 2 == 1
    text = _text(rng, ncols, comma, 300)
    k, u, v, w = _parse(textrows.parse_rows, text, ncols, comma, at=int(rng.integers(0, 5)))
    wu, wv, ww = _loadtxt(text, ncols, comma)
    assert k == wu.size
    assert np.array_equal(u, wu)
    if ncols >= 2:
        assert np.array_equal(v, wv)
    if ncols == 3:
        assert np.array_equal(w.view(np.int64), ww.view(np.int64))  # the same bits: correctly rounded


@pytest.mark.parametrize("text, ncols, comma", [
    (b"1 -2\n", 2, False), (b"+1 2\n", 2, False), (b"1 2 3\n", 2, False), (b"1\n", 2, False),
    (b"1 2\r3 4\n", 2, False), (b"1 2\r", 2, False), (b"1 2 inf\n", 3, False), (b"1 2 nan\n", 3, False),
    (b"1 2 -0.5\n", 3, False), (b"1 2 +0.5\n", 3, False), (b"1 2 1.2345678901234567\n", 3, False),
    (b"1 2 1e23\n", 3, False), (b"1 2 1e-23\n", 3, False), (b"1 2 1e\n", 3, False), (b"1 2 .\n", 3, False),
    (b"1 2 0x10\n", 3, False), (b"1 2 1_0\n", 3, False), (b"1 2 1e12345\n", 3, False),
    (b"1234567890123456789 2\n", 2, False), (b"1 2\x0b\n", 2, False), (b"1 2,\n", 2, False),
    (b"1,2\n", 2, False), (b"1 2\n", 2, True), (b"1, 2\n", 2, True), (b"1,2 \n", 2, True), (b"1,,2\n", 2, True),
    (b" 1,2\n", 2, True), (b"1,2,\n", 2, True), (b"1.0 2\n", 2, False), (b"a b\n", 2, False),
    (b"1 2\n\xff\n", 2, False), (b"1 2\n3\n", 2, False),
])
def test_parse_rows_declines_what_it_does_not_read(text: bytes, ncols: int, comma: bool) -> None:
    assert _parse(textrows.parse_rows, text, ncols, comma)[0] == -1


def test_parse_rows_never_writes_past_its_arrays() -> None:
    buf = np.frombuffer(b"1 2\n3 4\n5 6\n", np.uint8)
    u, v = np.zeros(2, np.int64), np.zeros(2, np.int64)
    assert textrows.parse_rows(buf, 0, len(buf), 2, False, u, v, np.zeros(0), 0, textrows.POWERS) == -1


def test_the_compiled_parser_is_the_plain_one(monkeypatch) -> None:
    monkeypatch.setenv("G2PL_NUMBA", "1")
    fast = cpu_kernels.kernel(textrows.parse_rows, 1)
    if fast is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(99)
    for ncols in (1, 2, 3):
        for comma in (False, True):
            text = _text(rng, ncols, comma, 2000)
            got, want = _parse(fast, text, ncols, comma, 3), _parse(textrows.parse_rows, text, ncols, comma, 3)
            assert got[0] == want[0] > 0
            for a, b in zip(got[1:], want[1:], strict=True):
                assert np.array_equal(a.view(np.int64), b.view(np.int64))
    for text in (b"1 -2\n", b"1 2 1.2345678901234567\n", b"1 2\r3 4\n"):
        assert _parse(fast, text, 3 if b"." in text else 2, False)[0] == -1


def _files(tmp_path: Path) -> dict[str, bytes]:
    rng = np.random.default_rng(5)
    good = _text(rng, 3, False, 30_000)
    return {
        "good.el": good,
        "good_csv.csv": _text(rng, 2, True, 30_000),
        # a block NumPy reads but the compiled pass declines (17 significant digits), then good blocks
        "long_weights.el": b"1 2 0.12345678901234567\n" * 5000 + good,
        # a bad line well past the first block
        "bad_late.el": good + b"7 8 0.5\n9 x 1\n",
        "negative_weight.el": good + b"7 8 -0.5\n",
        "too_large_id.el": good + b"7 4611686018427387904 0.5\n",
    }


def _read(path: Path, numba: str, monkeypatch, blocks: int):
    monkeypatch.setenv("G2PL_NUMBA", numba)
    monkeypatch.setattr("g2pl.graph.textblocks.BLOCK_BYTES", blocks)
    try:
        return loaders.read_edge_rows(str(path))
    except G2PLError as e:
        return str(e)


def test_files_read_the_same_with_and_without_the_compiled_pass(tmp_path: Path, monkeypatch) -> None:
    if not cpu_kernels.available():
        pytest.skip("numba is not installed")
    calls = []
    real = cpu_kernels.kernel

    def counting(fn, work: int):
        got = real(fn, work)
        return None if got is None else (lambda *a: calls.append(1) or got(*a))

    monkeypatch.setattr(compiled, "kernel", counting)
    for name, text in _files(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(text)
        without = _read(path, "0", monkeypatch, 1 << 16)
        calls.clear()
        with_ = _read(path, "1", monkeypatch, 1 << 16)
        assert calls, name  # (the compiled pass ran)
        if isinstance(without, str):
            assert with_ == without, name
            assert name.startswith(("bad", "negative", "too_large")), without
        else:
            assert not isinstance(with_, str), with_
            for a, b in zip(with_[:3], without[:3], strict=True):
                assert (a is None and b is None) or np.array_equal(np.asarray(a).view(np.int64),
                                                                   np.asarray(b).view(np.int64)), name


_EDITS = ["-", "+", ".", "e", "E", "e-", "#", "%", ",", " ", "\t", "\r", "\n", "\r\n", "0", "9", "00", "inf",
          "nan", "1e99", "\x00", "\x0b", "é", "12345678901234567890", ".5", "5.", "0.1234567890123456"]


def _mutated(rng: np.random.Generator, base: str) -> bytes:
    """`base` with 1 to 4 random edits: a character or token from _EDITS inserted, replaced or deleted."""
    text = base
    for _ in range(int(rng.integers(1, 5))):
        i = int(rng.integers(0, len(text) + 1))
        op = int(rng.integers(0, 3))
        piece = _EDITS[int(rng.integers(0, len(_EDITS)))]
        if op == 0:
            text = text[:i] + piece + text[i:]
        elif op == 1:
            text = text[:i] + piece + text[i + len(piece):]
        else:
            text = text[:i] + text[i + int(rng.integers(1, 4)):]
    return text.encode("utf-8")


@pytest.mark.parametrize("comma", [False, True])
def test_mutated_files_read_the_same_with_and_without_the_compiled_pass(tmp_path: Path, monkeypatch, comma) -> None:
    """Random edits of a good file: with and without the compiled pass, the same rows or the same error."""
    if not cpu_kernels.available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(21 + comma)
    sep = "," if comma else " "
    base = "".join(f"{a}{sep}{b}{sep}{w}\n" for a, b, w in
                   [(1, 2, "0.5"), (2, 30, "1.25e-3"), (30, 4, ".75"), (4, 5, "12")]) + "# c\n6" + sep + "7" + sep + "8\r\n"
    path = tmp_path / ("g.csv" if comma else "g.el")
    for _ in range(150):
        path.write_bytes(_mutated(rng, base))
        without = _read(path, "0", monkeypatch, 1 << 22)
        with_ = _read(path, "1", monkeypatch, 1 << 22)
        if isinstance(without, str) or isinstance(with_, str):
            assert with_ == without, path.read_bytes()
            continue
        for a, b in zip(with_, without, strict=True):
            if isinstance(a, np.ndarray):
                assert np.array_equal(a.view(np.int64), b.view(np.int64)), path.read_bytes()
            else:
                assert a == b
