"""bench/gpu_check.sh, end to end, on the CPU: bench/gpu_rehearsal.py runs it on the strict CuPy stand-in.

The one command a GPU machine runs must leave every output file, with the benchmark rows present and
checked (the compiled and hand-written CuPy answers against each other on the bench graph, against
the NumPy backend on the reference graph), and the rehearsal must print its GPU time prediction.
Small graphs and a few GPU tests keep it well under a minute.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_util import mpi_available

ROOT = Path(__file__).resolve().parents[2]
FILES = ("summary.txt", "env.txt", "tests.log", "bench.log", "gpu_bench.md", "gpu_bench.json", "np2.log",
         "np2_stats.json")
TESTS_K = "(gpu_matches_numpy and bfs and not parent) or (gpu_equals and kron12)"



def _checked(row: dict) -> bool:
    """Compared with another implementation's answer (whatever the verdict: the backend is work in progress)."""
    chk = row.get("check", "")
    return bool(row.get("checked_against")) and (chk == "ok" or chk.startswith("MISMATCH"))


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and timeout")
def test_the_rehearsal_leaves_every_file_with_checked_rows(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_rehearsal.py"), "--out", str(tmp_path),
                        "--graph", "kron:9", "--ref-graph", "kron:8", "--np2-graph", "kron:8", "--repeat", "1",
                        "--tests-k", TESTS_K, "--no-rest", "--calibration-scale", "14"],
                       capture_output=True, text=True, timeout=170, cwd=str(ROOT))
    out = r.stdout + r.stderr
    assert r.returncode in (0, 1), out
    expected = FILES if mpi_available() else tuple(f for f in FILES if f != "np2_stats.json")  # written by the 2 ranks
    assert [f for f in expected if not (tmp_path / f).exists()] == [], out
    summary = (tmp_path / "summary.txt").read_text()
    for step in ("deps", "env", "bench", "tests", "refs", "np2"):
        assert any(line.split()[:1] == [step] and "rc=" in line for line in summary.splitlines()), (step, summary)
    assert "OVERALL:" in summary and "tests-rest" not in summary.replace("# tests-rest", "")
    assert "passed" in summary  # the GPU tests ran on the stand-in and said so

    res = json.loads((tmp_path / "gpu_bench.json").read_text())
    assert res["running"] is None and res["standin"]
    graphs = {g["label"]: g for g in res["graphs"]}
    bench, refs = graphs["bench"], graphs["refs"]
    assert bench["graph"] == "kron:9" and refs["graph"] == "kron:8"
    rows = {(x["algo"], x["impl"]): x for x in bench["rows"]}
    assert set(rows) == {(a, i) for a in ("bfs", "pagerank") for i in ("compiled cupy", "hand-written cupy")}
    for (_algo, impl), row in rows.items():
        assert _checked(row), row
        assert row["checked_against"] == ({"compiled cupy": "hand-written cupy"}.get(impl, "compiled cupy"))
        assert row["rate"] > 0 and row["syncs"] >= 1 and row["time_s"] > 0
        assert row["d2h_bytes"] >= 8 * bench["n"]  # the answer's copy to the host, on both sides
    assert rows[("bfs", "hand-written cupy")]["device_s"] is not None
    ref_rows = {(x["algo"], x["impl"]): x for x in refs["rows"]}
    assert {a for a, _ in ref_rows} == {"bfs", "pagerank", "cc", "sssp"}
    for (_algo, impl), row in ref_rows.items():
        if impl == "compiled numpy":
            assert row["check"] == "reference"
        else:
            assert _checked(row) and row["checked_against"] == "compiled numpy", row
    assert ref_rows[("bfs", "hand-written cupy")]["check"] == "ok"
    assert ref_rows[("pagerank", "hand-written cupy")]["check"] == "ok"
    assert "kron:9" in summary and "check" in summary  # the rows in summary.txt too

    assert "Predicted times on one H100" in r.stdout and "Assumptions:" in r.stdout
    for step in ("bench", "tests", "refs", "np2"):
        assert any(line.strip().startswith(step) for line in r.stdout.split("Predicted", 1)[1].splitlines()), step


def test_a_graph_whose_loading_does_not_fit_gives_way_to_the_fallback(tmp_path: Path) -> None:
    """The load estimate (from timing kron:16) skips kron:26 in a 25 s budget; kron:8 runs in its place."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_bench.py"), "--standin", "--out", str(tmp_path),
                        "--graphs", "kron:26", "--fallback", "kron:8", "--algos", "bfs", "--no-numpy",
                        "--time-budget", "25", "--label", "bench"],
                       capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    res = json.loads((tmp_path / "gpu_bench.json").read_text())
    skipped, ran = res["graphs"]
    assert skipped["graph"] == "kron:26" and skipped["skipped"] and "estimated" in skipped["notes"][0], r.stdout
    assert ran["graph"] == "kron:8" and ran["fallback_for"] == "kron:26"
    assert {x["impl"] for x in ran["rows"]} == {"compiled cupy", "hand-written cupy"}
    assert all(_checked(x) for x in ran["rows"])
    assert res["runs"][0]["calibration"]["per_unit"] > 0
    assert "in place of kron:26" in (tmp_path / "gpu_bench.md").read_text()
    assert r.returncode == (1 if res["failures"] else 3), r.stdout + r.stderr  # 3: a graph skipped for the budget
