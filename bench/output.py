"""Writing results: a 16M-edge edge-valued result as .npz, JSON, CSV and Parquet, and --output's cost in a run.

How: each (format, value type) is written in a fresh process (`--child`), from a synthetic result of
`--edges` edges over 2^20 vertices (scattered IDs, sorted u, random v; int values 0..99 or float
values in thirds), through the writer `g2pl run --output` uses (g2pl.results.streamed.write_output).
The child reports the write's wall time, its CPU time (user + system: on a busy machine the wall time
mostly measures the wait for a core), the peak resident memory during the write (the high-water mark
reset just before it) against the bytes of the result's arrays (IDs, endpoints, values), and the
file's size; every file is read back and checked against the arrays.  Files go to `--dir` (default:
a temporary directory on the disk of /tmp) and, with `--tmpfs`, also to /dev/shm, which separates the
formatting from the disk.  Then `g2pl run programs/bfs.g2pl --graph kron:20` with and without
`--output out.npz` / `out.json`, interleaved, `--repeat` times: what the output adds to a run.

`--values random` writes floats that hardly repeat (standard normal, times 10**k for k from -30 to
30: what PageRank or Jaccard values are like) instead of thirds, whose few distinct values the array
writer formats once each.  `--writer compiled` writes as a run that has loaded numba's kernels already
does (G2PL_NUMBA=1, the compiled row writer loaded before the write is timed); `auto` (default) as a
run that has not (the writer loads them itself for a result of many floats: FLOATS_TO_LOAD in
g2pl/runtime/cpu_kernels.py, its loading timed with the write); `array` without numba (G2PL_NUMBA=0).

    python bench/output.py [--quick] [--edges N] [--tmpfs] [--repeat 3] [--values thirds|random]
                           [--writer auto|array|compiled]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import harness
import numpy as np

FORMATS = ("npz", "json", "csv", "parquet")


def _synthetic(edges: int, elem: str, seed: int, values: str = "thirds"):
    """Shares of a result with one edge value over `edges` edges (and the arrays, for checking)."""
    from g2pl.results.streamed import Share
    from g2pl.runtime.output import RankPart

    class Where:  # what RankPart reads of a whole graph: IDs, and each edge's endpoints as vertex indices
        pass

    rng = np.random.default_rng(seed)
    n = 1 << 20
    w = Where()
    w.ids = np.sort(rng.choice(1 << 26, n, replace=False)).astype(np.int64)  # scattered, not 0..n-1
    w.src = np.sort(rng.integers(0, n, edges))
    w.dst = rng.integers(0, n, edges)
    if elem == "int":
        data = rng.integers(0, 100, edges)
    elif values == "thirds":
        data = rng.integers(1, 97, edges) / 3
    else:
        data = rng.standard_normal(edges) * 10.0 ** rng.integers(-30, 31, edges)
    return [Share("W", "edge", elem, RankPart("edge", elem, data, w))], w, data


def _hwm() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _check(path: Path, fmt: str, w, data: np.ndarray) -> bool:
    """The file read back holds the arrays (JSON and CSV: a sample of rows, every row counted)."""
    u, v = w.ids[w.src], w.ids[w.dst]
    if fmt == "npz":
        with np.load(path) as z:
            return bool(np.array_equal(z["u"], u) and np.array_equal(z["v"], v) and np.array_equal(z["values/W"], data))
    if fmt == "parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path)
        return bool(np.array_equal(t.column("u").to_numpy(), u) and np.array_equal(t.column("W").to_numpy(), data))
    rng = np.random.default_rng(0)
    pick = set(rng.integers(0, data.size, 200).tolist()) | {0, data.size - 1}
    rows = 0
    with open(path, "rb") as f:
        if fmt == "csv":
            f.readline()
            for i, line in enumerate(f):
                rows += 1
                if i in pick:
                    a, b, x = line.decode().rstrip("\n").split(",")
                    if (int(a), int(b), float(x)) != (u[i], v[i], data[i]):
                        return False
            return rows == data.size
        # JSON, read line by line (parsed whole it would take gigabytes): after the line `"value": [`,
        # entry i is the five lines "[", "u,", "v,", "x", "]," (indented)
        for line in f:
            if line.strip() == b'"value": [':
                break
        entry: list[bytes] = []
        for line in f:
            if not entry and line.strip() in (b"]", b"}"):
                break
            entry.append(line.strip().rstrip(b","))
            if len(entry) == 5:
                if rows in pick:
                    got = (int(entry[1]), int(entry[2]), json.loads(entry[3]))
                    if entry[0] != b"[" or got != (u[rows], v[rows], data[rows].item()):
                        return False
                rows += 1
                entry = []
    return rows == data.size


def child(fmt: str, elem: str, edges: int, directory: str, seed: int, values: str, writer: str) -> dict:
    """One write in this process; its numbers as JSON on stdout."""
    from g2pl.results.streamed import write_output

    if writer == "compiled":  # as after a run's kernels: numba and the row writer loaded before the write
        from g2pl.io.arraytext import Rows
        from g2pl.runtime import cpu_kernels

        Rows(1, cpu_kernels.row_writer()).ints(np.zeros(1, np.int64)).value("float", np.ones(1), (b"", b"", b"")).text()
    shares, w, data = _synthetic(edges, elem, seed, values)
    arrays = w.ids.nbytes + w.src.nbytes + w.dst.nbytes + data.nbytes
    path = Path(directory) / f"result.{fmt}"
    base = _hwm()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the high-water mark: the peak below is the write's
        reset = True
    except OSError:
        reset = False
    before = os.sysconf("SC_PAGE_SIZE") * int(Path("/proc/self/statm").read_text().split()[1])
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    write_output(path, "bench", shares)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    peak = _hwm() if reset else max(base, _hwm())
    size = path.stat().st_size
    ok = _check(path, fmt, w, data)
    path.unlink()
    return {"format": fmt, "type": elem, "edges": edges, "wall_s": wall,
            "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            "rss_before": before, "peak_rss": peak, "arrays_bytes": arrays, "file_bytes": size, "ok": ok,
            "peak_over_arrays": peak / arrays, "values": values, "writer": writer}


def _run_child(fmt: str, elem: str, edges: int, directory: str, seed: int, values: str, writer: str) -> dict:
    cmd = [sys.executable, __file__, "--child", fmt, "--type", elem, "--edges", str(edges), "--dir", directory,
           "--seed", str(seed), "--values", values, "--writer", writer]
    numba = {"compiled": "1", "array": "0"}.get(writer, os.environ.get("G2PL_NUMBA", "auto"))
    env = dict(os.environ, G2PL_NUMBA=numba)
    r = harness.run_child(cmd, timeout=1800, env=env)
    if r["rc"] != 0:
        return {"format": fmt, "type": elem, "edges": edges, "error": r["out"][-2000:], "ok": False}
    return json.loads(r["out"].strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="2^20 edges, kron:14, 1 repeat", repeat=3, seed=1)
    ap.add_argument("--edges", type=int, default=1 << 24)
    ap.add_argument("--graph", default="kron:20", help="graph of the end-to-end BFS runs")
    ap.add_argument("--dir", default=None, help="where the files are written (default: a temporary directory)")
    ap.add_argument("--tmpfs", action="store_true", help="also write to /dev/shm (memory, no disk)")
    ap.add_argument("--formats", default=",".join(FORMATS), help="which formats (comma-separated)")
    ap.add_argument("--types", default="int,float", help="which value types: int, float (comma-separated)")
    ap.add_argument("--no-run", action="store_true", help="skip the end-to-end g2pl run timings")
    ap.add_argument("--child", choices=FORMATS, help=None)
    ap.add_argument("--type", default="int", choices=("int", "float"))
    ap.add_argument("--values", default="thirds", choices=("thirds", "random"), help="the float values")
    ap.add_argument("--writer", default="auto", choices=("auto", "array", "compiled"), help="the text writer")
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.type, a.edges, a.dir, a.seed, a.values, a.writer)))
        return 0
    if a.quick:
        a.edges, a.graph, a.repeat = 1 << 20, "kron:14", 1
    import importlib.util

    formats = [f for f in a.formats.split(",") if f != "parquet" or importlib.util.find_spec("pyarrow") is not None]
    types = a.types.split(",")
    if not set(formats) <= set(FORMATS) or not set(types) <= {"int", "float"} or not formats or not types:
        ap.error(f"--formats: some of {', '.join(FORMATS)}; --types: int and/or float")
    places = [("disk", a.dir)] + ([("tmpfs", "/dev/shm")] if a.tmpfs and Path("/dev/shm").is_dir() else [])
    writes = []
    for where, d in places:
        tmp = tempfile.mkdtemp(prefix="g2pl-bench-output-", dir=d)
        try:
            for elem in types if where == "disk" else types[:1]:
                for fmt in formats:
                    harness.log(f"{where}: {fmt} ({elem}), {a.edges} edges")
                    writes.append({"where": where, **_run_child(fmt, elem, a.edges, tmp, a.seed, a.values, a.writer)})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # end to end: a run with and without --output
    g2pl = harness.g2pl_command()
    tmp = tempfile.mkdtemp(prefix="g2pl-bench-output-", dir=a.dir)
    base = [*g2pl, "run", str(harness.ROOT / "programs" / "bfs.g2pl"), "--graph", a.graph, "--seed", str(a.seed),
            "--arg", "root=1", "--quiet"]
    jobs = {"no output": lambda: harness.run_child(base, timeout=1800),
            "--output out.npz": lambda: harness.run_child([*base, "--output", f"{tmp}/out.npz"], timeout=1800),
            "--output out.json": lambda: harness.run_child([*base, "--output", f"{tmp}/out.json"], timeout=1800)}
    try:
        runs = {} if a.no_run else harness.interleave(jobs, a.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    e2e = {k: {"wall_s": [r["wall_s"] for r in rs], "rc": [r["rc"] for r in rs],
               "median_s": harness.median([r["wall_s"] for r in rs])} for k, rs in runs.items()}

    m = harness.machine()
    res = {"edges": a.edges, "writes": writes, "end_to_end": {"graph": a.graph, **e2e}, "machine": m,
           "commit": harness.git_commit(), "command": harness.command(__file__, argv), "when": harness.now()}
    mb = 1 << 20
    lines = [f"# Writing results: {a.edges:,} edges", "",
             f"Machine: {harness.describe(m)}; commit {res['commit']}; {res['when']}.", "",
             f"Command: `{res['command']}`; float values: {a.values}; text writer: {a.writer}.", "",
             "Wall time is the write's (file replaced atomically, fsync included); CPU time is the process's "
             "user + system time during it (a busy machine stretches the wall time, not this). Peak: the "
             "resident high-water mark during the write; arrays: IDs, endpoints and values held before it.", "",
             "| where | values | format | wall s | CPU s | file MB | arrays MB | peak RSS MB | peak / arrays | read back |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for w in writes:
        if "error" in w:
            lines.append(f"| {w['where']} | {w['type']} | {w['format']} | failed | | | | | | {w['error'][-200:]!r} |")
            continue
        lines.append(f"| {w['where']} | {w['type']} | {w['format']} | {w['wall_s']:.2f} | {w['cpu_s']:.2f} | "
                     f"{w['file_bytes'] / mb:.0f} | {w['arrays_bytes'] / mb:.0f} | {w['peak_rss'] / mb:.0f} | "
                     f"{w['peak_over_arrays']:.2f} | {'ok' if w['ok'] else 'WRONG'} |")
    if e2e:
        lines += ["", f"`g2pl run programs/bfs.g2pl --graph {a.graph} --arg root=1` (whole process, median of "
                  f"{a.repeat}):", "", "| run | median wall s | runs |", "|---|---:|---|"]
    for k, v in e2e.items():
        lines.append(f"| {k} | {v['median_s']:.2f} | {', '.join(f'{x:.2f}' for x in v['wall_s'])} |")
    md = "\n".join(lines) + "\n"
    harness.write_report(a.out, harness.stem("output", a.quick), md, res)
    print(md)
    failed = any(not w.get("ok") for w in writes) or any(rc != 0 for v in e2e.values() for rc in v["rc"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
