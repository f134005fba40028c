"""Progress of a running program on stderr (`g2pl run`, rank 0 only; `--quiet` turns it off).

`Progress` is the `progress(stats, final)` callback the runtime calls after
every superstep.  On a terminal it keeps one live line (with `rich` if it is
installed, else a carriage-return line): superstep number, active vertices,
messages per second and elapsed time.  Elsewhere (a pipe, a file, a CI log) it
prints plain lines, at most one per `interval` seconds, plus a final one.
stdout is never touched, so it stays machine-readable.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from g2pl.runtime.stats import KEEP


def _si(x: float) -> str:
    """1234567 -> '1.23M' (k, M, G, T)."""
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}" if x != int(x) else str(int(x))


class Progress:
    """A `progress(stats, final)` callback printing to `stream` (default: stderr).

    `live` forces terminal (True) or plain (False) mode; by default it is
    whether `stream` is a terminal.  `ranks > 1` marks the figures as rank 0's
    share (the other ranks' counts reach rank 0 only at the end).  With
    `defer_final`, the final line waits for `close(ok=True)`: a run stopped
    after its last superstep (e.g. by --max-supersteps) then prints no "done"
    line before its error.  `clock` is for tests.
    """

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None, interval: float = 1.0,
                 ranks: int = 1, defer_final: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if live is None:
            isatty = getattr(self.stream, "isatty", None)
            live = bool(isatty and isatty())
        self.live = live
        self.interval = interval
        self.ranks = ranks
        self.defer_final = defer_final
        self._final: str | None = None
        self.clock = clock
        self.t0 = clock()
        self.lines = 0  # plain lines printed (tests)
        self._seen = 0  # superstep stats already summed
        self._messages = 0
        self._last_t = self.t0
        self._last_msgs = 0
        self._rate = 0.0
        self._rich = None  # rich.live.Live while a live line is shown
        self._cr_width = 0  # width of the carriage-return line without rich
        self._closed = False

    # ---------------------------------------------------------------- the callback

    def __call__(self, stats, final: bool = False) -> None:
        if self._closed:
            return
        steps = stats.per_superstep  # the newest records are always kept (g2pl.runtime.stats)
        count, new = stats.supersteps, stats.supersteps - self._seen
        if new > KEEP:  # more than the kept newest (a resumed run): the total
            self._messages = int(stats.total("messages"))
        elif new > 0:
            self._messages += sum(int(s.messages) for s in steps[len(steps) - new:])
        self._seen = count
        now = self.clock()
        active = int(steps[-1].active) if steps else 0
        if final:
            self._final = self.final_text(count, now - self.t0)
            if not self.defer_final:
                self.close(ok=True)
            return
        if now - self._last_t < (0.1 if self.live else self.interval):
            return
        self._rate = (self._messages - self._last_msgs) / max(now - self._last_t, 1e-9)
        self._last_t, self._last_msgs = now, self._messages
        self._show(self.text(count, active, self._rate, now - self.t0))

    # ---------------------------------------------------------------- text

    def _who(self) -> str:
        return f" (rank 0 of {self.ranks})" if self.ranks > 1 else ""

    def text(self, supersteps: int, active: int, rate: float, elapsed: float) -> str:
        return (f"g2pl: superstep {supersteps}, {active:,} active vertices, {_si(rate)} messages/s, "
                f"{elapsed:.1f} s{self._who()}")

    def final_text(self, supersteps: int, elapsed: float, messages: int | None = None, who: str | None = None
                   ) -> str:
        messages = self._messages if messages is None else messages
        rate = messages / elapsed if elapsed > 0 else 0.0
        return (f"g2pl: done: {supersteps} supersteps, {messages:,} messages ({_si(rate)}/s), "
                f"{elapsed:.2f} s{self._who() if who is None else who}")

    # ---------------------------------------------------------------- output

    def _show(self, line: str, final: bool = False) -> None:
        if not self.live:
            print(line, file=self.stream, flush=True)
            self.lines += 1
            return
        if self._start_rich():
            from rich.text import Text

            t = Text(line[len("g2pl: "):])
            t.stylize("bold cyan", 0, len(t.plain.split(",")[0]))
            self._rich.update(t, refresh=True)
            return
        pad = " " * max(0, self._cr_width - len(line))
        self.stream.write("\r" + line + pad + ("\n" if final else ""))
        self.stream.flush()
        self._cr_width = 0 if final else len(line)

    def _start_rich(self) -> bool:
        if self._rich is not None:
            return True
        try:
            from rich.console import Console
            from rich.live import Live
        except ImportError:
            return False
        self._rich = Live(console=Console(file=self.stream, force_terminal=True), auto_refresh=False, transient=False,
                          redirect_stdout=False, redirect_stderr=False)
        self._rich.start()
        return True

    def close(self, ok: bool = False, totals: dict | None = None) -> None:
        """Finish: print the final line if the run ended well (`ok`), and end the live line; idempotent.

        `totals`, the run's merged statistics (a `--stats` dict), replaces rank 0's share in that line.
        """
        if self._closed:
            return
        if ok and totals is not None:
            ranks = int(totals.get("ranks", 1))
            self._final = self.final_text(int(totals["supersteps"]), self.clock() - self.t0, int(totals["messages"]),
                                          f" on {ranks} ranks" if ranks > 1 else "")
        if ok and self._final is not None:
            self._show(self._final, final=True)
        self._closed = True
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        elif self.live and self._cr_width:
            self.stream.write("\n")
            self.stream.flush()
