"""The block-wise edge-list reader (g2pl/graph/textblocks.py, loaders._load_rows).

Random edge lists with comments, weights, CRLF, tabs, blank and whitespace-only
lines are parsed with tiny blocks (many cuts, a fast-tier failure in some blocks)
and compared row by row with a straightforward Python reference parser; every
injected bad line is reported at its own line number with the message a
single-block parse gives.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

from g2pl.errors import G2PLError
from g2pl.graph import loaders, textblocks
from g2pl.graph.textblocks import BlockSource, block_ends


def parse_rows(path: str):
    """What load_edge_list does before build_graph: the parsed (u, v, w) rows in file order."""
    return loaders.read_edge_rows(path)[:3]


def reference_rows(text: str):
    """Independent oracle: the documented rules, one line at a time."""
    us, vs, ws = [], [], []
    comma = None
    for raw in text.replace("\r\n", "\n").split("\n"):
        body = raw
        for c in "#%":
            body = body.split(c, 1)[0]
        if not body.strip():
            continue
        if comma is None:
            comma = "," in body
        toks = [t.strip() for t in body.split(",")] if comma else body.split()
        us.append(int(toks[0]))
        vs.append(int(toks[1]))
        if len(toks) == 3:
            ws.append(float(toks[2]))
    return np.array(us, dtype=np.int64), np.array(vs, dtype=np.int64), (np.array(ws) if ws else None)


def random_text(rng: random.Random, weighted: bool, comma: bool, crlf: bool, rows: int) -> tuple[str, list[str]]:
    """A valid edge list and its lines (without line ends)."""
    ids = [rng.choice([rng.randrange(10), rng.randrange(10**6), rng.randrange(10**15), 2**62 - 1 - rng.randrange(5)])
           for _ in range(40)]
    lines: list[str] = ["# header comment"] if rng.random() < 0.5 else []
    for _ in range(rows):
        r = rng.random()
        if r < 0.08:
            lines.append(rng.choice(["", "   ", "\t", "# comment", "% percent comment", "  # indented"]))
            continue
        toks = [str(rng.choice(ids)), str(rng.choice(ids))]
        if weighted:
            toks.append(rng.choice(["1", "0.5", "2e-3", ".25", "1.", "+3.5", "0", "1e300", "7.000001"]))
        if rng.random() < 0.1:
            toks[0] = "+" + toks[0]  # NumPy and the validator both read '+5' as 5
        sep = rng.choice([",", " ,", ", "]) if comma else rng.choice([" ", "\t", "  ", " \t "])
        line = sep.join(toks)
        if rng.random() < 0.1:
            line = "  " + line + "  "
        if rng.random() < 0.1:
            line += rng.choice([" # trailing", "% trailing", "#"])
        lines.append(line)
    end = "\r\n" if crlf else "\n"
    return end.join(lines) + (end if rng.random() < 0.7 else ""), lines


@pytest.fixture(params=[64, 300, 1 << 22], ids=["block64", "block300", "block4M"])
def block(request, monkeypatch):
    monkeypatch.setattr(textblocks, "BLOCK_BYTES", request.param)
    return request.param


@pytest.mark.parametrize("seed", range(12))
def test_random_edge_lists_match_reference(tmp_path: Path, block: int, seed: int) -> None:
    rng = random.Random(seed)
    weighted, comma, crlf = seed % 2 == 1, seed % 3 == 0, seed % 4 >= 2
    text, _ = random_text(rng, weighted, comma, crlf, rows=rng.randrange(1, 400))
    if not reference_rows(text)[0].size:
        text += "1 2 3\n" if weighted else "1 2\n"
    path = tmp_path / ("g.csv" if comma else "g.el")
    path.write_bytes(text.encode())
    got = parse_rows(str(path))
    want = reference_rows(text)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    if weighted:
        assert got[2] is not None and np.array_equal(got[2], want[2])
    else:
        assert got[2] is None


BAD_2 = ["1 2 3", "7", "-1 2", "1.5 2", "a b", "1 99999999999999999999999", "4611686018427387904 1", "1,2",
         "0x10 1", "1 2 nan"]
BAD_3 = ["1 2 nan", "1 2 -1", "1 2 inf", "1 2 1e999", "1 2 x", "1 2", "1 2 3 4", "-5 2 1", "1 2 1.2.3"]


@pytest.mark.parametrize("seed", range(10))
def test_bad_line_reported_where_it_is(tmp_path: Path, monkeypatch, seed: int) -> None:
    rng = random.Random(100 + seed)
    weighted, crlf = seed % 2 == 1, seed % 3 == 0
    text, lines = random_text(rng, weighted, False, crlf, rows=rng.randrange(20, 300))
    data_lines = [i for i, ln in enumerate(lines) if loaders._strip_comment(ln).strip()]
    at = rng.choice(data_lines[1:] or data_lines)  # keep the first data line, which sets the columns
    lines[at] = rng.choice(BAD_3 if weighted else BAD_2)
    end = "\r\n" if crlf else "\n"
    path = tmp_path / "g.el"
    path.write_bytes((end.join(lines) + end).encode())
    messages = set()
    for size in (32, 200, 1 << 22):
        monkeypatch.setattr(textblocks, "BLOCK_BYTES", size)
        with pytest.raises(G2PLError) as ei:
            loaders.load_edge_list(str(path))
        assert ei.value.line == at + 1, (size, lines[at], ei.value.message)
        assert ei.value.exit_status == 2
        messages.add(str(ei.value))
    assert len(messages) == 1, messages


def test_very_long_line_and_binary_junk(tmp_path: Path, block: int) -> None:
    long = "1 2\n3 4\n" + "5 " + "6" * 200_000 + "\n7 8\n"
    p = tmp_path / "long.el"
    p.write_text(long)
    with pytest.raises(G2PLError) as ei:
        loaders.load_edge_list(str(p))
    assert ei.value.line == 3 and "too large" in ei.value.message
    junk = tmp_path / "junk.el"
    junk.write_bytes(b"1 2\n3 4\n\xff\xfe 5\n")
    with pytest.raises(G2PLError) as ei:
        loaders.load_edge_list(str(junk))
    assert ei.value.line == 3 and "not UTF-8" in ei.value.message


def test_mtx_declared_count_checked_across_blocks(tmp_path: Path, block: int) -> None:
    body = "".join(f"{i % 9 + 1} {i % 7 + 1} {i}.5\n" for i in range(120))
    head = "%%MatrixMarket matrix coordinate real general\n% comment\n9 9 {}\n"
    ok = tmp_path / "ok.mtx"
    ok.write_text(head.format(120) + body)
    g = loaders.load_mtx(str(ok), directed=True)
    assert g.n == 9
    few = tmp_path / "few.mtx"
    few.write_text(head.format(100) + body)
    with pytest.raises(G2PLError) as ei:
        loaders.load_mtx(str(few))
    assert ei.value.line == 3 + 100 + 1 and "more entries than the 100" in ei.value.message


def test_block_ends_cut_after_line_ends() -> None:
    data = b"1 2\n" * 10 + b"9" * 50 + b"\n1 2\n"
    cuts = block_ends(data, 0, len(data), size=9)
    assert cuts[-1] == len(data) and cuts == sorted(set(cuts))
    prev = 0
    for c in cuts[:-1]:
        assert data[c - 1 : c] == b"\n"
        assert c - prev <= 9 or b"\n" not in data[prev : c - 1]  # only a single long line exceeds the size
        prev = c
    assert block_ends(b"1 2\n", 0, 4) == [4]


def test_block_source_without_memfd_gives_same_rows(tmp_path: Path, monkeypatch) -> None:
    text, _ = random_text(random.Random(5), True, False, False, rows=200)
    p = tmp_path / "g.el"
    p.write_text(text)
    monkeypatch.setattr(textblocks, "BLOCK_BYTES", 256)
    with_memfd = parse_rows(str(p))
    monkeypatch.delattr(os, "memfd_create", raising=False)
    with BlockSource() as src:
        assert not isinstance(src(b"1 2\n"), str)  # the BytesIO fallback
    without = parse_rows(str(p))
    for a, b in zip(with_memfd, without, strict=True):
        assert np.array_equal(a, b)


def test_block_source_when_proc_cannot_be_opened(tmp_path: Path, monkeypatch) -> None:
    import builtins

    real_open = builtins.open

    def no_proc(file, *a, **kw):
        if isinstance(file, str) and file.startswith("/proc/self/fd/"):
            raise PermissionError(13, "denied")
        return real_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", no_proc)
    with BlockSource() as src:
        assert not isinstance(src(b"1 2\n"), str)


def test_rows_fill_exactly_the_smallest_possible_file(tmp_path: Path, block: int) -> None:
    # the output arrays are sized by bytes/4: the densest files must still fit
    for text in ("1 2", "1 2\n", "1 2\n3 4", "1 2\n3 4\n" * 50 + "5 6", "\n\n\n1 2\n\n\n"):
        p = tmp_path / "d.el"
        p.write_text(text)
        assert np.array_equal(parse_rows(str(p))[0], reference_rows(text)[0])
