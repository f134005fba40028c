"""MPI for device arrays: staged through host memory (the default: the PyPI MPICH is not
CUDA-aware), or handed to a CUDA-aware MPI directly (opt-in, G2PL_CUDA_AWARE_MPI=1, only where
MPIX_Query_cuda_support() says so)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from g2pl.runtime.cupy_backend import CuPyBackend


class StagingComm:
    """A host communicator for device arrays: each buffer is copied to a page-locked host buffer
    before MPI sees it and back after (the PyPI MPICH reads device pointers as host memory)."""

    def __init__(self, comm, bk: CuPyBackend) -> None:
        self._comm, self._bk = comm, bk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._comm, name)

    @property
    def bytes_sent(self) -> int:
        return self._comm.bytes_sent

    @bytes_sent.setter
    def bytes_sent(self, v: int) -> None:
        self._comm.bytes_sent = v

    @property
    def bytes_received(self) -> int:
        return self._comm.bytes_received

    @bytes_received.setter
    def bytes_received(self, v: int) -> None:
        self._comm.bytes_received = v

    def alltoallv(self, send, send_counts, recv_counts=None):
        bk = self._bk
        on_device = isinstance(send, bk.xp.ndarray)
        got, counts = self._comm.alltoallv(bk.to_pinned(send) if on_device else send, bk.to_host(send_counts),
                                           None if recv_counts is None else bk.to_host(recv_counts))
        return (bk.from_host(got) if on_device else got), counts

    def gather_array(self, arr):
        return self._comm.gather_array(self._bk.to_host(arr))


class DeviceComm(StagingComm):
    """Device buffers straight to a CUDA-aware MPI (opt-in, see CuPyBackend.staged): receive buffers
    are allocated on the device, counts stay on the host."""

    def alltoallv(self, send, send_counts, recv_counts=None):
        bk, c = self._bk, self._comm
        if not isinstance(send, bk.xp.ndarray):
            return super().alltoallv(send, send_counts, recv_counts)
        xp = bk.xp
        send_counts = np.asarray(bk.to_host(send_counts), dtype=np.int64)
        if recv_counts is None:
            recv_counts = np.empty(c.size, dtype=np.int64)
            c.c.Alltoall(send_counts, recv_counts)
        recv_counts = np.asarray(bk.to_host(recv_counts), dtype=np.int64)
        item = send.dtype.itemsize
        sdispl = np.concatenate([[0], np.cumsum(send_counts)[:-1]]) * item
        rdispl = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]) * item
        send = xp.ascontiguousarray(send)
        recv = xp.empty(int(recv_counts.sum()), dtype=send.dtype)
        bk.synchronize()  # the send buffer is written before MPI reads it
        B = c.MPI.BYTE
        c.c.Alltoallv([send.view(xp.uint8), (send_counts * item, sdispl), B],
                      [recv.view(xp.uint8), (recv_counts * item, rdispl), B])
        c.bytes_sent += int(send_counts.sum() - send_counts[c.rank]) * item
        c.bytes_received += int(recv_counts.sum() - recv_counts[c.rank]) * item
        return recv, recv_counts


def mpi_cuda_aware() -> bool:
    """MPIX_Query_cuda_support() of the loaded MPI library (MPICH, Open MPI); False when it has none."""
    import ctypes
    import re

    try:
        with open("/proc/self/maps") as f:
            libs = sorted(set(re.findall(r"(/\S*libmpi\S*\.so\S*)", f.read())))
    except OSError:
        return False
    for lib in libs:
        try:
            fn = ctypes.CDLL(lib).MPIX_Query_cuda_support
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        return bool(fn())
    return False
