"""How modules below the runtime get their loops compiled: one seam, filled by g2pl.runtime.cpu_kernels.

Whether numba is there, whether it is turned off (G2PL_NUMBA) and whether some work is large enough
to repay loading it are the runtime's decisions (g2pl.runtime.cpu_kernels), and the graph readers
sit in layers below it, which do not import it.  So they write their kernels as plain
Python that numba can compile and ask `kernel(fn, work)` for the compiled form: None (keep the NumPy
path) until cpu_kernels, on import, installs its policy here.  A kernel must give the same answer as
the caller's NumPy path; tests run both.
"""

from __future__ import annotations

from collections.abc import Callable


def _none(fn: Callable, work: int) -> Callable | None:
    return None


#: (a kernel written as plain Python, the elements it will visit) -> the kernel compiled, or None
kernel: Callable[[Callable, int], Callable | None] = _none
