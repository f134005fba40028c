"""Security model: what a checkpoint directory, an output path, a graph file and the API may and may
not do. Each case here was once an attack or a crash; every one must end in a clean refusal (exit
status 2, one message naming the file) or a correct run, never in code running or files clobbered."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import pickle
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_util import ROOT, call, run_proc, write

import g2pl
from g2pl.cli import g2pl_main, g2plc_main
from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.io.output_files import write_atomic

PROGRAMS = ROOT / "programs"
PJCC = PROGRAMS / "pjcc.g2pl"  # remote reads: a pending request is part of the saved state
GRAPH = "er:300:900"


class _Payload:
    """Unpickling this creates the file `marker`: proof that a checkpoint ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _checkpoint(tmp_path: Path) -> Path:
    d = tmp_path / "ck"
    g2pl.compile(PJCC).run(g2pl.load_graph(GRAPH, seed=1), seed=1, checkpoint=str(d), checkpoint_every=2)
    return d


def _resume(d: Path, capsys) -> tuple[int, str]:
    rc, _out, err = call(g2pl_main, ["run", PJCC, "--graph", GRAPH, "--seed", "1", "--resume", d, "--quiet"],
                         capsys)
    return rc, err


def _rehash(d: Path) -> None:
    """Make the manifest's digests match the (tampered) files, as an attacker can."""
    m = json.loads((d / "manifest.json").read_text())
    sub = d / f"ss{m['superstep']}"
    m["files"] = {name: hashlib.sha256((sub / name).read_bytes()).hexdigest() for name in m["files"]}
    (d / "manifest.json").write_text(json.dumps(m))


def _rank_doc(d: Path) -> tuple[Path, dict]:
    m = json.loads((d / "manifest.json").read_text())
    p = d / f"ss{m['superstep']}" / "rank0.json"
    return p, json.loads(p.read_text())


# ---------------------------------------------------------------- 1. checkpoints run no code


def test_checkpoint_files_hold_no_pickle(tmp_path):
    d = _checkpoint(tmp_path)
    names = sorted(p.name for p in d.rglob("*") if p.is_file())
    assert names and all(n.endswith((".json", ".npz")) for n in names), names
    for npz in d.rglob("*.npz"):
        with np.load(npz, allow_pickle=False) as z:  # loads without pickle: plain arrays only
            assert all(z[k].dtype != object for k in z.files)


def test_old_pickle_checkpoint_is_refused_and_runs_nothing(tmp_path, capsys):
    """The attack of the issue: manifest + rank0.pkl with a __reduce__ payload, hash recomputed."""
    marker = tmp_path / "pwned"
    d = tmp_path / "evil"
    (d / "ss2").mkdir(parents=True)
    blob = pickle.dumps({"state": 0, "env": _Payload(marker), "runtime": {}, "superstep": 2})
    (d / "ss2" / "rank0.pkl").write_bytes(blob)
    (d / "manifest.json").write_text(json.dumps({
        "format": 1, "run": {}, "superstep": 2, "dir": "ss2",
        "files": {"rank0.pkl": hashlib.sha256(blob).hexdigest()}}))
    rc, err = _resume(d, capsys)
    assert rc == 2 and "error:" in err and "Traceback" not in err
    assert not marker.exists()


def test_npz_with_object_array_is_refused_and_runs_nothing(tmp_path, capsys):
    marker = tmp_path / "pwned"
    d = _checkpoint(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    npz = d / f"ss{m['superstep']}" / "rank0.npz"
    buf = io.BytesIO()
    np.savez(buf, a0=np.array([_Payload(marker)], dtype=object))  # pickled inside the .npy
    npz.write_bytes(buf.getvalue())
    _rehash(d)
    rc, err = _resume(d, capsys)
    assert rc == 2 and "rank0.npz" in err and "Traceback" not in err, err
    assert not marker.exists()


def test_manifest_paths_cannot_leave_the_directory(tmp_path, capsys):
    d = _checkpoint(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m["dir"] = "/etc"  # ignored: file names are built from the validated superstep number
    (d / "manifest.json").write_text(json.dumps(m))
    rc, err = _resume(d, capsys)
    assert rc == 0, err
    sub = d / f"ss{m['superstep']}"
    outside = tmp_path / "outside"
    outside.mkdir()
    for f in sub.iterdir():
        f.rename(outside / f.name)
    sub.rmdir()
    sub.symlink_to(outside)  # a link that leads out of the checkpoint directory
    rc, err = _resume(d, capsys)
    assert rc == 2 and "outside the checkpoint directory" in err, err


@pytest.mark.parametrize("manifest", [
    "[]", '"text"', "{}", '{"format": 2}', '{"format": 2, "run": [], "superstep": 2, "files": {}}',
    '{"format": 2, "run": {}, "superstep": "2", "files": {}}',
    '{"format": 2, "run": {}, "superstep": 2, "files": {"../../etc/passwd": "00"}}',
    "{" * 100000,  # deeply nested: the JSON parser's recursion limit
])
def test_malformed_manifest_is_refused(tmp_path, capsys, manifest):
    d = _checkpoint(tmp_path)
    (d / "manifest.json").write_text(manifest)
    rc, err = _resume(d, capsys)
    assert rc == 2 and "manifest" in err and "Traceback" not in err and "internal error" not in err, err


@pytest.mark.parametrize("tamper, words", [
    (lambda doc: doc.update(state=999), "not a state of the program"),
    (lambda doc: doc.update(state="0"), "`state` must be an integer"),
    (lambda doc: doc["env"].pop(next(iter(doc["env"]))), "not the program's"),
    (lambda doc: doc["env"].update({k: {"kind": "scalar", "type": "int", "numpy": True, "value": 1}
                                    for k, v in doc["env"].items() if v.get("kind") == "array"}),
     "expected a vertex value"),
    (lambda doc: doc["env"].update({k: {"kind": "array", "key": "zz"} for k, v in doc["env"].items()
                                    if v.get("kind") == "array"}), "missing from the .npz"),
    (lambda doc: doc["runtime"].update(rand_counts=[1, 2, 3]), "`rand_counts`"),
    (lambda doc: doc["runtime"]["per_superstep"].append([0] * 8), "out of order"),
    (lambda doc: doc["runtime"].update(directions={"push": -1, "pull": 0}), "must be an integer >= 0"),
])
def test_malformed_rank_file_is_refused(tmp_path, capsys, tamper, words):
    d = _checkpoint(tmp_path)
    p, doc = _rank_doc(d)
    tamper(doc)
    p.write_text(json.dumps(doc))
    _rehash(d)
    rc, err = _resume(d, capsys)
    assert rc == 2 and words in err and "rank0.json" in err and "Traceback" not in err, err


def test_wrong_array_shapes_and_types_are_refused(tmp_path, capsys):
    d = _checkpoint(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    npz = d / f"ss{m['superstep']}" / "rank0.npz"
    with np.load(npz) as z:
        arrays = {k: z[k] for k in z.files}
    for change, words in ((lambda a: a[:-1], "values on this rank"), (lambda a: a.astype(np.float32),
                                                                       "values, got dtype"),
                          (lambda a: a.reshape(1, -1), "1-D array")):
        _p, doc = _rank_doc(d)
        key = next(v["key"] for v in doc["env"].values() if v.get("kind") == "array")
        bad = dict(arrays, **{key: change(arrays[key])})
        buf = io.BytesIO()
        np.savez(buf, **bad)
        npz.write_bytes(buf.getvalue())
        _rehash(d)
        rc, err = _resume(d, capsys)
        assert rc == 2 and words in err and "Traceback" not in err, err


def test_npz_declaring_huge_arrays_is_refused_before_reading(tmp_path, capsys):
    d = _checkpoint(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    npz = d / f"ss{m['superstep']}" / "rank0.npz"
    npz.write_bytes(_npz_with_header("a0", (10**12,), "<i8"))
    _rehash(d)
    rc, err = _resume(d, capsys)
    assert rc == 2 and "would take" in err, err


def test_checkpoints_are_never_written_through_planted_links(tmp_path):
    d = tmp_path / "ck"
    d.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (d / "ss2").symlink_to(elsewhere)
    with pytest.raises(G2PLError, match="not a plain directory"):
        g2pl.compile(PJCC).run(g2pl.load_graph(GRAPH, seed=1), seed=1, checkpoint=str(d), checkpoint_every=2)
    assert list(elsewhere.iterdir()) == []


def test_resume_and_checkpoint_directory_arguments(tmp_path, capsys):
    base = ["run", PJCC, "--graph", GRAPH, "--quiet"]
    rc, _, err = call(g2pl_main, [*base, "--resume", tmp_path / "absent"], capsys)
    assert rc == 2 and "no such checkpoint directory" in err and not (tmp_path / "absent").exists()
    f = write(tmp_path, "file", "x")
    for flag in ("--checkpoint", "--resume"):
        rc, _, err = call(g2pl_main, [*base, flag, f], capsys)
        assert rc == 2 and "not a directory" in err, err
        assert f.read_text() == "x"


# ---------------------------------------------------------------- 2. output writes


def _bfs(tmp_path: Path) -> list:
    g = write(tmp_path, "g.el", "1 2\n2 3\n3 4\n")
    return ["run", PROGRAMS / "bfs.g2pl", "--graph", g, "--arg", "root=1", "--quiet"]


def test_planted_links_at_temporary_names_are_never_written_through(tmp_path, capsys):
    victim = write(tmp_path, "victim", "precious")
    out = tmp_path / "o.json"
    for name in ("o.json.tmp", ".o.json.tmp", f"o.json.tmp{os.getpid()}"):
        (tmp_path / name).symlink_to(victim)
    rc, _, err = call(g2pl_main, [*_bfs(tmp_path), "--output", out], capsys)
    assert rc == 0, err
    assert victim.read_text() == "precious" and json.loads(out.read_text())["entry"] == "bfs"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


def test_output_that_is_a_link_to_a_file_is_refused(tmp_path, capsys):
    victim = write(tmp_path, "victim", "precious")
    link = tmp_path / "o.json"
    link.symlink_to(victim)
    rc, _, err = call(g2pl_main, [*_bfs(tmp_path), "--output", link], capsys)
    assert rc == 2 and "symbolic link" in err
    assert victim.read_text() == "precious" and link.is_symlink()


def test_device_outputs_are_written_in_place(tmp_path, capsys):
    rc, _, err = call(g2pl_main, [*_bfs(tmp_path), "--output", "/dev/null", "--stats", "/dev/null"], capsys)
    assert rc == 0, err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # still the device, not a regular file
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the write does not block
    try:
        rc, _, err = call(g2pl_main, [*_bfs(tmp_path), "--output", fifo], capsys)
        assert rc == 0, err
        assert json.loads(os.read(rfd, 1 << 20))["entry"] == "bfs"
    finally:
        os.close(rfd)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_outputs_that_are_inputs_or_each_other_are_refused(tmp_path, capsys):
    prog = write(tmp_path, "p.g2pl", (PROGRAMS / "bfs.g2pl").read_text())
    g = write(tmp_path, "g.el", "1 2\n2 3\n")
    base = ["run", prog, "--graph", g, "--arg", "root=1", "--quiet"]
    hard = tmp_path / "hard.g2pl"
    os.link(prog, hard)
    cases = [(["--output", prog], "is an input"), (["--stats", g], "is an input"),
             (["--output", hard], "is an input"), (["--plot", tmp_path / "." / "p.g2pl"], "is an input"),
             (["--output", tmp_path / "o.json", "--stats", tmp_path / "o.json"], "name the same file"),
             (["--output", ""], "empty file name")]
    for extra, words in cases:
        rc, _, err = call(g2pl_main, [*base, *extra], capsys)
        assert rc == 2 and words in err, (extra, err)
    assert prog.read_text() == (PROGRAMS / "bfs.g2pl").read_text() and g.read_text() == "1 2\n2 3\n"
    rc, _, err = call(g2plc_main, [prog, "-o", prog], capsys)
    assert rc == 2 and "is an input" in err
    rc, _, err = call(g2pl_main, ["plan", prog, "--dot", prog], capsys)
    assert rc == 2 and "is an input" in err
    assert prog.read_text() == (PROGRAMS / "bfs.g2pl").read_text()
    # g2plc without -o writes STEM.py in the working directory: never over the program itself
    py_prog = write(tmp_path, "x.py", (PROGRAMS / "bfs.g2pl").read_text())
    p = run_proc("g2plc", py_prog.name, cwd=tmp_path)
    assert p.returncode == 2 and "is an input" in p.stderr
    assert py_prog.read_text() == (PROGRAMS / "bfs.g2pl").read_text()


def test_write_failure_leaves_nothing_behind(tmp_path, monkeypatch):
    target = write(tmp_path, "o.json", "old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(G2PLRuntimeError, match="No space left on device") as e:
        write_atomic(target, "new")
    assert e.value.exit_status == 1 and "o.json" in e.value.render()
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["o.json"]


def test_disk_full_on_a_device_is_exit_1_with_one_line(tmp_path, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    rc, out, err = call(g2pl_main, [*_bfs(tmp_path), "--output", "/dev/full"], capsys)
    assert rc == 1 and err.count("error:") == 1 and "/dev/full" in err and "Traceback" not in err, err


def test_written_files_get_ordinary_permissions(tmp_path, capsys):
    out = tmp_path / "o.json"
    rc, _, err = call(g2pl_main, [*_bfs(tmp_path), "--output", out], capsys)
    mask = os.umask(0)
    os.umask(mask)
    assert rc == 0 and stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


# ---------------------------------------------------------------- 5. declared sizes


def _npz_with_header(name: str, shape: tuple, descr: str, data: bytes = b"") -> bytes:
    """An .npz whose member declares `shape` but holds only `data` (a size bomb)."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": descr, "fortran_order": False, "shape": shape})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{name}.npy", head.getvalue() + data)
    return buf.getvalue()


def test_graph_files_declaring_huge_sizes_are_refused_before_allocating(tmp_path, capsys):
    mtx = write(tmp_path, "huge.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                "2000000000 2000000000 1\n1 2\n")
    many = write(tmp_path, "many.mtx", "%%MatrixMarket matrix coordinate pattern general\n20 20 100000000\n1 2\n")
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        for key in ("src", "dst"):
            head = io.BytesIO()
            np.lib.format.write_array_header_1_0(head, {"descr": "<i8", "fortran_order": False,
                                                        "shape": (10**11,)})
            zf.writestr(f"{key}.npy", head.getvalue())
    obj = tmp_path / "obj.npz"
    obj.write_bytes(_npz_with_header("src", (1,), "|O"))
    for f, words in ((mtx, "declares 2,000,000,000 x 2,000,000,000"), (many, "more than the"),
                     (bomb, "GiB decompressed"), (obj, "must be numeric")):
        rc, _, err = call(g2pl_main, ["run", PROGRAMS / "cc.g2pl", "--graph", f, "--quiet"], capsys)
        assert rc == 2 and words in err and str(f) in err, err


# ---------------------------------------------------------------- 6. huge numbers and arguments


BIG = "9" * 5000


@pytest.mark.parametrize("text, words", [
    (f"1 2\n2 3\n{BIG} 4\n", "(5000 digits) is too large"),
    (f"1 2 1.0\n2 3 {BIG}\n", "overflows float64"),
    (f"%%MatrixMarket matrix coordinate pattern general\n{BIG} 3 1\n1 2\n", "too large for int64"),
])
def test_huge_numbers_in_graph_files(tmp_path, capsys, text, words):
    f = write(tmp_path, "g.mtx" if text.startswith("%%") else "g.el", text)
    rc, _, err = call(g2pl_main, ["run", PROGRAMS / "cc.g2pl", "--graph", f, "--quiet"], capsys)
    assert rc == 2 and words in err and len(err) < 500 and "internal error" not in err, err


@pytest.mark.parametrize("arg, words", [
    (f"iters={BIG}", "64-bit integer"), ("damping=inf", "finite"), ("damping=1e999", "finite"),
    ("damping=nan", "finite"), ("damping=0_5", "finite decimal number"), ("damping=-Infinity", "finite"),
    ("damping=0x1p3", "finite decimal number"), ("iters=1_0", "an integer"),
])
def test_arguments_follow_one_rule(capsys, arg, words):
    name, value = arg.split("=", 1)
    args = dict({"iters": "3", "damping": "0.85"}, **{name: value})
    argv = ["run", PROGRAMS / "pagerank.g2pl", "--graph", "er:50:100", "--quiet"]
    for k, v in args.items():
        argv += ["--arg", f"{k}={v}"]
    rc, _, err = call(g2pl_main, argv, capsys)
    assert rc == 2 and words in err and len(err) < 400, err


def test_api_arguments_follow_the_same_rule():
    prog = g2pl.compile_file(PROGRAMS / "pagerank.g2pl")
    g = g2pl.load_graph("er:20:40", seed=1)
    for bad in (float("inf"), float("nan"), 10**400, "1e999", "0_5"):
        with pytest.raises(G2PLError, match="finite|number"):
            prog.run(g, args={"iters": 2, "damping": bad})
    with pytest.raises(G2PLError, match="64-bit"):
        prog.run(g, args={"iters": 2**70, "damping": 0.5})


@pytest.mark.parametrize("flag", ["--seed", "--np", "--max-supersteps", "--checkpoint-every"])
def test_huge_numeric_options(capsys, flag):
    rc, _, err = call(g2pl_main, ["run", PROGRAMS / "cc.g2pl", "--graph", "er:10:10", flag, BIG], capsys)
    assert rc == 2 and "too large" in err and len(err) < 300, err


def test_huge_generator_parameters(capsys):
    rc, _, err = call(g2pl_main, ["run", PROGRAMS / "cc.g2pl", "--graph", f"kron:{BIG}"], capsys)
    assert rc == 2 and "too large" in err and "internal error" not in err


@pytest.mark.parametrize("limit", [["--max-supersteps", "2"], ["--time-limit", "1e-9"]])
def test_stopped_runs_keep_their_statistics(tmp_path, capsys, limit):
    stats = tmp_path / "s.json"
    out = tmp_path / "o.json"
    rc, _, err = call(g2pl_main, ["run", PROGRAMS / "pagerank.g2pl", "--graph", "er:100:300", "--arg", "iters=50",
                                  "--arg", "damping=0.85", "--quiet", "--stats", stats, "--output", out, *limit],
                      capsys)
    assert rc == 1 and err.count("error:") == 1, err
    s = json.loads(stats.read_text())
    assert s["stopped"]["reason"] == limit[0][2:] and s["supersteps"] == len(s["per_superstep"]) >= 1
    assert not out.exists()


# ---------------------------------------------------------------- 7. the API reads files only when asked


def test_compile_takes_text_and_never_reads_a_path(tmp_path, monkeypatch):
    secret = write(tmp_path, "secret.g2pl", "p() { return 1; }  // SECRET-CONTENT")
    opened: list[str] = []
    real_open = open

    def spy(file, *a, **k):
        opened.append(str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr("builtins.open", spy)
    for text in ("/etc/passwd", str(secret), "secret.g2pl"):
        with pytest.raises(G2PLError) as e:
            g2pl.compile(text)
        assert "SECRET" not in e.value.render() and "root:" not in e.value.render()
    assert not [f for f in opened if "passwd" in f or "secret" in f]
    with pytest.raises(G2PLError, match="compile_file"):
        g2pl.compile(str(secret))
    assert g2pl.compile_file(secret).run(g2pl.load_graph("er:3:2", seed=1))["ret0"] == 1
    assert g2pl.compile(Path(secret)).procedures == ["p"]


def test_oversized_program_is_refused_unread(tmp_path):
    with pytest.raises(G2PLError, match="larger than"):
        g2pl.compile("p() { return 1; }" + " " * (17 * 2**20))
    big = tmp_path / "big.g2pl"
    with open(big, "wb") as f:
        f.truncate(17 * 2**20)
    with pytest.raises(G2PLError, match="larger than"):
        g2pl.compile_file(big)
