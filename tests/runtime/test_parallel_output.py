"""Returned values written from every rank: `--output` streamed through rank 0 (the same bytes as one
rank's file) and `--output-dir` (one part per rank and an index); bad `--output-dir` arguments.

The tests of several ranks are skipped where mpi4py or mpiexec is missing (`pip install '.[mpi]'`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_util import call, mpi_available

import g2pl
from g2pl.cli import g2pl_main
from g2pl.results.streamed import local_shares, read_output_dir, write_output, write_output_dir

ROOT = Path(__file__).resolve().parents[2]
HAVE_MPI = mpi_available()
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")

#: every kind and type of returned value: vertex graphs of float (with inf and nan), int and vid,
#: vertex sets (one empty), edge graphs of float and int, an edge set, and scalars
KINDS = """
kinds() {
  D = { sum [ 1 | u <- nvals v ] | v <- V };
  F = { (D[v] > 1) ? 1.0 / (D[v] - 2) : 0.0 / 0.0 | v <- V };
  P = { argmin [ id | u <- nvals v ] | v <- V };
  S = { D[v] > 1 | v <- V };
  W = { Weight[e] * 2.0 | e <- E };
  X = { D[u] > D[v] | (u, e, v) <- E };
  Q = { D[u] + D[v] | (u, e, v) <- E };
  n = count [ 1 | v <- V ];
  t = sum [ Weight[e] | e <- E ];
  b = n > 3;
  none = { false | v <- V };
  return F, D, P, S, W, X, Q, n, t, b, none;
}
"""

#: non-contiguous IDs, not in order in the file, weights, an isolated pair
SMALL = "10 1000 2.5\n1000 7 1.0\n7 10 0.5\n3 7 1\n5 3 2\n123456789 42 0.25\n"


def _bigger() -> str:
    """About 60 vertices with scattered IDs (several per rank), in no particular order; weights in
    eighths, so that sums of them are exact in any order (on any number of ranks)."""
    import random

    rng = random.Random(5)
    ids = rng.sample(range(1, 10**7), 60)
    pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(160)]
    lines = [f"{a} {b} {rng.randint(4, 32) / 8}" for a, b in pairs if a != b]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("parallel_output")
    (d / "kinds.g2pl").write_text(KINDS)
    (d / "small.txt").write_text(SMALL)
    (d / "bigger.txt").write_text(_bigger())
    return {"prog": d / "kinds.g2pl", "small": d / "small.txt", "bigger": d / "bigger.txt"}


def _reference(files: dict[str, Path], graph: str, directed: bool) -> str:
    """What --output has always written: the API's result as json.dumps(indent=1) makes it."""
    res = g2pl.compile(files["prog"]).run(g2pl.load_graph(str(files[graph]), directed=directed))
    return json.dumps(res.output(), indent=1)


def _env() -> dict[str, str]:
    e = os.environ.copy()
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    for k in ("G2PL_FAIL_AT", "G2PL_KILL_AT"):
        e.pop(k, None)
    return e


# ------------------------------------------------------------------------------------ one process


@pytest.mark.parametrize("graph", ["small", "bigger"])
@pytest.mark.parametrize("directed", [False, True])
def test_pieces_of_any_size_make_the_same_bytes(files, tmp_path: Path, graph: str, directed: bool) -> None:
    """The document written a few entries at a time is byte for byte json.dumps of the whole one, and
    the parts of --output-dir (one rank here) put back together are too."""
    ref = _reference(files, graph, directed)
    res = g2pl.compile(files["prog"]).run(g2pl.load_graph(str(files[graph]), directed=directed))
    shares = local_shares(res)
    for chunk in (1, 2, 7, 1 << 18):
        out = tmp_path / f"o{chunk}.json"
        write_output(out, res.entry, shares, chunk=chunk)
        assert out.read_text() == ref, chunk
    write_output_dir(tmp_path / "dir", res.entry, shares, chunk=3)
    assert json.dumps(read_output_dir(tmp_path / "dir"), indent=1) == ref
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == ["index.json", "part-00000.json"]


def test_one_rank_cli_output_is_unchanged(files, tmp_path: Path, capsys) -> None:
    out, outdir = tmp_path / "o.json", tmp_path / "parts"
    rc, _, err = call(g2pl_main, ["run", files["prog"], "--graph", files["small"], "--quiet", "--output", out,
                                  "--output-dir", outdir], capsys)
    assert rc == 0, err
    assert out.read_text() == _reference(files, "small", False)
    assert json.dumps(read_output_dir(outdir), indent=1) == out.read_text()
    index = json.loads((outdir / "index.json").read_text())
    assert index["ranks"] == 1 and [p["file"] for p in index["parts"]] == ["part-00000.json"]


def test_output_to_standard_output_is_unchanged(files, capsys) -> None:
    rc, out, err = call(g2pl_main, ["run", files["prog"], "--graph", files["small"], "--output", "-"], capsys)
    assert rc == 0, err
    assert out == _reference(files, "small", False) + "\n"


# ------------------------------------------------------------------------------------ several ranks


def _run_np(files: dict[str, Path], tmp_path: Path, graph: str, n: int, *extra: str) -> tuple[Path, Path, str]:
    out, outdir = tmp_path / f"o{n}.json", tmp_path / f"parts{n}"
    cmd = [sys.executable, "-m", "g2pl.cli", "run", str(files["prog"]), "--graph", str(files[graph]), "--np", str(n),
           "--output", str(out), "--output-dir", str(outdir), *extra]
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    return out, outdir, r.stdout


@needs_mpi
@pytest.mark.parametrize("graph,extra", [("small", ()), ("bigger", ("--directed", "--renumber", "degree"))])
def test_streamed_output_is_byte_identical_for_any_rank_count(files, tmp_path: Path, graph: str, extra) -> None:
    """--np 1, 2, 3: the same file, byte for byte; the summary printed is the same too; the parts of
    --output-dir hold each rank's vertices and owned edges and put together give that file."""
    ref = _reference(files, graph, "--directed" in extra)
    summaries = []
    for n in (1, 2, 3):
        out, outdir, stdout = _run_np(files, tmp_path, graph, n, *extra)
        assert out.read_text() == ref, n
        summaries.append([line for line in stdout.splitlines() if not line.startswith("stats:")])
        assert json.dumps(read_output_dir(outdir), indent=1) == ref, n
        index = json.loads((outdir / "index.json").read_text())
        assert index["format"] == "g2pl-output-parts" and index["ranks"] == n
        assert [p["file"] for p in index["parts"]] == [f"part-{r:05d}.json" for r in range(n)]
        assert [(v["name"], v["kind"], v["type"]) for v in index["values"]] == \
            [(v["name"], v["kind"], v["type"]) for v in json.loads(ref)["values"]]
        firsts = []
        for r in range(n):
            part = json.loads((outdir / f"part-{r:05d}.json").read_text())
            assert (part["rank"], part["ranks"]) == (r, n)
            ids = [int(k) for k in part["values"][0]["value"]]  # F: the rank's own vertices
            assert ids == sorted(ids)
            firsts.append(ids)
            for v in part["values"]:
                if v["kind"] != "scalar":
                    got = len(v["value"])
                    assert index["parts"][r]["entries"][v["name"]] == got
        flat = [x for ids in firsts for x in ids]
        assert flat == sorted(flat) and len(flat) == len(set(flat))  # contiguous ranges in rank order
    assert summaries[1] == summaries[0] and summaries[2] == summaries[0]


@needs_mpi
def test_output_dir_replaces_an_older_result(files, tmp_path: Path) -> None:
    """Parts of ranks the new run does not have, and the old index, do not survive it."""
    outdir = tmp_path / "parts2"
    outdir.mkdir()
    (outdir / "part-00005.json").write_text("{}")
    (outdir / "index.json").write_text("{}")
    (outdir / "notes.txt").write_text("mine")
    _run_np(files, tmp_path, "small", 2)
    assert sorted(p.name for p in outdir.iterdir()) == ["index.json", "notes.txt", "part-00000.json",
                                                        "part-00001.json"]
    assert json.dumps(read_output_dir(outdir), indent=1) == _reference(files, "small", False)


#: three ranks in one mpiexec launch: tiny pieces through rank 0; shares not gathered unless asked;
#: a rank failing while its pieces are made fails every rank and leaves nothing behind
THREE_RANKS = r"""
import json, sys
from pathlib import Path
import g2pl
from g2pl.errors import G2PLError
from g2pl.runtime.mpi import MPIComm
from g2pl.runtime.output import RankPart
from g2pl.results.streamed import Share, write_output, write_output_dir

prog_file, graph_file, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
comm = MPIComm()
graph = g2pl.load_graph(graph_file) if comm.rank == 0 else None
prog = g2pl.compile(prog_file)
res = prog.run(graph, comm=comm, gather=False)
assert res.returned is None and all(isinstance(s.value, RankPart) for s in res.parts if s.kind != "scalar")
whole = prog.run(graph, comm=comm)  # gathered: whole arrays on rank 0, as always
assert (whole.returned is not None) == (comm.rank == 0)
for chunk in (1, 2, 5):
    write_output(out / f"o{chunk}.json", res.entry, res.parts, comm, chunk=chunk)
write_output_dir(out / "dir", res.entry, res.parts, comm, chunk=2)

class Broken(RankPart):  # one chunk, then a chunk that fails (made by a worker thread)
    def json_jobs(self, depth, chunk):
        yield next(iter(super().json_jobs(depth, chunk)))

        def fail():
            raise MemoryError

        yield fail

def broken(shares):
    if comm.rank != 1:
        return shares
    return [Share(s.name, s.kind, s.type, Broken(s.kind, s.type, s.value.data, s.value.where))
            if s.kind == "edge" else s for s in shares]

failed = {}
for what, fn in (("file", lambda: write_output(out / "bad.json", res.entry, broken(res.parts), comm, chunk=1)),
                 ("dir", lambda: write_output_dir(out / "baddir", res.entry, broken(res.parts), comm, chunk=1))):
    try:
        fn()
    except G2PLError as e:
        failed[what] = [e.exit_status, e.message]
failed = comm.gather(failed)
if comm.rank == 0:
    (out / "failed.json").write_text(json.dumps(failed))
    (out / "whole.json").write_text(json.dumps(whole.output(), indent=1))
"""


@needs_mpi
def test_small_pieces_and_failures_on_three_ranks(files, tmp_path: Path) -> None:
    from g2pl.runtime.launch import find_mpiexec

    ref = _reference(files, "bigger", False)
    r = subprocess.run([find_mpiexec(), "-n", "3", sys.executable, "-c", THREE_RANKS, str(files["prog"]),
                        str(files["bigger"]), str(tmp_path)], env=_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for chunk in (1, 2, 5):
        assert (tmp_path / f"o{chunk}.json").read_text() == ref, chunk
    assert (tmp_path / "whole.json").read_text() == ref
    assert json.dumps(read_output_dir(tmp_path / "dir"), indent=1) == ref
    failed = json.loads((tmp_path / "failed.json").read_text())
    for rank, f in enumerate(failed):
        assert set(f) == {"file", "dir"}, (rank, f)
        for what in ("file", "dir"):
            status, message = f[what]
            assert status == 1
            if rank == 0:
                assert message == "rank 1: out of memory while writing the output"
    assert not (tmp_path / "bad.json").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary left
    assert sorted(p.name for p in (tmp_path / "baddir").iterdir()) == []  # no part, no index


# ------------------------------------------------------------------------------------ bad --output-dir


def _refused(files, capsys, *args) -> str:
    rc, out, err = call(g2pl_main, ["run", files["prog"], "--graph", files["small"], *map(str, args)], capsys)
    assert rc == 2, (rc, err)
    assert out == ""
    return err


def test_bad_output_dirs_are_refused_before_any_work(files, tmp_path: Path, capsys) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    err = _refused(files, capsys, "--output-dir", plain)
    assert f"--output-dir {plain}: exists and is not a directory" in err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    err = _refused(files, capsys, "--output-dir", link)
    assert f"--output-dir {link}: is a symbolic link (to {str(elsewhere)!r}); name the directory itself" in err
    err = _refused(files, capsys, "--output-dir", tmp_path / "missing" / "out")
    assert f"the directory {str(tmp_path / 'missing')!r} does not exist" in err
    err = _refused(files, capsys, "--output-dir", "")
    assert "--output-dir: an empty directory name" in err
    err = _refused(files, capsys, "--output-dir", "-")
    assert "standard output cannot hold one file per rank" in err
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "index.json").mkdir()
    err = _refused(files, capsys, "--output-dir", odd)
    assert "holds 'index.json', which is not a regular file" in err
    (odd / "index.json").rmdir()
    (odd / "part-00001.json").symlink_to(plain)
    err = _refused(files, capsys, "--output-dir", odd)
    assert "holds 'part-00001.json', a symbolic link" in err
    assert plain.read_text() == "x" and not list(elsewhere.iterdir())


def test_output_dir_never_replaces_an_input_or_another_output(files, tmp_path: Path, capsys) -> None:
    d = tmp_path / "d"
    d.mkdir()
    graph = d / "part-00000.json"  # a graph file named as a part would be
    graph.write_text(SMALL)
    rc, _, err = call(g2pl_main, ["run", files["prog"], "--graph", graph, "--output-dir", d], capsys)
    assert rc == 2 and f"would replace {str(graph)!r}, the graph file of this command" in err
    assert graph.read_text() == SMALL
    err = _refused(files, capsys, "--output-dir", d, "--output", d / "index.json")
    assert "the --output file of this command" in err
    err = _refused(files, capsys, "--output-dir", files["prog"].parent / "kinds.g2pl")
    assert "exists and is not a directory" in err
    err = _refused(files, capsys, "--output-dir", d, "--checkpoint", d)
    assert "is the --checkpoint directory of this command" in err
    assert sorted(p.name for p in d.iterdir()) == ["part-00000.json"]


def test_read_output_dir_refuses_what_it_cannot_trust(tmp_path: Path) -> None:
    from g2pl.errors import G2PLError

    (tmp_path / "index.json").write_text(json.dumps({"format": "g2pl-output-parts", "version": 1, "entry": "x",
                                                     "ranks": 1, "parts": [{"file": "../secret.json"}],
                                                     "values": []}))
    with pytest.raises(G2PLError, match="part-NNNNN.json"):
        read_output_dir(tmp_path)
    (tmp_path / "index.json").unlink()
    with pytest.raises(G2PLError, match="no complete result"):
        read_output_dir(tmp_path)
