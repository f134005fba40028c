"""`g2pl run --output FILE` in every format (.json, .npz, .csv, .parquet) and `Result.save`.

Each format is read back with its own reader (json, numpy, csv, pyarrow where installed) and compared
with the API's arrays (`Result.array`, `ids`, `edge_ids`), on 1 and 2 ranks, for vertex and edge
values of every type (int with -1 for the unreached, float with nan and +-inf, bool, vid), scalars
and an empty graph.  The JSON is compared byte for byte with `json.dumps` of the values made the old
way (Python objects, `g2pl.runtime.output.convert`), also on random arrays; bad extensions and a
missing pyarrow are refused with exit status 2 before the run.

The tests of several ranks are skipped where mpi4py or mpiexec is missing (`pip install '.[mpi]'`).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_util import call, mpi_available

import g2pl
from g2pl.cli import g2pl_main
from g2pl.errors import G2PLError
from g2pl.io.arraytext import Rows, float_field, int_field
from g2pl.results.streamed import Share, local_shares, read_output_dir, write_output, write_output_dir
from g2pl.runtime import cpu_kernels
from g2pl.runtime.output import RankPart, convert

ROOT = Path(__file__).resolve().parents[2]
HAVE_MPI = mpi_available()
HAVE_PYARROW = importlib.util.find_spec("pyarrow") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
FORMATS = ["json", "npz", "csv", pytest.param("parquet", marks=pytest.mark.skipif(
    not HAVE_PYARROW, reason="pyarrow not installed (pip install '.[parquet]')"))]

#: vertex values of every type: int with -1 for all but the root, float with nan/inf/-inf and
#: fractions, a vertex set, vid with -1; scalars of each type (one of them inf)
VERTEX = """
vals(root: vid) {
  Lvl = { (id == root) ? 0 : -1 | v <- V };
  X = { (id % 4 == 0) ? 0 / 0 : ((id % 4 == 1) ? 1 / 0 : ((id % 4 == 2) ? -1 / 0 : id / 3)) | v <- V };
  S = { id % 2 == 0 | v <- V };
  P = { (id == root) ? id : -1 | v <- V };
  return Lvl, X, S, P, 2.5, 7, 1 / 0, root == 1;
}
"""

#: edge values of every type: float weights in thirds, int, an edge set, float with nan/inf/-inf
EDGE = """
evals() {
  W = { Weight[e] / 3 | (u, e, v) <- E };
  C = { id[u] + id[v] * 1000 | (u, e, v) <- E };
  M = { id[u] % 2 == 0 | (u, e, v) <- E };
  N = { (id[u] % 3 == 0) ? 0 / 0 : ((id[v] % 3 == 0) ? 1 / 0 : -1 / 0) | (u, e, v) <- E };
  return W, C, M, N, 42;
}
"""

#: both kinds at once: one CSV or Parquet table cannot hold them
MIXED = """
mixed() {
  D = { 1 | v <- V };
  M = { true | (u, e, v) <- E };
  return D, M;
}
"""

#: scattered IDs (large ones too), weights, an isolated pair; and a graph without edges (`er:5:0`)
GRAPH = "10 1000 2.5\n1000 7 1.0\n7 10 0.5\n3 7 1\n5 3 2\n123456789 42 0.25\n" + \
    "".join(f"{100 + i} {200 + 3 * i} {i / 8}\n" for i in range(40))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("output_formats")
    for name, text in (("vertex.g2pl", VERTEX), ("edge.g2pl", EDGE), ("mixed.g2pl", MIXED),
                       ("graph.txt", GRAPH)):
        (d / name).write_text(text)
    return {"vertex": d / "vertex.g2pl", "edge": d / "edge.g2pl", "mixed": d / "mixed.g2pl",
            "graph": d / "graph.txt", "empty": "er:5:0"}  # type: ignore[dict-item]


def _root(graph: str) -> int:
    return 1000 if graph == "graph" else 0


def _args(prog: str, graph: str = "graph") -> list[str]:
    return ["--arg", f"root={_root(graph)}"] if prog == "vertex" else []


def _api(files: dict[str, Path], prog: str, graph: str) -> g2pl.Result:
    args = {"root": _root(graph)} if prog == "vertex" else {}
    return g2pl.compile(files[prog]).run(g2pl.load_graph(str(files[graph])), args=args)


# ------------------------------------------------------------------------------------ readers


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


def check_json(path: Path, res: g2pl.Result) -> None:
    assert path.read_bytes() == json.dumps(res.output(), indent=1).encode()


def check_npz(path: Path, res: g2pl.Result) -> None:
    with np.load(path, allow_pickle=False) as z:
        index = json.loads(str(z["index"][()]))
        assert index["format"] == "g2pl-output-npz" and index["version"] == 1 and index["entry"] == res.entry
        assert [(v["name"], v["kind"], v["type"]) for v in index["values"]] == res.kinds()
        kinds = {k for _n, k, _t in res.kinds()}
        expected = {"index"} | {v["key"] for v in index["values"]} | ({"ids"} if "vertex" in kinds else set()) \
            | ({"u", "v"} if "edge" in kinds else set())
        assert set(z.keys()) == expected
        if "vertex" in kinds:
            _same(z["ids"], np.asarray(res.ids, dtype=np.int64))
        if "edge" in kinds:
            _same(z["u"], np.asarray(res.edge_ids[0], dtype=np.int64))
            _same(z["v"], np.asarray(res.edge_ids[1], dtype=np.int64))
        for v in index["values"]:
            assert v["key"] == f"values/{v['name']}"
            _same(z[v["key"]], np.asarray(res.array(v["name"])))


def _cell(text: str, elem: str) -> object:
    if elem == "bool":
        assert text in ("true", "false")
        return text == "true"
    if elem == "float":
        assert text == repr(float(text)) or text in ("nan", "inf", "-inf")  # repr: reads back the same
        return float(text)
    return int(text)


def _table(res: g2pl.Result) -> tuple[list[str], list[tuple[str, str, np.ndarray]]]:
    """The columns a CSV or Parquet file of `res` holds: names, and (name, type, array) per column."""
    kinds = [k for _n, k, _t in res.kinds() if k != "scalar"]
    kind = kinds[0] if kinds else "scalar"
    cols: list[tuple[str, str, np.ndarray]] = []
    if kind == "vertex":
        cols.append(("id", "int", np.asarray(res.ids, dtype=np.int64)))
    elif kind == "edge":
        cols += [("u", "int", np.asarray(res.edge_ids[0], dtype=np.int64)),
                 ("v", "int", np.asarray(res.edge_ids[1], dtype=np.int64))]
    cols += [(n, t, np.asarray(res.array(n))) for n, k, t in res.kinds() if k == kind]
    rows = len(cols[0][2]) if kind != "scalar" else 1
    cols += [(n, t, np.full(rows, res.array(n))) for n, k, t in res.kinds() if k == "scalar" != kind]
    return [c[0] for c in cols], cols


def check_csv(path: Path, res: g2pl.Result) -> None:
    names, cols = _table(res)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == names
    body = rows[1:]
    assert len(body) == (len(cols[0][2]) if cols else 0)
    for j, (_name, elem, want) in enumerate(cols):
        got = [_cell(r[j], elem) for r in body]
        for a, b in zip(got, want.tolist()):
            assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), (a, b)


def check_parquet(path: Path, res: g2pl.Result) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    names, cols = _table(res)
    assert table.column_names == names
    for name, _elem, want in cols:
        _same(table.column(name).to_numpy(), np.asarray(want, dtype=want.dtype))
    meta = json.loads(table.schema.metadata[b"g2pl"])
    assert meta["entry"] == res.entry and [(v["name"], v["kind"], v["type"]) for v in meta["values"]] == res.kinds()


CHECK = {"json": check_json, "npz": check_npz, "csv": check_csv, "parquet": check_parquet}


# ------------------------------------------------------------------------------------ one rank


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("prog", ["vertex", "edge"])
@pytest.mark.parametrize("graph", ["graph", "empty"])
def test_every_format_round_trips_on_one_rank(files, tmp_path: Path, capsys, fmt: str, prog: str,
                                              graph: str) -> None:
    """`--output FILE.EXT` read back equals the API's arrays; `Result.save` writes the same file."""
    out = tmp_path / f"out.{fmt}"
    rc, _, err = call(g2pl_main, ["run", files[prog], "--graph", files[graph], *_args(prog, graph), "--quiet",
                                  "--output", out], capsys)
    assert rc == 0, err
    res = _api(files, prog, graph)
    CHECK[fmt](out, res)
    saved = tmp_path / f"saved.{fmt}"
    res.save(saved)
    CHECK[fmt](saved, res)
    if fmt in ("json", "csv"):
        assert saved.read_bytes() == out.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, saved.name])  # no temporaries


def test_output_format_names_the_format_whatever_the_extension(files, tmp_path: Path, capsys) -> None:
    out = tmp_path / "result.bin"
    rc, _, err = call(g2pl_main, ["run", files["edge"], "--graph", files["graph"], "--quiet", "--output", out,
                                  "--output-format", "npz"], capsys)
    assert rc == 0, err
    check_npz(out, _api(files, "edge", "graph"))


def test_output_dir_in_every_format_on_one_rank(files, tmp_path: Path, capsys) -> None:
    """--output-dir parts in npz read back (read_output_dir) as the JSON document; csv parts are the
    CSV file (one rank: the whole table)."""
    res = _api(files, "vertex", "graph")
    for fmt in ("npz", "csv", "json"):
        d = tmp_path / "parts"
        rc, _, err = call(g2pl_main, ["run", files["vertex"], "--graph", files["graph"], *_args("vertex"),
                                      "--quiet", "--output-dir", d, "--output-format", fmt], capsys)
        assert rc == 0, err
        index = json.loads((d / "index.json").read_text())
        assert index["part_format"] == fmt and [p["file"] for p in index["parts"]] == [f"part-00000.{fmt}"]
        assert sorted(p.name for p in d.iterdir()) == ["index.json", f"part-00000.{fmt}"]  # old parts gone
        if fmt == "csv":
            check_csv(d / "part-00000.csv", res)
        else:
            assert json.dumps(read_output_dir(d), indent=1) == json.dumps(res.output(), indent=1)


# ------------------------------------------------------------------------------------ two ranks


def _env() -> dict[str, str]:
    e = os.environ.copy()
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([e["PYTHONPATH"]] if e.get("PYTHONPATH") else [])])
    for k in ("G2PL_FAIL_AT", "G2PL_KILL_AT"):
        e.pop(k, None)
    return e


@needs_mpi
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("prog", ["vertex", "edge"])
def test_every_format_round_trips_on_two_ranks(files, tmp_path: Path, fmt: str, prog: str) -> None:
    """--np 2: rank 0 writes the file from both ranks' chunks; the same bytes (JSON, CSV) or arrays as
    one rank, and --output-dir's parts in the same format."""
    out, d = tmp_path / f"out.{fmt}", tmp_path / "parts"
    cmd = [sys.executable, "-m", "g2pl.cli", "run", str(files[prog]), "--graph", str(files["graph"]),
           *_args(prog), "--np", "2", "--quiet", "--output", str(out), "--output-dir", str(d),
           "--output-format", fmt]
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = _api(files, prog, "graph")
    CHECK[fmt](out, res)
    index = json.loads((d / "index.json").read_text())
    assert [p["file"] for p in index["parts"]] == [f"part-00000.{fmt}", f"part-00001.{fmt}"]
    if fmt in ("json", "npz"):
        assert json.dumps(read_output_dir(d), indent=1) == json.dumps(res.output(), indent=1)


@needs_mpi
def test_empty_graph_on_two_ranks(files, tmp_path: Path) -> None:
    res = _api(files, "edge", "empty")
    for fmt in ("json", "npz", "csv"):
        out = tmp_path / f"out.{fmt}"
        cmd = [sys.executable, "-m", "g2pl.cli", "run", str(files["edge"]), "--graph", str(files["empty"]),
               "--np", "2", "--quiet", "--output", str(out)]
        r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        CHECK[fmt](out, res)


# ------------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("name", ["out.txt", "out.JSONL", "out.npy"])
def test_unknown_extension_is_refused_before_the_run(files, tmp_path: Path, capsys, name: str) -> None:
    out = tmp_path / name
    rc, _, err = call(g2pl_main, ["run", files["vertex"], "--graph", files["graph"], *_args("vertex"),
                                  "--output", out], capsys)
    assert rc == 2
    assert "the format is chosen by the extension: .json, .npz, .csv, .parquet" in err
    assert "Traceback" not in err and not out.exists() and list(tmp_path.iterdir()) == []


def test_a_name_without_an_extension_is_json(files, tmp_path: Path, capsys) -> None:
    """The contract's format, as for standard output (and devices such as /dev/stdout)."""
    out = tmp_path / "out"
    rc, _, err = call(g2pl_main, ["run", files["vertex"], "--graph", files["graph"], *_args("vertex"), "--quiet",
                                  "--output", out], capsys)
    assert rc == 0, err
    check_json(out, _api(files, "vertex", "graph"))


def test_upper_case_extension_is_accepted(files, tmp_path: Path, capsys) -> None:
    out = tmp_path / "OUT.NPZ"
    rc, _, err = call(g2pl_main, ["run", files["edge"], "--graph", files["graph"], "--quiet", "--output", out],
                      capsys)
    assert rc == 0, err
    check_npz(out, _api(files, "edge", "graph"))


def test_bad_format_choices_are_refused(files, tmp_path: Path, capsys) -> None:
    rc, _, err = call(g2pl_main, ["run", files["edge"], "--graph", files["graph"], "--output",
                                  tmp_path / "o.json", "--output-format", "xml"], capsys)
    assert rc == 2 and "--output-format" in err
    rc, _, err = call(g2pl_main, ["run", files["edge"], "--graph", files["graph"], "--output", "-",
                                  "--output-format", "npz"], capsys)
    assert rc == 2 and "standard output takes JSON only" in err


def test_missing_pyarrow_names_the_extra(files, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "o.parquet"
    rc, _, err = call(g2pl_main, ["run", files["edge"], "--graph", files["graph"], "--output", out], capsys)
    assert rc == 2 and "pip install 'g2pl[parquet]'" in err and "Traceback" not in err
    d = tmp_path / "parts"
    rc, _, err = call(g2pl_main, ["run", files["edge"], "--graph", files["graph"], "--output-dir", d,
                                  "--output-format", "parquet"], capsys)
    assert rc == 2 and "g2pl[parquet]" in err
    with pytest.raises(G2PLError, match=r"g2pl\[parquet\]"):
        _api(files, "edge", "graph").save(out)
    assert list(tmp_path.iterdir()) == []


def test_one_table_cannot_hold_vertex_and_edge_values(files, tmp_path: Path, capsys) -> None:
    out = tmp_path / "o.csv"
    rc, _, err = call(g2pl_main, ["run", files["mixed"], "--graph", files["graph"], "--output", out], capsys)
    assert rc == 2 and "both vertex and edge values (D (vertex), M (edge))" in err and ".npz" in err
    assert list(tmp_path.iterdir()) == []
    rc, _, err = call(g2pl_main, ["run", files["mixed"], "--graph", files["graph"], "--quiet", "--output",
                                  tmp_path / "o.npz"], capsys)
    assert rc == 0, err
    check_npz(tmp_path / "o.npz", _api(files, "mixed", "graph"))


def test_save_of_a_result_made_from_json(tmp_path: Path) -> None:
    res = g2pl.Result("p", [{"name": "x", "kind": "scalar", "type": "int", "value": 3}])
    res.save(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == res.output()
    with pytest.raises(G2PLError, match="saved as .json"):
        res.save(tmp_path / "r.npz")
    with pytest.raises(G2PLError, match=r"\.json, \.npz, \.csv, \.parquet \(or name it with format=\)"):
        res.save(tmp_path / "r.xml")


# ------------------------------------------------------------------------------------ the bulk JSON text


def _old_pieces(part: RankPart, depth: int, chunk: int) -> list[str]:
    """The JSON text of a share as the writer made it before it formatted arrays in bulk: json.dumps
    of each chunk's Python objects, re-indented (the oracle)."""
    pad, out = " " * depth, []
    for lo in range(0, len(part), chunk):
        value = part.shape(slice(lo, lo + chunk))
        if value:
            text = json.dumps(value, indent=1)
            out.append(pad + text[2:-2].replace("\n", "\n" + pad))
    return out


class _Graph:
    def __init__(self, ids: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        self.ids, self.src, self.dst = ids, src, dst


def _random_values(rng: np.random.Generator, elem: str, n: int) -> np.ndarray:
    if elem == "float":
        bits = rng.integers(0, 2**63, n, dtype=np.int64).view(np.float64)  # any double: subnormal, huge
        pick = rng.integers(0, 6, n)
        return np.where(pick == 0, bits, np.where(pick == 1, np.round(bits % 1e6), np.where(
            pick == 2, rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e16, 1e-5, 5e-324], n),
            rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n))))
    if elem == "bool":
        return rng.random(n) < 0.4
    big = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64, endpoint=True)
    small = rng.integers(-1, 1000, n)
    return np.where(rng.random(n) < 0.3, big, small).astype(np.int64)


@pytest.mark.parametrize("numba", ["0", "1"])  # the array path; the compiled one (cpu_kernels.row_writer)
@pytest.mark.parametrize("seed", range(6))
def test_json_is_byte_identical_to_the_old_writer_on_random_values(tmp_path: Path, seed: int, numba: str,
                                                                   monkeypatch) -> None:
    monkeypatch.setenv("G2PL_NUMBA", numba)
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(0, 300)), int(rng.integers(0, 900))
    ids = np.unique(rng.choice([rng.integers(0, 2**62, 400), rng.integers(0, 1000, 400)][seed % 2]))[:n]
    n = ids.size
    src = np.sort(rng.integers(0, max(n, 1), m)) if n else np.zeros(0, np.int64)
    dst = rng.integers(0, max(n, 1), m) if n else np.zeros(0, np.int64)
    graph = _Graph(ids, src, dst)
    shares, values = [], []
    for i, (kind, elem) in enumerate((k, e) for k in ("vertex", "edge") for e in ("int", "vid", "float", "bool")):
        data = _random_values(rng, elem, n if kind == "vertex" else m)
        shares.append(Share(f"v{i}", kind, elem, RankPart(kind, elem, data, graph)))
        values.append({"name": f"v{i}", "kind": kind, "type": elem, "value": convert(kind, elem, data, graph)})
    shares.append(Share("s", "scalar", "float", np.float64(np.nan)))
    values.append({"name": "s", "kind": "scalar", "type": "float", "value": "nan"})
    oracle = json.dumps({"entry": "r", "values": values}, indent=1)
    for chunk in (1, 7, 1 << 16):
        out = tmp_path / f"r{chunk}.json"
        write_output(out, "r", shares, chunk=chunk)
        assert out.read_text() == oracle, chunk
        for s in shares[:-1]:
            got = [p.decode() for p in s.value.json_pieces(3, chunk)]
            assert got == _old_pieces(s.value, 3, chunk)


def test_the_compiled_writer_makes_smaller_pieces_of_the_same_text(tmp_path: Path, monkeypatch) -> None:
    """With the compiled row writer a chunk's JSON and CSV text is made WRITER_CHUNK entries at a time
    (less memory in flight); the file's bytes are those of the NumPy path's whole chunks."""
    import g2pl.runtime.output as O

    rng = np.random.default_rng(3)
    ids = np.unique(rng.integers(0, 2**40, 300))
    n, m = ids.size, 1000
    graph = _Graph(ids, np.sort(rng.integers(0, n, m)), rng.integers(0, n, m))
    part = RankPart("edge", "float", rng.standard_normal(m) * 10.0 ** rng.integers(-20, 20, m), graph)
    shares = [Share("w", "edge", "float", part)]
    monkeypatch.setattr(O, "WRITER_CHUNK", 64)
    texts = {}
    for numba in ("0", "1"):
        monkeypatch.setenv("G2PL_NUMBA", numba)
        writer = cpu_kernels.row_writer()
        if numba == "1" and writer is None:
            pytest.skip("numba is not installed")
        assert len(list(part.json_pieces(1, 500))) == (2 if writer is None else 16)
        for fmt in ("json", "csv"):
            out = tmp_path / f"w{numba}.{fmt}"
            write_output(out, "r", shares, chunk=500)
            texts[numba, fmt] = out.read_bytes()
    assert texts["0", "json"] == texts["1", "json"] and texts["0", "csv"] == texts["1", "csv"]
    assert json.loads(texts["1", "json"])["values"][0]["value"] == convert("edge", "float", part.data, graph)


@pytest.mark.parametrize("compiled", [False, True])
def test_numbers_as_text_match_repr(compiled: bool, monkeypatch) -> None:
    """Integers (int64's extremes too) and floats (every kind of double) as Python writes them, by the
    array path and by the compiled one (where numba is there)."""
    monkeypatch.setenv("G2PL_NUMBA", "1" if compiled else "0")
    writer = cpu_kernels.row_writer()  # (None without numba: the array path twice)
    rng = np.random.default_rng(3)
    ints = np.concatenate([rng.integers(-2**63, 2**63 - 1, 5000, dtype=np.int64, endpoint=True),
                           np.array([0, -1, 9, 10, -10, 99, 100, 2**32, 2**32 - 1, 2**63 - 1, -2**63])])
    want = "".join(f"{v}\n" for v in ints.tolist())
    assert Rows(ints.size, writer).ints(ints).const(b"\n").text().decode() == want
    assert Rows(ints.size, writer).field(int_field(ints)).const(b"\n").text().decode() == want
    floats = np.concatenate([rng.integers(0, 2**64 - 1, 5000, dtype=np.uint64).view(np.float64),
                             np.array([0.0, -0.0, 1e16, 1e16 - 2, -1e15, 0.1, 1e-5, 5e-324, 1.7976931348623157e308,
                                       np.nan, np.inf, -np.inf, 3.0, -3.0, 123456789012345.0])])
    repeats = np.concatenate([rng.integers(1, 97, 3000) / 3, [-0.0] * 50, [1e300, 5e-324] * 40])
    rng.shuffle(repeats)  # few distinct values: each written once and gathered
    for x in (floats, repeats):
        text = Rows(x.size, writer).field(float_field(x, b"nan", b"inf", b"-inf")).const(b",").text().decode()
        assert text == "".join(("nan" if math.isnan(v) else repr(v)) + "," for v in x.tolist())


def test_whole_result_through_the_shares_matches(files, tmp_path: Path) -> None:
    """write_output_dir with npz parts, then read_output_dir: the JSON document (one rank)."""
    res = _api(files, "edge", "graph")
    write_output_dir(tmp_path / "d", res.entry, local_shares(res), fmt="npz", chunk=3)
    assert json.dumps(read_output_dir(tmp_path / "d"), indent=1) == json.dumps(res.output(), indent=1)
