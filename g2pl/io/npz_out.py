"""An `.npz` archive written array by array, each array a chunk at a time (what `np.load` reads).

`np.savez` needs every array whole in memory; a result's endpoint IDs (`ids[src]`) would be made
whole just to be written.  `NpzWriter` writes each member's `.npy` header from the shape it is told,
then the chunks as they come (stored, not compressed: writing at disk speed is the point), and checks
that they add up to that shape, so a short or long stream is an error, never a wrong archive.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from typing import BinaryIO

import numpy as np


class NpzWriter:
    """Members of an `.npz` archive written to the open binary file `f` (closed by `close`)."""

    def __init__(self, f: BinaryIO) -> None:
        self._zip = zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self._names: set[str] = set()

    def array(self, name: str, dtype: np.dtype | type | str, shape: tuple[int, ...],
              chunks: Iterable[np.ndarray]) -> None:
        """Member `name` (read back as `np.load(...)[name]`): an array of `dtype` and `shape`, its
        elements in C order from `chunks`."""
        if name in self._names:
            raise ValueError(f"two arrays named {name!r} in one archive")
        self._names.add(name)
        dt = np.dtype(dtype)
        expected = int(np.prod(shape, dtype=np.int64)) if shape else 1
        header = {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False, "shape": tuple(shape)}
        got = 0
        with self._zip.open(name + ".npy", mode="w", force_zip64=True) as m:
            np.lib.format.write_array_header_2_0(m, header)
            for c in chunks:
                arr = np.ascontiguousarray(c, dtype=dt)
                got += arr.size
                if got > expected:
                    raise ValueError(f"array {name!r}: more than the {expected} elements announced")
                m.write(arr.reshape(-1).data)
        if got != expected:
            raise ValueError(f"array {name!r}: {got} elements where {expected} were announced")

    def whole(self, name: str, arr: np.ndarray) -> None:
        """Member `name` holding `arr` (small arrays: scalars, the index)."""
        a = np.asarray(arr)
        self.array(name, a.dtype, a.shape, [a.reshape(-1)])

    def close(self) -> None:
        """Write the archive's directory (the archive is readable only after this)."""
        self._zip.close()
