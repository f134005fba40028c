"""`cupy.cuda.runtime` of the stand-in: one device."""

from __future__ import annotations


class CUDARuntimeError(RuntimeError):
    """As CuPy's: what the CUDA runtime reports (no device, bad ordinal)."""


def getDeviceCount() -> int:  # noqa: N802  (CUDA's name)
    return 1
