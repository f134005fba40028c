"""Edge-list text reader: the block-wise fast tier against the whole-file `np.loadtxt` reader.

    python bench/archive/text_reader.py [--scale 20] [--old-rev 0f45377] [--repeat 5] [--out bench/results]

Writes a Kronecker graph's edges (from g2pl's own generator) as text with
NumPy, unweighted `u v` and weighted `u v w` (random weights, 4 significant
digits), then times the parse (`_check_text` to `_load_rows`, what
`load_edge_list` does before `build_graph`) of the reader at `--old-rev`
(loaded from git into a temporary module) and of this tree's reader in one
process (allocator tuned as the CLI does), interleaved, the side going first
alternating, and reports medians; both sides' arrays are compared for equality.
Then each side parses each file once more in a fresh process for its peak
resident memory (VmHWM). Writes text_reader.{md,json}.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the harness

import harness  # noqa: E402

from g2pl.graph import alloc  # noqa: E402
from g2pl.graph import loaders as new_loaders  # noqa: E402
from g2pl.graph.generators import generate  # noqa: E402
from g2pl.graph.graph import MAX_VERTEX_ID  # noqa: E402
from g2pl.graph.memory import temporaries_returned  # noqa: E402


def old_module(rev: str, tmp: str):
    """The loaders module as of `rev`, imported from a temporary file."""
    src = subprocess.run(["git", "show", f"{rev}:g2pl/graph/loaders.py"], check=True,
                         capture_output=True, text=True).stdout
    path = os.path.join(tmp, "old_loaders.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("old_loaders", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_loaders"] = mod
    spec.loader.exec_module(mod)
    return mod


def parse(mod, path: str):
    """What load_edge_list does before build_graph: read, check, parse the rows."""
    with temporaries_returned():
        return _parse(mod, path)


def _parse(mod, path: str):
    if hasattr(mod, "read_edge_rows"):
        return mod.read_edge_rows(path)[:3]
    # a revision from before read_edge_rows: the same steps through its private helpers
    data, as_file = mod._check_text(path, mod._read_bytes(path))
    offset, lineno, body = mod._next_data_line(data, 0, 1)
    comma = "," in body
    ncols = len(mod._split(body, comma))
    idb = (0, MAX_VERTEX_ID, "vertex ID")
    table = mod._Table(path=path, data=data, offset=offset, lineno=lineno, ncols=ncols, comma=comma,
                       bounds=(idb, idb), col_desc="'u v'" if ncols == 2 else "'u v weight'",
                       as_file=as_file)
    return mod._load_rows(table)


def write_files(scale: int, tmp: str) -> dict[str, str]:
    g = generate(f"kron:{scale}", directed=True, seed=0)
    u, v = g.ids[g.src], g.ids[g.dst]
    w = np.random.default_rng(1).random(u.size)
    paths = {"u v": os.path.join(tmp, "plain.el"), "u v w": os.path.join(tmp, "weighted.el")}
    with open(paths["u v"], "w") as f:
        f.write(f"# kron:{scale}\n")
        np.savetxt(f, np.stack([u, v], 1), fmt="%d %d")
    with open(paths["u v w"], "w") as f:
        f.write(f"# kron:{scale} with weights\n")
        np.savetxt(f, np.column_stack([u, v, w]), fmt="%d %d %.4g")
    return paths


def peak_mib(side: str, path: str, rev: str) -> int:
    """Peak RSS of one parse in a fresh process."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", side, path, rev], check=True,
                         capture_output=True, text=True).stdout
    return int(out.split()[-1])


def child(side: str, path: str, rev: str) -> None:
    alloc.tune()
    with tempfile.TemporaryDirectory() as tmp:
        mod = old_module(rev, tmp) if side == "old" else new_loaders
        rows = parse(mod, path)
        del rows
    # VmHWM, not ru_maxrss: the latter keeps the forking parent's size across exec
    with open("/proc/self/status") as f:
        hwm = next((int(x.split()[1]) for x in f if x.startswith("VmHWM:")), None)
    print((hwm or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) // 1024)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
        return
    alloc.tune()
    ap = harness.parser(__doc__, repeat=5)
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--old-rev", default="0f45377")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = old_module(args.old_rev, tmp)
        paths = write_files(args.scale, tmp)
        rows = []
        for kind, path in paths.items():
            times: dict[str, list[float]] = {"old": [], "new": []}
            same = True
            for r in range(args.repeat):
                got = {}
                for name, mod in harness.rotated([("old", old), ("new", new_loaders)], r):
                    t, got[name] = harness.timed(parse, mod, path)
                    times[name].append(t)
                for a, b in zip(got["old"], got["new"], strict=True):
                    same = same and (a is None and b is None or bool(np.array_equal(a, b)))
                del got
            with open(path, "rb") as f:
                lines = f.read().count(b"\n")
            peaks = {side: peak_mib(side, path, args.old_rev) for side in ("old", "new")}
            rows.append({"old_peak_mib": peaks["old"], "new_peak_mib": peaks["new"], "file": kind, "lines": lines, "bytes": os.path.getsize(path),
                         "old_s": harness.median(times["old"]), "new_s": harness.median(times["new"]),
                         "old_all": times["old"], "new_all": times["new"], "same": same})
    md = [f"# Edge-list text reader, kron:{args.scale} (old = {args.old_rev}, new = this tree)", "",
          f"Parse only (read + check + rows), one process, interleaved, {args.repeat} repeats, medians.", "",
          "| file | lines | MB | old (s) | new (s) | new/old | old peak MiB | new peak MiB | same arrays |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        md.append(f"| `{r['file']}` | {r['lines']:,} | {r['bytes'] / 1e6:.0f} | {r['old_s']:.3f} | "
                  f"{r['new_s']:.3f} | {r['new_s'] / r['old_s']:.2f} | {r['old_peak_mib']} | {r['new_peak_mib']} | "
                  f"{r['same']} |")
    harness.write_report(args.out, "text_reader", "\n".join(md) + "\n",
                         {"scale": args.scale, "old_rev": args.old_rev, "repeat": args.repeat, "rows": rows})
    print("\n".join(md))


if __name__ == "__main__":
    main()
