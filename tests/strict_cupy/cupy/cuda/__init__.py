"""`cupy.cuda` of the stand-in: one pretend device; events time with the host clock.

The backend picks a device, synchronizes streams and times with events; here these are no-ops that keep
CuPy's names and signatures (an unknown device ordinal raises, as the CUDA runtime does).
"""

from __future__ import annotations

import time
from typing import Any

from . import runtime


def is_available() -> bool:
    return runtime.getDeviceCount() > 0


class Device:
    """`Device(i).use()` makes `i` current; `i` must be below the device count."""

    _current = 0

    def __init__(self, device: int | None = None) -> None:
        self.id = Device._current if device is None else int(device)
        if not 0 <= self.id < runtime.getDeviceCount():
            raise runtime.CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")

    def use(self) -> None:
        Device._current = self.id

    def synchronize(self) -> None:
        pass

    def __enter__(self) -> Device:
        self._prev = Device._current
        self.use()
        return self

    def __exit__(self, *exc: Any) -> None:
        Device._current = self._prev


class Stream:
    """Streams run in order on the host: `synchronize()` has nothing to wait for."""

    null: Stream

    def synchronize(self) -> None:
        pass


Stream.null = Stream()


class Event:
    """`record()` notes the host clock; `get_elapsed_time(a, b)` is milliseconds between two."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self._t: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self._t = time.perf_counter()

    def synchronize(self) -> None:
        pass


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    if start_event._t is None or end_event._t is None:
        raise runtime.CUDARuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    return (end_event._t - start_event._t) * 1000.0
