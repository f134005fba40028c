"""Ctrl-C while the `g2pl`/`g2plc` commands start: one line and exit status 130, never a traceback.

Imported first by `g2pl/__init__.py`. Python's own SIGINT handler raises KeyboardInterrupt wherever
the main thread is; the CLI catches it in `g2pl.cli.guard.guard`, but the half second before that is
spent importing NumPy, Lark and the compiler, and an interrupt there printed a traceback. Only for
the console scripts (never when g2pl is imported as a library), this handler raises
KeyboardInterrupt as before when `guard` is on the stack to catch it, and otherwise prints
`interrupted` and exits with 130 at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType


def _under_guard(frame: FrameType | None) -> bool:
    """True if `g2pl.cli.guard.guard` is running below `frame`: it turns KeyboardInterrupt into one line."""
    while frame is not None:
        if frame.f_code.co_name == "guard" and frame.f_globals.get("__name__") == "g2pl.cli.guard":
            return True
        frame = frame.f_back
    return False


def _on_sigint(num: int, frame: FrameType | None) -> None:
    if _under_guard(frame):
        raise KeyboardInterrupt
    os.write(2, b"interrupted\n")
    os._exit(128 + num)


def install() -> None:
    """Install the handler when this process is the `g2pl` or `g2plc` command and SIGINT is Python's default."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if (name in ("g2pl", "g2plc") and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _on_sigint)


install()
