"""Start writing a large file's pages to the disk while it is still being written.

A result file of a gigabyte stays in the page cache until `fsync` at its end (the kernel starts
writing back only past a share of memory), so the writer then waits for the whole file to reach the
disk: about 2 s of a 1 GB JSON file on a 470 MB/s virtual disk, after the formatting, not beside it.
`Writeback` asks the kernel to start writing every WINDOW bytes as they are written
(`sync_file_range(SYNC_FILE_RANGE_WRITE)`, which does not wait), so the disk works while the rest is
formatted, and the final `fsync` waits for the last window only.  Where the call is missing (not
Linux), writing is as before.
"""

from __future__ import annotations

import ctypes
from typing import Any, BinaryIO

#: bytes written between two requests to start writing back
WINDOW = 32 << 20

_SYNC_FILE_RANGE_WRITE = 2
_state: dict[str, Any] = {}


def _sync_file_range() -> Any:
    """libc's sync_file_range, or None where there is none."""
    if "fn" not in _state:
        fn = None
        try:
            fn = ctypes.CDLL(None, use_errno=True).sync_file_range  # (the process's own symbols: libc's)
            fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):  # (not Linux: no such call)
            fn = None
        _state["fn"] = fn
    return _state["fn"]


class Writeback:
    """A binary file whose written bytes are handed to the disk every WINDOW bytes (see the module
    docstring); everything else is the file's own."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self._fn = _sync_file_range()
        self._started = 0  # bytes already handed to the disk
        self._written = 0

    def write(self, b: Any) -> int:
        n = self._f.write(b)
        self._written += n
        if self._fn is not None and self._written - self._started >= WINDOW:
            self._f.flush()
            if self._fn(self._f.fileno(), self._started, self._written - self._started, _SYNC_FILE_RANGE_WRITE) == 0:
                self._started = self._written
            else:  # (a file system without it: stop asking)
                self._fn = None
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)
