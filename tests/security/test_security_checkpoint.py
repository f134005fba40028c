"""Checkpoint directories someone else can write into: one run at a time (a lock the kernel drops when
the run dies), nothing planted there is opened or written through (FIFOs, links, directories: a
run is refused at once instead of hanging), and every saved value has exactly the kind, element type,
dtype and byte order the program's variables have, or the resumed run is refused before it starts."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_util import ROOT, call, mpi_available

import g2pl
from g2pl.cli import g2pl_main

PROGRAMS = ROOT / "programs"
PAGERANK = PROGRAMS / "pagerank.g2pl"
PJCC = PROGRAMS / "pjcc.g2pl"  # remote reads: a pending request is part of the saved state
GRAPH = "er:200:800"
PR_ARGS = {"iters": 12, "damping": 0.85}
CLI_ARGS = {PAGERANK: ["--arg", "iters=12", "--arg", "damping=0.85"], PJCC: []}


@pytest.fixture(scope="module")
def graph():
    return g2pl.load_graph(GRAPH, seed=1)


@pytest.fixture(scope="module")
def pagerank():
    return g2pl.compile(PAGERANK)


def _checkpoint(tmp_path: Path, prog: Path = PAGERANK, every: int = 2, stop: int | None = None) -> Path:
    """A checkpoint directory of a real run (stopped after `stop` supersteps when given)."""
    d = tmp_path / "ck"
    p = g2pl.compile(prog)
    args = PR_ARGS if prog == PAGERANK else {}
    try:
        p.run(g2pl.load_graph(GRAPH, seed=1), args=args, seed=1, checkpoint=str(d), checkpoint_every=every,
              max_supersteps=stop)
    except g2pl.G2PLError:
        assert stop is not None
    return d


def _cli(prog: Path, *extra, capsys) -> tuple[int, str]:
    rc, _out, err = call(g2pl_main, ["run", prog, "--graph", GRAPH, "--seed", "1", "--quiet", *CLI_ARGS[prog],
                                     *extra], capsys)
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, err


def _proc(prog: Path, *extra, timeout: float = 60, np_: int = 1) -> subprocess.CompletedProcess:
    """`g2pl run` as a real process: a hang shows as a timeout, not as a stuck test run (one rank: with
    --time-limit too, which must fire whatever the run waits on)."""
    limit = ["--time-limit", "5"] if np_ == 1 else []  # (several ranks: their supervisor counts start-up too)
    cmd = [sys.executable, "-m", "g2pl.cli", "run", str(prog), "--graph", GRAPH, "--seed", "1", "--quiet",
           *limit, "--np", str(np_), *CLI_ARGS[prog], *map(str, extra)]
    r = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                       timeout=timeout)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    return r


def _latest(d: Path) -> tuple[dict, Path]:
    m = json.loads((d / "manifest.json").read_text())
    return m, d / f"ss{m['superstep']}"


def _rehash(d: Path) -> None:
    """Make the manifest's digests match the (tampered) files, as anyone who can write there can."""
    m, sub = _latest(d)
    m["files"] = {name: hashlib.sha256((sub / name).read_bytes()).hexdigest() for name in m["files"]}
    (d / "manifest.json").write_text(json.dumps(m))


def _tamper(d: Path, doc=None, arrays=None, rank: int = 0) -> None:
    """Change rank `rank`'s saved JSON (`doc(saved)`) and arrays (`arrays(saved, {key: array})`), then rehash."""
    _m, sub = _latest(d)
    jp, npz = sub / f"rank{rank}.json", sub / f"rank{rank}.npz"
    saved = json.loads(jp.read_text())
    if doc is not None:
        doc(saved)
        jp.write_text(json.dumps(saved))
    if arrays is not None:
        with np.load(npz) as z:
            arrs = {k: z[k] for k in z.files}
        arrays(saved, arrs)
        buf = io.BytesIO()
        np.savez(buf, **arrs)
        npz.write_bytes(buf.getvalue())
    _rehash(d)


def _key(doc: dict, name: str) -> str:
    return doc["env"][name]["key"]


def _set(key_fn, value_fn):
    """An `arrays` tamper: the array of the variable `key_fn(doc)` replaced by value_fn(it)."""
    def change(doc: dict, arrs: dict) -> None:
        k = key_fn(doc)
        arrs[k] = value_fn(arrs[k])
    return change


# ---------------------------------------------------------------- one run at a time


def test_a_second_run_on_a_directory_in_use_is_refused_and_the_first_keeps_its_files(tmp_path, graph, pagerank,
                                                                                     capsys):
    """Run A pauses after its first checkpoints; run B on the same directory (whose cleanup of old
    checkpoints used to delete A's, failing A) is refused at once; A then finishes intact."""
    d = tmp_path / "ck"
    paused, go, result = threading.Event(), threading.Event(), {}

    def progress(stats, final):
        if stats.supersteps == 7 and not paused.is_set():
            paused.set()
            go.wait(60)

    def run_a():
        try:
            result["a"] = pagerank.run(graph, args=PR_ARGS, seed=1, checkpoint=str(d), checkpoint_every=2,
                                       progress=progress)
        except BaseException as e:  # noqa: BLE001 - reported by the test below
            result["a"] = e

    a = threading.Thread(target=run_a)
    a.start()
    try:
        assert paused.wait(60)
        before = sorted(p.name for p in d.iterdir())
        assert "ss6" in before
        rc, err = _cli(PAGERANK, "--checkpoint", d, "--checkpoint-every", "2", capsys=capsys)
        assert rc == 2 and str(d) in err and "in use" in err and "another run holds" in err, err
        rc, err = _cli(PAGERANK, "--resume", d, capsys=capsys)  # reading it mid-write: refused too
        assert rc == 2 and "another run holds" in err, err
        assert sorted(p.name for p in d.iterdir()) == before
    finally:
        go.set()
        a.join(60)
    ref = pagerank.run(graph, args=PR_ARGS, seed=1)
    assert not isinstance(result["a"], BaseException), result["a"]
    assert result["a"].values == ref.values
    again = pagerank.run(graph, args=PR_ARGS, seed=1, resume=str(d))  # released at the end of A
    assert again.values == ref.values


def test_a_killed_run_leaves_the_directory_unlocked(tmp_path, graph, pagerank):
    d = tmp_path / "ck"
    env = dict(os.environ, PYTHONPATH=str(ROOT), G2PL_KILL_AT="0:7")
    r = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(PAGERANK), "--graph", GRAPH, "--seed", "1",
                        "--quiet", *CLI_ARGS[PAGERANK], "--checkpoint", str(d), "--checkpoint-every", "2"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert json.loads((d / "lock.json").read_text())["pid"] > 0  # the holder's note stays; the lock does not
    res = pagerank.run(graph, args=PR_ARGS, seed=1, resume=str(d))
    assert res.values == pagerank.run(graph, args=PR_ARGS, seed=1).values



@pytest.mark.skipif(not mpi_available(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
def test_ranks_of_one_run_share_the_lock_and_a_second_run_is_refused(tmp_path):
    from g2pl.runtime.checkpoint import hold_directory
    from g2pl.runtime.comm import SingleComm

    d = tmp_path / "ck"
    r = _proc(PAGERANK, "--checkpoint", d, "--checkpoint-every", "2", np_=2)  # rank 0 locks; rank 1 writes too
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (d / "ss12").iterdir()) == ["rank0.json", "rank0.npz", "rank1.json", "rank1.npz"]
    with hold_directory({"dir": str(d), "resume": True}, SingleComm()):  # another run holds it
        r = _proc(PAGERANK, "--resume", d, np_=2)
    assert r.returncode == 2 and r.stderr.count("another run holds") == 1, r.stderr


# ---------------------------------------------------------------- planted FIFOs, links, directories


@pytest.mark.parametrize("plant", ["manifest.json", "ss2/rank0.npz", "ss2/rank0.json", "lock.json"])
def test_a_fifo_planted_where_a_checkpoint_is_written_is_refused_not_waited_on(tmp_path, plant):
    d = tmp_path / "ck"
    (d / "ss2").mkdir(parents=True)
    os.mkfifo(d / plant)
    r = _proc(PAGERANK, "--checkpoint", d, "--checkpoint-every", "2")
    assert r.returncode == 2 and "a FIFO, not a regular file" in r.stderr and plant in r.stderr, r.stderr
    assert not (d / "manifest.json").is_file()  # nothing written


@pytest.mark.parametrize("plant", ["manifest.json", "rank0.npz"])
def test_a_fifo_planted_in_a_checkpoint_being_resumed_is_refused(tmp_path, plant):
    d = _checkpoint(tmp_path)
    m, sub = _latest(d)
    target = d / plant if plant == "manifest.json" else sub / plant
    target.unlink()
    os.mkfifo(target)
    r = _proc(PAGERANK, "--resume", d)
    assert r.returncode == 2 and "FIFO" in r.stderr, r.stderr


def test_manifest_linked_to_dev_null_is_refused_before_the_run(tmp_path, capsys):
    """It used to be written through (rc 0) and every checkpoint of the run was lost."""
    d = tmp_path / "ck"
    d.mkdir()
    (d / "manifest.json").symlink_to("/dev/null")
    rc, err = _cli(PAGERANK, "--checkpoint", d, "--checkpoint-every", "2", capsys=capsys)
    assert rc == 2 and "manifest.json" in err and "symbolic link" in err and "/dev/null" in err, err
    assert (d / "manifest.json").is_symlink() and not (d / "ss2").exists()


@pytest.mark.parametrize("kind", ["directory", "link inside", "link to a file"])
def test_other_planted_entries_are_refused(tmp_path, capsys, kind):
    d = _checkpoint(tmp_path)
    m, sub = _latest(d)
    if kind == "directory":
        (d / "manifest.json").unlink()
        (d / "manifest.json").mkdir()
        words = "a directory, not a regular file"
    elif kind == "link inside":  # a rank file linked to the other kept checkpoint's: never followed
        older = sorted((p for p in d.iterdir() if p.name.startswith("ss") and p != sub), key=lambda p: p.name)[0]
        (sub / "rank0.npz").unlink()
        (sub / "rank0.npz").symlink_to(older / "rank0.npz")
        words = "symbolic link"
    else:
        victim = tmp_path / "victim.json"
        victim.write_text("{}")
        (d / "manifest.json").unlink()
        (d / "manifest.json").symlink_to(victim)
        words = "outside the checkpoint directory"
    for flag in ("--resume", "--checkpoint"):
        rc, err = _cli(PAGERANK, flag, d, capsys=capsys)
        assert rc == 2 and words in err, err
    if kind == "link to a file":
        assert (tmp_path / "victim.json").read_text() == "{}"


def test_entries_planted_during_a_run_are_replaced_never_opened(tmp_path, graph, pagerank):
    """A FIFO or link that appears where the next checkpoint file goes is replaced by the rename."""
    d = tmp_path / "ck"
    victim = tmp_path / "victim"
    victim.write_text("precious")

    def progress(stats, final):
        if stats.supersteps == 3:
            (d / "ss4").mkdir()
            os.mkfifo(d / "ss4" / "rank0.npz")
            (d / "ss4" / "rank0.json").symlink_to(victim)

    res = pagerank.run(graph, args=PR_ARGS, seed=1, checkpoint=str(d), checkpoint_every=4, progress=progress)
    assert victim.read_text() == "precious"
    again = pagerank.run(graph, args=PR_ARGS, seed=1, resume=str(d))
    assert again.values == res.values


# ---------------------------------------------------------------- saved values: exactly the program's types


@pytest.mark.parametrize("case, words", [
    ("unset PR", "`v_PR`: saved unset, but every path to state"),
    ("int8 OutDeg", "`v_OutDeg`: expected int values, got dtype int8"),
    ("float16 PR", "`v_PR`: expected float values, got dtype float16"),
    ("big-endian PR", "`v_PR`: expected float values, got dtype >f8 (big-endian)"),
    ("uint64 OutDeg", "`v_OutDeg`: expected int values, got dtype uint64"),
    ("float scalar i", "`v_i`: expected a scalar int saved as type 'int' with numpy true"),
    ("python int i", "`v_i`: expected a scalar int saved as type 'int' with numpy true, found type 'int' with "
                     "numpy false"),
    ("int scalar dangling", "`v_dangling`: expected a scalar float saved as type 'float'"),
    ("extra array", "arrays that belong to no variable (a9)"),
])
def test_saved_values_must_have_the_programs_types(tmp_path, capsys, case, words):
    """int8 degrees used to be accepted (a wrong PageRank), an unset PR an internal TypeError."""
    d = _checkpoint(tmp_path)
    outdeg, pr = (lambda doc: _key(doc, "v_OutDeg")), (lambda doc: _key(doc, "v_PR"))
    env = lambda f: lambda doc: f(doc["env"])  # noqa: E731
    tamper = {
        "unset PR": dict(doc=env(lambda e: e.update(v_PR={"kind": "none"}))),
        "int8 OutDeg": dict(arrays=_set(outdeg, lambda a: a.astype(np.int8))),
        "float16 PR": dict(arrays=_set(pr, lambda a: a.astype(np.float16))),
        "big-endian PR": dict(arrays=_set(pr, lambda a: a.astype(">f8"))),
        "uint64 OutDeg": dict(arrays=_set(outdeg, lambda a: a.astype(np.uint64))),
        "float scalar i": dict(doc=env(lambda e: e["v_i"].update(type="float", numpy=False, value=(1.0).hex()))),
        "python int i": dict(doc=env(lambda e: e["v_i"].update(numpy=False))),
        "int scalar dangling": dict(doc=env(lambda e: e["v_dangling"].update(type="int", value=0))),
        "extra array": dict(arrays=lambda doc, arrs: arrs.update(a9=np.zeros(3))),
    }[case]
    _tamper(d, **tamper)
    rc, err = _cli(PAGERANK, "--resume", d, capsys=capsys)
    assert rc == 2 and words in err and "rank0." in err, err


def test_an_unset_variable_the_program_has_not_reached_is_accepted(tmp_path, pagerank, graph):
    d = _checkpoint(tmp_path, every=1, stop=2)  # a checkpoint after superstep 1: PR, dangling and t4 are not set yet
    m, sub = _latest(d)
    doc = json.loads((sub / "rank0.json").read_text())
    assert m["superstep"] == 1 and doc["env"]["v_PR"] == {"kind": "none"}
    assert pagerank.run(graph, args=PR_ARGS, seed=1, resume=str(d)).values == \
        pagerank.run(graph, args=PR_ARGS, seed=1).values


def test_which_variables_every_path_to_a_state_has_set():
    from g2pl.runtime.checkpoint_schema import assigned_on_entry

    mod = g2pl.compile(PAGERANK).load()
    at = {s: assigned_on_entry(mod.VARIABLES, mod.TRANSITIONS, mod.STATE_SETS, s) for s in mod.STATE_LINES}
    assert at[0] == frozenset()  # the start: nothing set
    assert at[4] == set(mod.VARIABLES)  # inside the loop, after its exchange: everything
    assert "v_PR" in at[2] and "v_dangling" not in at[2]  # the loop test: PR set, dangling not on the first entry
    names = ("a", "b")  # a loop that sets `b` only inside: not set on every path to its exit
    assert assigned_on_entry(names, {0: (1,), 1: (2, 3), 2: (1,), 3: ()}, {0: ("a",), 2: ("b",)}, 3) == {"a"}


def _npz_member(d: Path, compress: bool = False, name: str | None = None) -> None:
    """Rewrite rank 0's .npz with its members deflated, or one more member `name`."""
    _m, sub = _latest(d)
    npz = sub / "rank0.npz"
    with zipfile.ZipFile(npz) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    if name is not None:
        members[name] = next(iter(members.values()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    npz.write_bytes(buf.getvalue())
    _rehash(d)


@pytest.mark.parametrize("change, words", [
    (dict(compress=True), "compressed or encrypted"),
    (dict(name="notes.txt"), "unexpected member 'notes.txt'"),
])
def test_npz_members_are_what_the_runtime_writes(tmp_path, capsys, change, words):
    d = _checkpoint(tmp_path)
    _npz_member(d, **change)
    rc, err = _cli(PAGERANK, "--resume", d, capsys=capsys)
    assert rc == 2 and words in err and "rank0.npz" in err, err


def _request(doc: dict) -> dict:
    return next(v["keys"] for v in doc["env"].values() if v.get("kind") == "request")


@pytest.mark.parametrize("case, words", [
    ("counts", "the pending request expects 5 IDs from rank 0, which sends 4"),
    ("ids", "request IDs must be 200 long on this rank"),
])
def test_pending_remote_requests_must_add_up(tmp_path, capsys, case, words):
    """A request whose counts do not pair up used to fail inside the exchange (internal error)."""
    d = _checkpoint(tmp_path, PJCC, every=1, stop=4)  # after superstep 4: a request is pending

    def change(doc, arrs):
        keys = _request(doc)
        if case == "counts":
            # (one rank keeps no routing of its own; the counts still have to pair up)
            order = np.arange(4, dtype=np.int64)
            arrs[keys["order"]], arrs[keys["send_counts"]] = order, np.array([4])
            arrs[keys["received"]] = np.arange(5, dtype=np.int64)
            arrs[keys["recv_counts"]] = np.array([5])
        else:
            arrs[keys["ids"]] = np.append(arrs[keys["ids"]], 0)

    _tamper(d, arrays=change)
    rc, err = _cli(PJCC, "--resume", d, capsys=capsys)
    assert rc == 2 and words in err, err


@pytest.mark.skipif(not mpi_available(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
def test_ranks_whose_saved_scalars_disagree_are_refused_on_every_rank(tmp_path):
    """One rank told to loop once more would wait for ever in a collective the others never enter."""
    d = tmp_path / "ck"
    assert _proc(PAGERANK, "--checkpoint", d, "--checkpoint-every", "4", np_=2).returncode == 0
    _tamper(d, doc=lambda doc: doc["env"]["v_i"].update(value=doc["env"]["v_i"]["value"] - 2), rank=1)
    r = _proc(PAGERANK, "--resume", d, np_=2)
    assert r.returncode == 2 and "disagrees with rank 0's about the scalar variables" in r.stderr, r.stderr
    assert "rank1.json" in r.stderr


# ---------------------------------------------------------------- the structural fuzzer, seeded and short


def test_checkpoint_fuzz_seeded(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import fuzz_checkpoint
    finally:
        sys.path.remove(str(ROOT / "bench"))
    totals = fuzz_checkpoint.fuzz(cases=150, seed=1, work=tmp_path, cli_cases=2, progress=False)
    assert totals["failures"] == [], totals["failures"][:5]
    got = totals["totals"]
    assert sum(got.values()) == 150 and got["refused"] > 50 and got["accepted_same"] > 5, got
    assert sum(totals["cli"].values()) == 2


def test_state_sets_are_what_each_state_assigns():
    """The compiler reads them off the generated lines: the same as a Python parse of each state finds."""
    import ast

    for path in sorted(PROGRAMS.glob("*.g2pl")):
        for opt in (0, 2):
            prog = g2pl.compile(path, opt=opt)
            mod, tree = prog.load(), ast.parse(prog.python())
            run = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "run")
            loop = next(st for st in run.body if isinstance(st, ast.While))
            for branch in (st for st in loop.body if isinstance(st, ast.If)):
                state = branch.test.comparators[0].value
                found = {n.id for st in branch.body if isinstance(st, ast.Assign) for t in st.targets
                         for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                assert set(mod.STATE_SETS[state]) == found & set(mod.VARIABLES), (path.name, opt, state)
