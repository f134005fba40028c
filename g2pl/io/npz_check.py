"""Reading the shapes of an .npz archive's arrays before any array is read.

A few kilobytes of compressed zeros can declare gigabytes of array: `np.load`
allocates what each member's .npy header declares before reading a byte of
data.  Graph files and checkpoints may come from someone else, so their
sizes are checked first, from the headers alone (a few hundred bytes per
member), and an archive that needs more than the reader allows is refused.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NpyHeader:
    member: str  # the zip member name ("src.npy")
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def npz_headers(zf: zipfile.ZipFile) -> dict[str, NpyHeader]:
    """{array name: header} of every `.npy` member (ValueError for a malformed header)."""
    out = {}
    for info in zf.infolist():
        if not info.filename.endswith(".npy"):
            continue
        with zf.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"unsupported .npy format version {version} in {info.filename}")
        out[info.filename[:-4]] = NpyHeader(info.filename, tuple(int(x) for x in shape), np.dtype(dtype))
    return out
