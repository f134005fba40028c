"""Structural fuzzing of the `.g2g` reader: mutated files of a few small graphs, loaded in-process and
(a sample) through the CLI.

    python bench/fuzz_g2g.py --cases 10000 --cli 100 --seed 0 --out bench/results/fuzz_g2g.md

Each case takes a valid `.g2g` file of one of the base graphs (undirected / directed, weighted or
not, int32 or int64 indices, isolated vertices, sparse IDs) and applies one to three mutations:
header bytes, the signature, the header length, JSON fields (sizes, flags, array dtypes, offsets and
counts, counts in `info`, odd JSON such as deep nesting), array entries (in range and out of range),
swapped or copied entries, flipped array bytes, truncation, appended bytes, edges changed without
their adjacency, valid files of a slightly different graph, and loading with the wrong `--directed`.

A case passes when the file is refused with a G2PLError of exit status 2, or when it loads and the
graph equals, array by array, the one built from the edge list it encodes (written as text and read
back by the edge-list reader), and a neighbour-sum program and BFS (plus SSSP when weighted) give
the same answers on both, in ID order and degree order. Anything else (another exception, an exit
status 1 error, a signal) is a crash; the case's file is kept under the work directory.

Cases run in worker processes (this file with --worker), so a signal ends one case, not the run;
the CLI sample runs `g2pl run` in subprocesses (a quarter with --np 2) and requires exit status 0 or
2, no traceback, and on 0 the same answers as in-process.  The CI-sized version is
tests/security/test_security_graph_files.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import harness
import numpy as np

import g2pl
from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.graph import graph as graph_mod
from g2pl.graph.binary import load_binary, save_graph
from g2pl.graph.graph import Graph, build_graph
from g2pl.graph.loaders import read_edge_rows

ROOT = harness.ROOT

SUM_SRC = "main(){ S = { sum [ id[u] | u <- nvals v ] | v <- V }; return S; }\n"
ARRAYS = ("ids", "src", "dst", "weight", "in_indptr", "in_nbr", "in_eid", "out_indptr", "out_nbr", "out_eid")
INT_ARRAYS = ("ids", "src", "dst", "in_indptr", "in_nbr", "in_eid", "out_indptr", "out_nbr", "out_eid")


# --------------------------------------------------------------------------- base graphs


@dataclass
class Base:
    name: str
    directed: bool
    weighted: bool
    graph: Graph
    blob: bytes
    head: dict
    hlen: int


def _graph(seed: int, directed: bool, weighted: bool, k: int, isolated: int = 0) -> Graph:
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10**9, size=k, replace=False))
    e = int(rng.integers(k, 3 * k))
    u, v = ids[rng.integers(0, k, e)], ids[rng.integers(0, k, e)]
    w = rng.integers(1, 9, e).astype(float) if weighted else None
    extra = np.arange(10**9, 10**9 + isolated) if isolated else None
    return build_graph(u, v, w, directed=directed, name=f"g{seed}", extra_ids=extra)


def base_graphs(workdir: Path) -> list[Base]:
    """The valid files every case starts from (built the same way in every process)."""
    small = build_graph(np.array([0, 1, 2, 3, 0, 4]), np.array([1, 2, 3, 0, 2, 5]), directed=False,
                        name="small")
    graphs: list[tuple[str, Graph]] = [
        ("small", small),
        ("undirected-weighted", _graph(1, False, True, 12, isolated=2)),
        ("directed", _graph(2, True, False, 10)),
        ("directed-weighted", _graph(3, True, True, 9, isolated=1)),
    ]
    limit = graph_mod.INDEX32_LIMIT
    graph_mod.INDEX32_LIMIT = 4  # the int64 index layout, on graphs small enough to fuzz
    try:
        graphs.append(("undirected-int64", _graph(4, False, False, 8)))
        graphs.append(("directed-int64", _graph(5, True, True, 7)))
    finally:
        graph_mod.INDEX32_LIMIT = limit
    out = []
    for name, g in graphs:
        path = workdir / f"base-{name}.g2g"
        save_graph(g, path)
        blob = path.read_bytes()
        hlen = int.from_bytes(blob[8:16], "little")
        out.append(Base(name, g.directed, g.weighted, g, blob, json.loads(blob[16:16 + hlen]), hlen))
    return out


# --------------------------------------------------------------------------- mutations


def _interesting_int(rng: np.random.Generator, n: int, m: int, cur: int) -> int:
    pool = [0, 1, -1, n - 1, n, n + 1, m - 1, m, m + 1, 2 * m, cur + 1, cur - 1, 2**31 - 1, 2**31, -2**31,
            2**62, 2**63 - 1, -2**63, int(rng.integers(0, max(n, 1))), int(rng.integers(0, max(m, 1)))]
    return int(pool[int(rng.integers(0, len(pool)))])


def _interesting_float(rng: np.random.Generator, cur: float) -> float:
    pool = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e308, 5e-324, cur * 2, float(rng.integers(1, 9))]
    return float(pool[int(rng.integers(0, len(pool)))])


def _put_header(buf: bytearray, head_bytes: bytes) -> None:
    buf[8:16] = len(head_bytes).to_bytes(8, "little")
    end = 16 + len(head_bytes)
    if end > len(buf):
        buf.extend(b"\0" * (end - len(buf)))
    buf[16:end] = head_bytes


def _arr(buf: bytearray, head: dict, name: str) -> tuple[np.ndarray, int]:
    """The array as the base file lays it out, cut to what the (perhaps truncated) buffer still holds."""
    dt, off, count = head["arrays"][name]
    count = max(0, min(count, (len(buf) - off) // np.dtype(dt).itemsize))
    return np.frombuffer(buf, dtype=dt, count=count, offset=min(off, len(buf))), off


def _m_header_byte(buf, base, rng):
    i = int(rng.integers(0, 16 + base.hlen))
    buf[i] ^= int(rng.integers(1, 256))


def _m_magic(buf, base, rng):
    magics = [b"G2PLGRF\x00", b"G2PLGRF\x02", b"G2PLGRX\x01", b"\0" * 8, b"PK\x03\x04abcd"]
    buf[0:8] = magics[int(rng.integers(0, len(magics)))]


def _m_hlen(buf, base, rng):
    v = [0, 1, base.hlen - 1, base.hlen + 1, base.hlen + 64, len(buf), len(buf) - 16, 2**20, 2**20 + 1,
         2**63, 2**64 - 1][int(rng.integers(0, 11))]
    buf[8:16] = int(v).to_bytes(8, "little")


def _m_json_field(buf, base, rng):
    head = json.loads(json.dumps(base.head))
    odd = [None, True, False, -1, 0, 1, 2**62, 2**64, 1.5, "7", [], {}, float("nan")]
    k = int(rng.integers(0, 8))
    if k == 0:
        key = ["n", "m", "directed", "weighted", "info", "arrays"][int(rng.integers(0, 6))]
        cur = head[key]
        if rng.random() < 0.5:
            head[key] = odd[int(rng.integers(0, len(odd)))]
        elif isinstance(cur, bool):
            head[key] = not cur
        elif isinstance(cur, int):
            head[key] = cur + int(rng.integers(-2, 3))
    elif k == 1:
        head.pop(["n", "m", "directed", "weighted", "info", "arrays"][int(rng.integers(0, 6))])
    elif k in (2, 3, 4):
        name = list(head["arrays"])[int(rng.integers(0, len(head["arrays"])))]
        entry = head["arrays"][name]
        j = int(rng.integers(0, 3))
        if j == 0:
            entry[0] = ["<i4", "<i8", ">i4", ">i8", "<f8", "|O", "<u4", "<i2", "x"][int(rng.integers(0, 9))]
        elif j == 1:
            others = [e[1] for e in head["arrays"].values()]
            entry[1] = [entry[1] + 1, entry[1] - 1, entry[1] + 64, entry[1] - 64, 0, 16, len(buf),
                        others[int(rng.integers(0, len(others)))], 2**70, -8][int(rng.integers(0, 10))]
        else:
            entry[2] = [entry[2] + 1, entry[2] - 1, 0, 2 * entry[2], 2**40, -1][int(rng.integers(0, 6))]
    elif k == 5:
        if rng.random() < 0.5:
            head["arrays"].pop(list(head["arrays"])[int(rng.integers(0, len(head["arrays"])))])
        else:
            head["arrays"][["weight", "out_nbr", "evil", "ids2"][int(rng.integers(0, 4))]] = ["<i8", 64, 1]
    elif k == 6:
        key = ["input_edges", "self_loops_dropped", "duplicates_merged", "isolated_vertices",
               "source_format"][int(rng.integers(0, 5))]
        if rng.random() < 0.5:
            head["info"][key] = odd[int(rng.integers(0, len(odd)))]
        elif key == "source_format":
            head["info"][key] = "x" * int(rng.integers(0, 200))
        else:
            head["info"][key] = int(head["info"].get(key, 0)) + int(rng.integers(-2, 3))
    else:
        head["extra_key"] = {"nested": [1, 2, 3]}
    _put_header(buf, json.dumps(head).encode())


def _m_json_odd(buf, base, rng):
    depth = int(rng.integers(1, 200_000))
    choices = [b"[" * depth + b"]" * depth, b"{\"a\":" * depth + b"1" + b"}" * depth, b"[]", b"\"x\"",
               b"null",
               b"NaN", b"1e999", b"9" * 5000, b"{\"n\": 1, \"n\": 2}", b"\xff\xfe{}", b"{", b""]
    _put_header(buf, choices[int(rng.integers(0, len(choices)))])


def _m_array_entry(buf, base, rng):
    name = list(base.head["arrays"])[int(rng.integers(0, len(base.head["arrays"])))]
    a, off = _arr(buf, base.head, name)
    if a.size == 0:
        return
    w = a.copy()
    i = int(rng.integers(0, a.size))
    if a.dtype.kind == "f":
        w[i] = _interesting_float(rng, float(w[i]))
    else:
        v = _interesting_int(rng, base.graph.n, base.graph.m, int(w[i]))
        info = np.iinfo(a.dtype)
        w[i] = v if info.min <= v <= info.max else int(rng.integers(0, base.graph.n))
    buf[off:off + w.nbytes] = w.tobytes()


def _m_array_swap(buf, base, rng):
    name = list(base.head["arrays"])[int(rng.integers(0, len(base.head["arrays"])))]
    a, off = _arr(buf, base.head, name)
    if a.size < 2:
        return
    w = a.copy()
    i, j = (int(x) for x in rng.choice(a.size, 2, replace=False))
    w[i], w[j] = w[j], w[i]
    if rng.random() < 0.5 and name in ("in_nbr", "in_eid", "out_nbr", "out_eid"):  # keep pairs together
        other = {"in_nbr": "in_eid", "in_eid": "in_nbr", "out_nbr": "out_eid", "out_eid": "out_nbr"}[name]
        b, off2 = _arr(buf, base.head, other)
        x = b.copy()
        x[i], x[j] = x[j], x[i]
        buf[off2:off2 + x.nbytes] = x.tobytes()
    buf[off:off + w.nbytes] = w.tobytes()


def _m_array_copy(buf, base, rng):
    names = list(base.head["arrays"])
    src = names[int(rng.integers(0, len(names)))]
    dst = names[int(rng.integers(0, len(names)))]
    a, off_a = _arr(buf, base.head, src)
    b, off_b = _arr(buf, base.head, dst)
    k = min(a.nbytes, b.nbytes, int(rng.integers(1, 65)))
    buf[off_b:off_b + k] = bytes(buf[off_a:off_a + k])


def _m_array_bytes(buf, base, rng):
    name = list(base.head["arrays"])[int(rng.integers(0, len(base.head["arrays"])))]
    a, off = _arr(buf, base.head, name)
    for _ in range(int(rng.integers(1, 4))):
        if a.nbytes:
            buf[off + int(rng.integers(0, a.nbytes))] ^= 1 << int(rng.integers(0, 8))


def _m_padding(buf, base, rng):
    """Bytes no array covers (after the header, alignment gaps): the file must still load."""
    spans = sorted((e[1], e[1] + e[2] * np.dtype(e[0]).itemsize) for e in base.head["arrays"].values())
    gaps = [(16 + base.hlen, spans[0][0])] + [(a[1], b[0]) for a, b in zip(spans, spans[1:], strict=False)]
    gaps = [g for g in gaps if g[1] > g[0]]
    if gaps:
        lo, hi = gaps[int(rng.integers(0, len(gaps)))]
        i = int(rng.integers(lo, hi))
        buf[i] = int(rng.integers(0, 256))


def _m_truncate(buf, base, rng):
    r = rng.random()
    cut = int(rng.integers(0, 17)) if r < 0.3 else int(rng.integers(0, len(buf))) if r < 0.8 else \
        len(buf) - int(rng.integers(1, 9))
    del buf[max(cut, 0):]


def _m_append(buf, base, rng):
    buf.extend(rng.integers(0, 256, int(rng.integers(1, 200))).astype(np.uint8).tobytes())


def _m_edge(buf, base, rng):
    """An edge endpoint changed to another vertex while the adjacency still lists the old edge."""
    if base.graph.m == 0:
        return
    name = "src" if rng.random() < 0.5 else "dst"
    a, off = _arr(buf, base.head, name)
    w = a.copy()
    i = int(rng.integers(0, a.size))
    w[i] = int(rng.integers(0, base.graph.n))
    buf[off:off + w.nbytes] = w.tobytes()


def _m_regraph(buf, base, rng, workdir: Path):
    """A valid file of a different graph (an edge dropped, a weight changed): it must load."""
    g = base.graph
    keep = np.ones(g.m, dtype=bool)
    if g.m > 1:
        keep[int(rng.integers(0, g.m))] = False
    u, v = g.ids[g.src[keep]], g.ids[g.dst[keep]]
    w = None
    if g.weighted:
        w = np.asarray(g.weight)[keep].copy()
        if w.size:
            w[int(rng.integers(0, w.size))] = float(rng.integers(0, 100)) / 4
    path = workdir / f"regraph-{os.getpid()}.g2g"
    limit = graph_mod.INDEX32_LIMIT
    if "int64" in base.name:
        graph_mod.INDEX32_LIMIT = 4
    try:
        h = build_graph(u, v, w, directed=g.directed, name="regraph", extra_ids=g.ids)
        save_graph(h, path)
    finally:
        graph_mod.INDEX32_LIMIT = limit
    buf[:] = path.read_bytes()
    path.unlink()


MUTATIONS: list[tuple[str, float, Callable]] = [
    ("header-byte", 1.0, _m_header_byte), ("magic", 0.3, _m_magic), ("header-length", 0.5, _m_hlen),
    ("json-field", 2.0, _m_json_field), ("json-odd", 0.4, _m_json_odd), ("array-entry", 3.0, _m_array_entry),
    ("array-swap", 2.0, _m_array_swap), ("array-copy", 0.7, _m_array_copy),
    ("array-bytes", 1.5, _m_array_bytes),
    ("padding", 0.6, _m_padding), ("truncate", 1.0, _m_truncate), ("append", 0.6, _m_append),
    ("edge", 1.0, _m_edge), ("regraph", 0.8, _m_regraph),
]


def make_case(seed: int, i: int, bases: list[Base], workdir: Path) -> tuple[bytes, list[str], bool, Base]:
    """Case `i` of run `seed`: (the file's bytes, mutation names, --directed to load with, its base)."""
    rng = np.random.default_rng([seed, i])
    base = bases[int(rng.integers(0, len(bases)))]
    buf = bytearray(base.blob)
    weights = np.array([w for _, w, _ in MUTATIONS])
    picked = [MUTATIONS[int(k)] for k in rng.choice(len(MUTATIONS), size=int(rng.choice([1, 1, 1, 2, 2, 3])),
                                                    p=weights / weights.sum())]
    # a fresh valid file replaces what came before it; the file's length changes last
    picked.sort(key=lambda mu: {"regraph": 0, "truncate": 2, "append": 2}.get(mu[0], 1))
    kinds = []
    for name, _, fn in picked:
        if name == "regraph":
            fn(buf, base, rng, workdir)
        else:
            fn(buf, base, rng)
        kinds.append(name)
    directed = base.directed
    if rng.random() < 0.03:
        directed = not directed
        kinds.append("wrong-directed")
    return bytes(buf), kinds, directed, base


# --------------------------------------------------------------------------- checking one case


_PROGRAMS: dict[str, g2pl.Program] = {}


def programs() -> dict[str, g2pl.Program]:
    if not _PROGRAMS:
        _PROGRAMS["sum"] = g2pl.compile(SUM_SRC)
        _PROGRAMS["bfs"] = g2pl.compile_file(ROOT / "programs" / "bfs.g2pl")
        _PROGRAMS["sssp"] = g2pl.compile_file(ROOT / "programs" / "sssp.g2pl")
    return _PROGRAMS


def reference(g: Graph, workdir: Path) -> Graph:
    """The graph the loaded file's edges encode, written as an edge list, read back and built anew
    (with the file's vertex set, which an edge list cannot hold when vertices are isolated)."""
    u, v = g.ids[g.src], g.ids[g.dst]
    w = np.asarray(g.weight) if g.weighted else None
    if g.m == 0:
        return build_graph(u, v, w, directed=g.directed, name="reference", extra_ids=g.ids)
    path = workdir / f"reference-{os.getpid()}.el"
    cols = [u.astype(str), v.astype(str)] + ([np.array([repr(float(x)) for x in w])] if w is not None else [])
    path.write_text("\n".join(" ".join(row) for row in zip(*cols, strict=True)) + "\n")
    ru, rv, rw, _ = read_edge_rows(str(path))
    path.unlink()
    return build_graph(ru, rv, rw, directed=g.directed, name="reference", extra_ids=g.ids)


def answers(g: Graph) -> dict[str, object]:
    """The programs' outputs on `g`, in ID order and degree order."""
    root = int(g.ids[0])
    out: dict[str, object] = {}
    for renumber in ("none", "degree"):
        out[f"sum/{renumber}"] = programs()["sum"].run(g, renumber=renumber).output()
        out[f"bfs/{renumber}"] = programs()["bfs"].run(g, args={"root": root}, renumber=renumber).output()
        if g.weighted:
            res = programs()["sssp"].run(g, args={"root": root}, renumber=renumber)
            out[f"sssp/{renumber}"] = res.output()
    return out


class Mismatch(AssertionError):
    """A file that loaded but is not the graph its edges encode."""


def compare(g: Graph, ref: Graph) -> None:
    if (g.n, g.m, g.directed, g.weighted) != (ref.n, ref.m, ref.directed, ref.weighted):
        raise Mismatch(f"shape {(g.n, g.m, g.directed, g.weighted)} != "
                       f"{(ref.n, ref.m, ref.directed, ref.weighted)}")
    for k in ARRAYS:
        x, y = np.asarray(getattr(g, k)), np.asarray(getattr(ref, k))
        if x.dtype != y.dtype or not np.array_equal(x, y):
            raise Mismatch(f"array {k} differs from the graph its edges encode")
    if g.info["isolated_vertices"] != ref.info["isolated_vertices"]:
        raise Mismatch("isolated vertex count differs")
    if answers(g) != answers(ref):
        raise Mismatch("program answers differ from the graph its edges encode")


def check_case(path: Path, directed: bool, workdir: Path) -> tuple[str, str]:
    """('refused' | 'loaded' | 'crash', detail) for the file at `path`, in this process."""
    try:
        g = load_binary(str(path), directed)
    except G2PLRuntimeError as e:
        return "crash", f"exit-1 error: {e}"
    except G2PLError as e:
        text = str(e)
        if "internal error" in text or "Traceback" in text or not e.file:
            return "crash", f"bad error: {text}"
        what = e.message.removeprefix("not a valid .g2g graph file: ")
        return "refused", re.sub(r"\b[0-9]+\b", "N", what)[:90]  # grouped by message, numbers left out
    except Exception as e:  # noqa: BLE001 - the point: nothing but a G2PLError may come out
        return "crash", f"{type(e).__name__}: {e}"
    try:
        compare(g, reference(g, workdir))
    except Mismatch as e:
        return "crash", f"mismatch: {e}"
    except Exception as e:  # noqa: BLE001
        return "crash", f"after loading: {type(e).__name__}: {e}"
    return "loaded", ""


def run_in_process(seed: int, start: int, count: int, workdir: Path,
                   emit: Callable[[dict], None], bases: list[Base] | None = None) -> None:
    bases = bases or base_graphs(workdir)
    path = workdir / f"case-{os.getpid()}.g2g"
    for i in range(start, start + count):
        data, kinds, directed, base = make_case(seed, i, bases, workdir)
        path.write_bytes(data)
        emit({"i": i, "start": True})
        outcome, detail = check_case(path, directed, workdir)
        if outcome == "crash":
            (workdir / f"crash-{seed}-{i}.g2g").write_bytes(data)
        emit({"i": i, "base": base.name, "kinds": kinds, "directed": directed, "outcome": outcome,
              "detail": detail})


# --------------------------------------------------------------------------- the CLI sample


def cli_case(path: Path, directed: bool, ranks: int, workdir: Path, expected: dict | None) -> tuple[str, str]:
    """`g2pl run` on the file in a subprocess: exit 0 with the in-process answers, or exit 2 cleanly."""
    prog = workdir / "sum.g2pl"
    prog.write_text(SUM_SRC)
    out = workdir / f"cli-{os.getpid()}.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-c", "import sys; from g2pl.cli import g2pl_main; sys.exit(g2pl_main())",
           "run", str(prog), "--graph", str(path), "--quiet", "--output", str(out), "--np", str(ranks),
           "--renumber", "none"] + (["--directed"] if directed else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return "crash", "timed out"
    if r.returncode < 0:
        return "crash", f"signal {signal.Signals(-r.returncode).name}"
    bad = "Traceback" in r.stderr or "internal error" in r.stderr
    if r.returncode == 2 and not bad and r.stderr.strip():
        return "refused", r.stderr.strip().splitlines()[0][:120]
    if r.returncode == 0 and not bad:
        got = json.loads(out.read_text())
        if expected is not None and got != expected:
            return "crash", "CLI answer differs from the in-process answer"
        return "loaded", ""
    return "crash", f"exit {r.returncode}: {r.stderr.strip()[-300:]}"


# --------------------------------------------------------------------------- driver


def _worker_main(a: argparse.Namespace) -> int:
    workdir = Path(a.workdir)

    def emit(rec: dict) -> None:
        sys.stdout.write(json.dumps(rec) + "\n")
        sys.stdout.flush()

    run_in_process(a.seed, a.start, a.count, workdir, emit)
    return 0


def run_workers(seed: int, cases: int, workers: int, batch: int, workdir: Path) -> list[dict]:
    """All cases in worker processes, `workers` at a time; a worker killed by a signal is a crash of the
    case it was on, and the rest of its batch goes to a new worker."""
    pending = [(s, min(batch, cases - s)) for s in range(0, cases, batch)]
    results: dict[int, dict] = {}
    running: list[tuple[subprocess.Popen, int, int, Path]] = []
    me = [sys.executable, str(Path(__file__).resolve()), "--worker", "--seed", str(seed),
          "--workdir", str(workdir)]
    done = 0
    while pending or running:
        while pending and len(running) < workers:
            s, c = pending.pop(0)
            log = workdir / f"worker-{s}.jsonl"
            with open(log, "w") as f:
                p = subprocess.Popen([*me, "--start", str(s), "--count", str(c)], stdout=f, cwd=ROOT)
            running.append((p, s, c, log))
        time.sleep(0.2)
        for item in list(running):
            p, s, c, log = item
            if p.poll() is None:
                continue
            running.remove(item)
            last = None
            for line in log.read_text().splitlines():
                rec = json.loads(line)
                if rec.get("start"):
                    last = rec["i"]
                else:
                    results[rec["i"]] = rec
                    last = None
            missing = [i for i in range(s, s + c) if i not in results]
            if missing:  # the worker died: on case `last` if it had begun one, else before the first missing
                first = last if last is not None else missing[0]
                how = signal.Signals(-p.returncode).name if p.returncode < 0 else f"exit {p.returncode}"
                results[first] = {"i": first, "outcome": "crash", "detail": f"worker died: {how}",
                                  "kinds": []}
                if first + 1 < s + c:
                    pending.insert(0, (first + 1, s + c - first - 1))
            done = len(results)
            print(f"\r{done}/{cases} cases", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return [results[i] for i in sorted(results)]


def run_cli_sample(seed: int, results: list[dict], count: int, workdir: Path) -> list[dict]:
    """`count` cases again through the CLI: half among those that loaded, half among those refused."""
    rng = np.random.default_rng([seed, 10**6])
    loaded = [r["i"] for r in results if r["outcome"] == "loaded"]
    refused = [r["i"] for r in results if r["outcome"] == "refused"]
    k = min(count // 2, len(loaded))
    pick = list(rng.permutation(loaded)[:k]) + list(rng.permutation(refused)[:count - k])
    bases = base_graphs(workdir)
    out = []
    for j, i in enumerate(sorted(int(x) for x in pick)):
        data, kinds, directed, _ = make_case(seed, i, bases, workdir)
        path = workdir / f"cli-case-{i}.g2g"
        path.write_bytes(data)
        expected = None
        try:
            g = load_binary(str(path), directed)
            res = programs()["sum"].run(reference(g, workdir), renumber="none")
            expected = json.loads(json.dumps(res.output()))
        except G2PLError:
            pass
        ranks = 2 if j % 4 == 3 else 1
        outcome, detail = cli_case(path, directed, ranks, workdir, expected)
        if outcome != "crash":
            path.unlink()
        out.append({"i": i, "kinds": kinds, "ranks": ranks, "outcome": outcome, "detail": detail})
        print(f"\rCLI {j + 1}/{len(pick)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def report(command: str, seed: int, results: list[dict], cli: list[dict], seconds: float) -> str:
    outcomes = Counter(r["outcome"] for r in results)
    by_kind: dict[str, Counter] = {}
    for r in results:
        for k in set(r.get("kinds", [])):
            by_kind.setdefault(k, Counter())[r["outcome"]] += 1
    cli_out = Counter(r["outcome"] for r in cli)
    crashes = [r for r in results + cli if r["outcome"] == "crash"]
    lines = [
        "# Fuzzing the `.g2g` reader", "",
        f"Command: `{command}` (seed {seed}, {seconds:.0f} s).", "",
        "Mutated `.g2g` files of six small graphs (undirected/directed, weighted or not, int32 and int64",
        "indices, isolated vertices, sparse IDs); see the docstring of `bench/fuzz_g2g.py` for the mutations",
        "and the oracle. A case passes when it is refused with a G2PLError (exit status 2), or loads as",
        "exactly the graph that its edges encode (rebuilt from them as an edge list) with the same answers",
        "from a neighbour-sum program, BFS and (weighted) SSSP, in ID and degree order.", "",
        "| in-process cases | loaded and agreed | refused (exit 2) | crashes, signals, internal errors |",
        "|---:|---:|---:|---:|",
        f"| {len(results)} | {outcomes['loaded']} | {outcomes['refused']} | {outcomes['crash']} |", "",
        "| CLI cases (`g2pl run`, a quarter with `--np 2`) | exit 0, same answers | exit 2, no traceback "
        "| other |",
        "|---:|---:|---:|---:|",
        f"| {len(cli)} | {cli_out['loaded']} | {cli_out['refused']} | {cli_out['crash']} |", "",
        "Cases per mutation (a case may carry several):", "",
        "| mutation | cases | loaded | refused | crashes |", "|---|---:|---:|---:|---:|",
    ]
    for k in sorted(by_kind):
        c = by_kind[k]
        lines.append(f"| {k} | {sum(c.values())} | {c['loaded']} | {c['refused']} | {c['crash']} |")
    refusals = Counter(r["detail"] for r in results if r["outcome"] == "refused")
    lines += ["", "Most frequent refusals (message start):", ""]
    lines += [f"* {n} x `{msg}`" for msg, n in refusals.most_common(12)]
    if crashes:
        lines += ["", "Crashes:", ""]
        lines += [f"* case {r['i']} {r.get('kinds')}: {r['detail']}" for r in crashes[:50]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, out=False)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--cli", type=int, default=100, help="cases run again through `g2pl run`")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--out", help="write the totals (Markdown) here")
    ap.add_argument("--workdir", help="where case files (and any crash) are kept; default: a new temporary "
                    "directory")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return _worker_main(a)
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="fuzz_g2g-"))
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = run_workers(a.seed, a.cases, a.workers, a.batch, workdir)
    cli = run_cli_sample(a.seed, results, a.cli, workdir) if a.cli else []
    command = harness.command(__file__, argv)
    text = report(command, a.seed, results, cli, time.perf_counter() - t0)
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    print(f"case files and any crash: {workdir}", file=sys.stderr)
    return 1 if any(r["outcome"] == "crash" for r in results + cli) else 0


if __name__ == "__main__":
    sys.exit(main())
