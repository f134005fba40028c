"""Matrix Market files read by byte ranges (g2pl/graph/loaders.py `mtx_share`): on any number of ranks
the parts are array for array those `partition.partition` cuts from `load_mtx`'s graph, every rank
raises the error `load_mtx` raises on one process (message, file, line), and no rank reads the whole
file."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from test_ingest import assert_same_parts
from thread_comm import run_ranks

from g2pl.errors import G2PLError
from g2pl.graph import loaders, textblocks
from g2pl.graph.loaders import ReadOptions, edge_list_share, load_edge_list, load_mtx, mtx_share
from g2pl.runtime import ingest

# the ranks are threads, which share the warning filters: one rank leaving `catch_warnings` lets
# another's (ignored) "loadtxt: input contained no data" through
pytestmark = pytest.mark.filterwarnings("ignore:loadtxt. input contained no data")

SIZES = (1, 2, 3, 4)
COUNTS = ("input_edges", "self_loops_dropped", "duplicates_merged", "isolated_vertices")
BANNER = "%%MatrixMarket matrix coordinate {} {}\n"


def random_mtx(seed: int, fld: str, sym: str) -> str:
    """A valid file: comment and blank lines anywhere, self-loops, duplicates, rows and columns no entry
    touches (isolated vertices), entries of one triangle when symmetric."""
    rng = np.random.default_rng(seed)
    nrows, ncols = int(rng.integers(20, 60)), int(rng.integers(20, 60))
    if sym == "symmetric":
        ncols = nrows
    used = max(2, min(nrows, ncols) - 5)
    lines = [BANNER.format(fld, sym).rstrip("\n"), "% a comment", "%", ""]
    entries = []
    for _ in range(int(rng.integers(40, 200))):
        i, j = (int(x) for x in rng.integers(1, used + 1, 2))
        if sym == "symmetric" and i < j:
            i, j = j, i
        if rng.random() < 0.08:
            j = i  # a self-loop
        entry = f"{i} {j}"
        if fld == "real":
            entry += f" {rng.random() * 10:.4g}"
        elif fld == "integer":
            entry += f" {rng.integers(0, 9)}"
        entries.append(entry)
        if rng.random() < 0.1:
            entries.append(entry)  # a duplicate
    lines.append(f"{nrows} {ncols} {len(entries)}")
    for entry in entries:
        lines.append(entry)
        if rng.random() < 0.05:
            lines.append("% between entries")
        if rng.random() < 0.05:
            lines.append("")
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, content: str | bytes, name: str = "g.mtx") -> str:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return str(path)


def loaded(path: str, size: int, directed: bool, renumber: str | None = None, base: int = 1
           ) -> list[ingest.DistributedGraph]:
    """The parts `ingest.load` builds on `size` ranks (the Matrix Market branch)."""
    read = ReadOptions(mtx_base=base)
    got = run_ranks(size, lambda c: ingest.load(c, path, directed=directed, renumber=renumber, read=read))
    for g in got:
        assert not isinstance(g, BaseException), g
    return got


@pytest.mark.parametrize("fld", ["pattern", "real", "integer"])
@pytest.mark.parametrize("sym", ["general", "symmetric"])
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("base", [1, 0])
def test_parts_equal_the_partition_of_load_mtx(tmp_path, fld, sym, directed, base):
    for seed in range(3):
        path = write(tmp_path, random_mtx(seed * 7 + base, fld, sym))
        graph = load_mtx(path, directed, base=base)
        assert graph.info["isolated_vertices"] > 0
        for size in SIZES:
            for renumber in (None, "degree"):
                dgs = loaded(path, size, directed, renumber, base)
                for dg in dgs:
                    assert all(dg.info[k] == graph.info[k] for k in
                               ("format", "field", "symmetry", "shape", "entries", "base"))
                assert_same_parts(graph, size, renumber, False, dgs)


@pytest.mark.parametrize("base", [1, 0])
def test_shares_split_the_ids_and_entries(tmp_path, base):
    path = write(tmp_path, random_mtx(11, "real", "symmetric"))
    graph = load_mtx(path, True, base=base)
    nv = max(graph.info["shape"])
    for size in SIZES:
        shares = run_ranks(size, lambda c: mtx_share(path, True, c.rank, c.size, c, base=base))
        assert np.array_equal(np.concatenate([s.extra for s in shares]), np.arange(base, nv + base))
        assert sum(len(s.src) for s in shares) == graph.info["input_edges"]
        assert {s.id_bound for s in shares} == {nv if base == 0 else None}
        assert all(s.weight is not None and s.weight.dtype == np.float64 for s in shares)


def test_tiny_files_leave_some_ranges_empty(tmp_path):
    """A few lines on up to 7 ranks: some byte ranges and some vertex blocks are empty (an empty block's
    first ID is the next block's, as `partition` cuts it)."""
    cases = [BANNER.format("pattern", "general") + "8 3 1\n1 2\n",
             BANNER.format("real", "general") + "8 7 0\n",
             BANNER.format("pattern", "symmetric") + "% c\n8 8 2\n2 1\n\n3 3",  # no final line end
             BANNER.format("integer", "general") + "1 9 1\n1 1 4\n"]
    for k, text in enumerate(cases):
        path = write(tmp_path, text, f"t{k}.mtx")
        for directed in (False, True):
            graph = load_mtx(path, directed)
            for size in (*SIZES, 7):
                assert_same_parts(graph, size, None, False, loaded(path, size, directed))


def test_line_ends_bom_and_a_long_comment_block(tmp_path):
    """CRLF and lone CR line ends, a BOM, and a size line after more comment lines than the first
    prefix read for the header holds."""
    text = random_mtx(5, "real", "general")
    head, rest = text.split("\n", 1)
    long = head + "\n" + "% a long comment block\n" * 6000 + rest
    for k, data in enumerate([text.replace("\n", "\r\n").encode(), b"\xef\xbb\xbf" + text.encode(),
                              text.replace("\n", "\r").encode(), text.encode().replace(b"\n", b"\r", 9),
                              long.encode()]):
        path = write(tmp_path, data, f"e{k}.mtx")
        graph = load_mtx(path, True)
        for size in SIZES:
            assert_same_parts(graph, size, None, False, loaded(path, size, True))


# ---------------------------------------------------------------------------- errors


def assert_same_error(path: str, sizes=(*SIZES, 7), directed: bool = False, base: int = 1) -> str:
    """Every rank, on each number of ranks, raises the G2PLError `load_mtx` raises (message, file, line)."""
    with pytest.raises(G2PLError) as one:
        load_mtx(path, directed, base=base)
    want = (str(one.value), one.value.file, one.value.line)
    for size in sizes:
        got = run_ranks(size, lambda c: mtx_share(path, directed, c.rank, c.size, c, base=base))
        for e in got:
            assert isinstance(e, G2PLError), (size, e)
            assert (str(e), e.file, e.line) == want, size
    return want[0]


HEAD = BANNER.format("real", "general")

SMALL_ERRORS = {
    "empty": "",
    "blank": "\n\n",
    "banner": "%%MatrixMarket matrix coordinate real\n1 1 0\n",
    "not-mtx": "1 2\n2 3\n",
    "array": "%%MatrixMarket matrix array real general\n1 1\n1\n",
    "complex": "%%MatrixMarket matrix coordinate complex general\n1 1 0\n",
    "hermitian": "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n",
    "vector": "%%MatrixMarket vector coordinate real general\n1 1 0\n",
    "no-size": HEAD + "% c\n",
    "no-size-no-eol": HEAD.rstrip("\n"),
    "size-two": HEAD + "3 3\n",
    "size-word": HEAD + "3 x 3\n1 2 1\n",
    "size-negative": HEAD + "3 -3 1\n1 2 1\n",
    "zero": HEAD + "0 0 0\n",
    "int64": HEAD + "99999999999999999999 3 1\n1 2 1\n",
    "dimension": HEAD + f"{2**62} 3 1\n1 2 1\n",
    "too-few": HEAD + "3 3 2\n1 2 1\n",
    "none-follow": HEAD + "3 3 2\n% only comments\n\n",
    "too-many": HEAD + "3 3 1\n1 2 1\n2 3 1\n",
    "zero-declared": HEAD + "3 3 0\n% c\nx y z\n",
    "row": HEAD + "3 3 2\n1 2 1\n4 1 1\n",
    "column": "%%MatrixMarket matrix coordinate real general\n3 2 1\n1 3 1\n",
    "zero-index": HEAD + "3 3 1\n0 1 1\n",
    "columns-3": HEAD + "3 3 2\n1 2 1\n2 3\n",
    "columns-2": BANNER.format("pattern", "general") + "3 3 1\n1 2 5\n",
    "weight-word": HEAD + "3 3 1\n1 2 abc\n",
    "weight-negative": HEAD + "3 3 1\n1 2 -5\n",
    "weight-nan": HEAD + "3 3 1\n1 2 nan\n",
    "first-word": BANNER.format("pattern", "general") + "3 3 1\nrow col\n",
    "bytes": HEAD + "3 3 4\n1 2 1\n",
    "crlf-row": (HEAD + "3 3 2\n1 2 1\n9 1 1\n").replace("\n", "\r\n"),
    "bom-banner": "\ufeff%%MatrixMarket matrix coordinate real\n1 1 0\n",
}


@pytest.mark.parametrize("name", sorted(SMALL_ERRORS))
def test_small_file_errors_are_load_mtx_s(tmp_path, name):
    assert_same_error(write(tmp_path, SMALL_ERRORS[name]))


def test_binary_and_non_utf8_files(tmp_path):
    assert_same_error(write(tmp_path, b"%%MatrixMarket\x00\xff\xfe", "b.mtx"))
    assert_same_error(write(tmp_path, HEAD.encode() + b"2 2 1\n\xff\n", "u.mtx"))


def big(n: int = 1500, fld: str = "real") -> list[str]:
    """The lines of a valid general file with n entries (bad lines are put in by the tests)."""
    lines = [BANNER.format(fld, "general").rstrip("\n"), "% comment", f"90 80 {n}"]
    for k in range(n):
        lines.append(f"{k % 90 + 1} {k % 80 + 1}" + (f" {k % 7}.5" if fld != "pattern" else ""))
    return lines


BAD_LINES = ["91 1 1", "1 81 1", "0 1 1", "1 2", "1 2 3 4", "1 2 -1", "1 2 inf", "1 2 x", "1.5 2 1", "1,2,3"]


@pytest.mark.parametrize("bad", BAD_LINES)
@pytest.mark.parametrize("at", [0.02, 0.3, 0.55, 0.97])
def test_a_bad_entry_anywhere_is_named_by_every_rank(tmp_path, bad, at):
    lines = big()
    lines[3 + int(at * 1500)] = bad
    assert_same_error(write(tmp_path, "\n".join(lines) + "\n"))


@pytest.mark.parametrize("extra", [1, 40, 900])
def test_more_entries_than_declared(tmp_path, extra):
    """The entry beyond the declared count is found from the ranks' counts, wherever it falls."""
    lines = big(1500)
    lines[2] = f"90 80 {1500 - extra}"
    assert_same_error(write(tmp_path, "\n".join(lines) + "\n"))
    lines += ["% c", "1 x 1"]  # a bad line after the excess entry: the excess first
    assert "more entries than the" in assert_same_error(write(tmp_path, "\n".join(lines) + "\n", "x.mtx"))
    lines[100] = "1 2 3 4"  # a bad line before it: the bad line first
    assert "expected 3 columns" in assert_same_error(write(tmp_path, "\n".join(lines) + "\n", "y.mtx"))


def test_a_bad_line_just_after_the_declared_entries_is_named_as_bad(tmp_path):
    lines = big(600)
    lines[2] = "90 80 300"
    lines[3 + 300] = "1 2 q"
    assert "bad value 'q'" in assert_same_error(write(tmp_path, "\n".join(lines) + "\n"))


def test_fewer_entries_than_declared(tmp_path):
    lines = big(1500)
    lines[2] = "90 80 1600"
    lines += ["% trailing", ""] * 50
    assert "declares 1600 entries but the file has only 1500" in assert_same_error(
        write(tmp_path, "\n".join(lines) + "\n"))


def test_late_text_errors(tmp_path):
    """A NUL byte anywhere is named before a UTF-8 error earlier in the file, as the whole-file check does."""
    data = ("\n".join(big()) + "\n").encode()
    late = len(data) * 9 // 10
    nul = data[:late] + b"\0" + data[late + 1:]
    assert_same_error(write(tmp_path, nul, "n.mtx"))
    utf = data[:late] + b"\xff" + data[late + 1:]
    assert_same_error(write(tmp_path, utf, "u.mtx"))
    both = utf[:100] + b"\xff" + nul[101:]
    assert "NUL" in assert_same_error(write(tmp_path, both, "b.mtx"))


def test_errors_in_crlf_and_lone_cr_files(tmp_path):
    lines = big()
    lines[900] = "1 99 1"
    text = "\n".join(lines) + "\n"
    assert_same_error(write(tmp_path, text.replace("\n", "\r\n"), "crlf.mtx"))
    assert_same_error(write(tmp_path, text.replace("\n", "\r"), "cr.mtx"))
    mixed = text.replace("\n", "\r\n").encode()
    mixed = mixed.replace(b"\r\n", b"\r", 5)  # lone CRs in the head only
    assert_same_error(write(tmp_path, mixed, "mixed.mtx"))
    late = text.replace("\n", "\r\n").encode()
    cut = len(late) - 200
    late = late[:cut] + late[cut:].replace(b"\r\n", b"\r", 1)  # one lone CR near the end
    assert_same_error(write(tmp_path, late, "late.mtx"))


def test_size_line_after_a_long_comment_block(tmp_path):
    lines = big(300)
    lines[1:1] = ["% " + "c" * 60] * 3000
    lines[-5] = "1 2 -3"
    assert_same_error(write(tmp_path, "\n".join(lines) + "\n"))
    assert_same_error(write(tmp_path, "\n".join(lines[:3001]) + "\n", "nosize.mtx"))


@pytest.mark.parametrize("bad", ["91 1 1", "1 2", "more", "more, then 1 2"])
def test_errors_with_small_blocks(tmp_path, monkeypatch, bad):
    """Blocks of a few hundred bytes and small slow-tier pieces: rows counted and lines found across
    the blocks of a range."""
    monkeypatch.setattr(textblocks, "BLOCK_BYTES", 300)
    monkeypatch.setattr(loaders, "_LEAF_BYTES", 64)
    monkeypatch.setattr(loaders, "_FANOUT", 3)
    lines = big(1500)
    if bad.startswith("more"):
        lines[2] = "90 80 1100"
        if bad != "more":
            lines[1400] = bad.split(", then ")[1]
    else:
        lines[1000] = bad
    path = write(tmp_path, "\n".join(lines) + "\n")
    assert_same_error(path, sizes=(2, 3, 4))
    lines[2] = "90 80 1500"
    lines[1000] = lines[1400] = "1 1 1"
    path = write(tmp_path, "\n".join(lines) + "\n", "ok.mtx")
    assert_same_parts(load_mtx(path, True), 3, None, False, loaded(path, 3, True))


def test_bad_base_and_missing_file(tmp_path):
    path = write(tmp_path, BANNER.format("pattern", "general") + "2 2 1\n1 2\n")
    assert_same_error(path, base=2)
    assert_same_error(str(tmp_path / "missing.mtx"))


# ---------------------------------------------------------------------------- no rank reads the whole file


def test_no_rank_reads_the_whole_file(tmp_path, monkeypatch):
    lines = big(240000)
    path = write(tmp_path, "\n".join(lines) + "\n")
    file_size = Path(path).stat().st_size
    graph = load_mtx(path, True)

    def whole(*_a, **_k):
        raise AssertionError("the whole file was read")

    read: dict[int, int] = {}
    opened = loaders.open_graph_file

    class Counted:
        def __init__(self, f) -> None:
            self.f = f

        def read(self, n: int = -1) -> bytes:
            got = self.f.read(n)
            key = threading.get_ident()
            read[key] = read.get(key, 0) + len(got)
            return got

        def __getattr__(self, name: str):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.f.close()

    monkeypatch.setattr(loaders, "load_mtx", whole)
    monkeypatch.setattr(loaders, "_read_bytes", whole)
    monkeypatch.setattr(loaders, "open_graph_file", lambda p, *a: Counted(opened(p, *a)))
    assert_same_parts(graph, 4, None, False, loaded(path, 4, True))
    assert len(read) == 4 and max(read.values()) < file_size // 2, (file_size, read)


# ---------------------------------------------------------------------------- byte ranges of edge lists


def test_edge_list_text_errors_late_in_the_file(tmp_path):
    """A text check's error on a later rank's range is numbered as the file's line on every rank."""
    data = "".join(f"{i} {i + 1}\n" for i in range(20000)).encode()
    at = len(data) * 3 // 4
    path = write(tmp_path, data[:at] + b"\0" + data[at + 1:], "n.txt")
    with pytest.raises(G2PLError) as want:
        load_edge_list(path)
    assert edge_list_errors(path, 3) == {(str(want.value), want.value.line)}


def edge_list_errors(path: str, size: int) -> set[tuple[str, int | None]]:
    got = run_ranks(size, lambda c: edge_list_share(path, False, c.rank, c.size, c))
    assert all(isinstance(e, G2PLError) for e in got), got
    return {(str(e), e.line) for e in got}


def test_edge_list_bad_first_line_of_a_range_is_not_called_a_header(tmp_path):
    """Only the file's first data line gets the header hint, not the first line of a rank's range."""
    for k in range(140, 170):  # one of them starts rank 1's range
        lines = [f"{i} {i + 1}" for i in range(300)]
        lines[k] = "x 1"
        path = write(tmp_path, "\n".join(lines) + "\n", "e.txt")
        with pytest.raises(G2PLError) as want:
            load_edge_list(path)
        assert edge_list_errors(path, 2) == {(str(want.value), want.value.line)}, k
