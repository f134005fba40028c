"""Reading edge-list text: NumPy's tokenizer alone against the compiled pass first (g2pl/io/textrows.py).

    python bench/text_parse.py [--scale 20] [--repeat 5] [--quick] [--out bench/results]

Writes a Kronecker graph's edges (g2pl's generator, original IDs) as text, `u v` and `u v w` (weights
of 6 digits written `123456e-6`), then reads each file with `g2pl.graph.loaders.read_edge_rows` in a
fresh process (`--child`) with G2PL_NUMBA=0 and G2PL_NUMBA=1, interleaved, the order rotated each
repeat: a fresh process each time, as a `g2pl run` reads its graph once, so the compiled side's
numba loading (about 0.4 s) is counted.  Reports every time, the medians and whether both sides
gave the same rows (a digest of the arrays).  Writes text_parse.{md,json}.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import harness
import numpy as np

SIDES = {"NumPy only": "0", "compiled pass": "1"}


def child(path: str) -> None:
    """Read `path` once; print the seconds and the rows' digest as JSON."""
    from g2pl.graph import loaders
    from g2pl.runtime import cpu_kernels  # noqa: F401  (offers the compiled pass: g2pl.io.compiled)

    t0 = time.perf_counter()
    u, v, w, _ = loaders.read_edge_rows(path)
    took = time.perf_counter() - t0
    h = hashlib.sha256()
    for a in (u, v, w):
        if a is not None:
            h.update(np.ascontiguousarray(a).tobytes())
    print(json.dumps({"seconds": took, "rows": int(u.size), "digest": h.hexdigest()[:16]}))


def write_files(scale: int, seed: int, folder: Path) -> dict[str, Path]:
    """The graph's edges as `u v` and `u v w` text files in `folder`."""
    from g2pl.graph.generators import generate
    from g2pl.io.arraytext import Rows

    g = generate(f"kron:{scale}", seed=seed)
    u, v = g.ids[g.src], g.ids[g.dst]
    w = np.random.default_rng(seed).integers(0, 10**6, u.size)
    files = {"u v": folder / "edges.el", "u v w": folder / "weighted.el"}
    with open(files["u v"], "wb") as f, open(files["u v w"], "wb") as fw:
        for lo in range(0, u.size, 1 << 20):
            s = slice(lo, lo + (1 << 20))
            rows = Rows(u[s].size).ints(u[s]).const(b" ").ints(v[s])
            f.write(rows.const(b"\n").text())
            fw.write(Rows(u[s].size).ints(u[s]).const(b" ").ints(v[s]).const(b" ").ints(w[s]).const(b"e-6\n").text())
    return files


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="kron:14, 2 repeats", repeat=5, seed=1)
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--child", help=None)
    a = ap.parse_args(argv)
    if a.child:
        child(a.child)
        return 0
    if a.quick:
        a.scale, a.repeat = 14, 2
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(a.scale, a.seed, Path(tmp))
        sizes = {k: p.stat().st_size for k, p in files.items()}
        runs: dict[str, dict[str, list[dict]]] = {k: {} for k in files}
        for kind, path in files.items():
            def read(numba: str, path: Path = path) -> dict:
                r = harness.run_child([sys.executable, __file__, "--child", str(path)], timeout=1800,
                                      env=dict(os.environ, G2PL_NUMBA=numba))
                if r["rc"] != 0:
                    raise RuntimeError(r["out"][-2000:])
                return json.loads(r["out"].strip().splitlines()[-1])
            got = harness.interleave({side: (lambda n=numba: read(n)) for side, numba in SIDES.items()}, a.repeat)
            runs[kind] = got
    m = harness.machine()
    lines = [f"# Reading edge-list text: kron:{a.scale}", "",
             f"Machine: {harness.describe(m)}; commit {harness.git_commit()}; {harness.now()}.", "",
             f"Command: `{harness.command(__file__, argv)}`", "",
             "Seconds of `read_edge_rows` in a fresh process (numba's loading counted on the compiled side), "
             f"{a.repeat} interleaved repeats.", "",
             "| file | lines | MB | NumPy only: runs | median | compiled pass: runs | median | same rows |",
             "|---|---:|---:|---|---:|---|---:|---|"]
    data = {"machine": m, "commit": harness.git_commit(), "command": harness.command(__file__, argv),
            "when": harness.now(), "scale": a.scale, "runs": runs, "bytes": sizes}
    for kind, got in runs.items():
        cols = []
        for side in SIDES:
            secs = [r["seconds"] for r in got[side]]
            cols += [", ".join(f"{s:.2f}" for s in secs), f"{harness.median(secs):.2f}"]
        same = len({r["digest"] for side in SIDES for r in got[side]}) == 1
        rows = got["NumPy only"][0]["rows"]
        lines.append(f"| `{kind}` | {rows:,} | {sizes[kind] / 1e6:.0f} | {' | '.join(cols)} | {'yes' if same else 'NO'} |")
    harness.publish(a.out, harness.stem("text_parse", a.quick), lines, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
