"""What a one-off `g2pl run` pays besides its work, each case in a fresh process (the allocator
settings and numba's import are process-wide): building a graph in a tuned process keeps its per-block
buffers in the heap, and an early-exit pull does not load numba for the entries it never reads."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str, **env: str) -> str:
    e = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                       env=e, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator settings")
def test_building_reuses_per_block_buffers():
    """Inside `temporaries_returned` of a tuned process, a 5 MB buffer allocated and written 40 times
    faults its pages in about once (heap), not 40 times (mapped and unmapped each time); a block of
    the edges' size is still mapped and handed back when freed."""
    out = _fresh("""
        import resource
        import numpy as np
        from g2pl.graph import alloc
        from g2pl.graph.memory import temporaries_returned
        if not alloc.tune():
            print("untuned")
            raise SystemExit
        with temporaries_returned():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in range(40):
                a = np.empty(5 << 20, dtype=np.uint8)
                a[:] = 1
                del a
            small = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
            def resident():
                with open("/proc/self/statm") as f:
                    return int(f.read().split()[1]) * 4096
            a = np.empty(64 << 20, dtype=np.uint8)
            a[:] = 1
            held = resident()
            del a
            big = held - resident()
        print(small, big)
    """)
    if out == "untuned":
        pytest.skip("no glibc mallopt here")
    small, big = map(int, out.split())
    pages = (5 << 20) // 4096
    assert small < 5 * pages, small  # 40 rounds would be 40 * pages
    assert big >= 60 << 20, big  # handed back when freed


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba not installed")
def test_an_early_exit_pull_over_few_rows_keeps_numba_unloaded():
    """auto mode: a pull over 1,000 rows of 20M entries (work: the rows, not the entries) runs the NumPy
    rounds, and numba is not even imported; G2PL_NUMBA=1 runs the compiled pass; same answer."""
    code = """
        import sys
        import numpy as np
        from g2pl.runtime import kernels
        rows = 1000
        indptr = np.linspace(0, 20_000_000, rows + 1).astype(np.int64)
        nbr = np.random.default_rng(1).integers(0, 50_000, 20_000_000).astype(np.int32)
        x = np.zeros(50_000, dtype=bool)
        x[::97] = True
        got = kernels.any_pull(kernels.Segments(indptr), nbr, x)
        print(int(got.sum()), "numba" in sys.modules)
    """
    auto = _fresh(code, G2PL_NUMBA="auto")
    forced = _fresh(code, G2PL_NUMBA="1")
    assert auto.split() == [forced.split()[0], "False"]
    assert forced.split()[1] == "True"


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba not installed")
def test_serial_and_parallel_builds_keep_their_own_disk_cache(tmp_path):
    """numba's disk cache files a function by its name and types, not by its options: had the serial and
    the parallel build of a row kernel one name, whichever was compiled first would be loaded for both
    from then on (seen: PageRank's parallel row sum running on one thread, and with G2PL_THREADS=1 a
    serial kernel on every core).  The parallel build is a copy under its own name, with its own files."""
    mod = tmp_path / "spin_kernels.py"
    mod.write_text(textwrap.dedent('''
        import numpy as np
        prange = range

        def spin(out, cuts):
            for b in prange(len(cuts) - 1):
                out[b] = np.sqrt(b + 1.0)
    '''))
    code = f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        import spin_kernels
        from g2pl.runtime import cpu_kernels
        assert cpu_kernels.available()
        out = np.zeros(64)
        cpu_kernels.run_rows(spin_kernels.spin, (out,), items=64, nthreads=1)
        cpu_kernels.run_rows(spin_kernels.spin, (out,), items=64, nthreads=2)
        print(cpu_kernels._state["jit:spin:parallel"].py_func.__name__, bool(out[:16].all()))
    """
    cache = tmp_path / "cache"
    for _ in range(2):  # compiled, then loaded from the cache
        assert _fresh(code, NUMBA_CACHE_DIR=str(cache), NUMBA_NUM_THREADS="2").split() == ["spin__parallel", "True"]
    index = sorted(p.name.split("-")[0] for p in cache.rglob("*.nbi"))
    assert index == ["spin_kernels.spin", "spin_kernels.spin__parallel"]
