"""Errors that users see: one exception type, rendered as file:line:col + source line + caret.

Every user-facing failure (bad program, bad graph file, bad argument) raises
`G2PLError`; the CLI prints `err.render()` and exits with `err.exit_status`
(2 for bad input, 1 for runtime failures). No traceback unless --debug.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A source region: 1-based line/column of start and end (end column exclusive)."""

    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def point(line: int, col: int) -> Span:
        return Span(line, col, line, col + 1)


class G2PLError(Exception):
    """A user-facing error with an optional source position.

    `file` names the program or graph file; `span` locates the error in the
    program text (`source` is that text, used to show the offending line).
    For graph files, `line` alone is set (no column).
    """

    exit_status = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        span: Span | None = None,
        source: str | None = None,
        line: int | None = None,
        notes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.span = span
        self.source = source
        self.line = line if line is not None else (span.line if span else None)
        self.notes = tuple(notes)

    def with_context(self, *, file: str | None = None, source: str | None = None) -> G2PLError:
        """Fill in file/source if not yet known (errors raised deep inside lack them)."""
        if self.file is None and file is not None:
            self.file = file
        if self.source is None and source is not None:
            self.source = source
        return self

    def render(self) -> str:
        where = self.file or "<input>"
        if self.span is not None:
            where += f":{self.span.line}:{self.span.col}"
        elif self.line is not None:
            where += f":{self.line}"
        out = [f"{where}: error: {self.message}"]
        if self.span is not None and self.source is not None:
            lines = self.source.splitlines()
            if 1 <= self.span.line <= len(lines):
                text = lines[self.span.line - 1].expandtabs(1)
                num = str(self.span.line)
                pad = " " * len(num)
                width = 1
                if self.span.end_line == self.span.line:
                    width = max(1, self.span.end_col - self.span.col)
                width = min(width, max(1, len(text) - self.span.col + 1))
                out.append(f"    {num} | {text}")
                out.append(f"    {pad} | {' ' * (self.span.col - 1)}{'^' * width}")
        for note in self.notes:
            out.append(f"note: {note}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


class G2PLRuntimeError(G2PLError):
    """A failure while running a compiled program (exit status 1)."""

    exit_status = 1


class RunStopped(G2PLRuntimeError):
    """A run stopped by a limit (`--max-supersteps`, `--time-limit`): exit status 1, but what was
    measured is kept: `stats` holds the partial statistics (set by the driver, all ranks merged)."""

    def __init__(self, message: str, *, reason: str, **kw) -> None:
        super().__init__(message, **kw)
        self.reason = reason
        self.stats: dict | None = None


@contextmanager
def reading_graph_file(path: str) -> Iterator[None]:
    """OS errors met while opening or reading the graph file `path`, as G2PLErrors naming it (exit 2)."""
    try:
        yield
    except FileNotFoundError:
        raise G2PLError("graph file not found", file=path) from None
    except IsADirectoryError:
        raise G2PLError("is a directory, not a graph file", file=path) from None
    except PermissionError:
        raise G2PLError("permission denied reading the graph file", file=path) from None
    except OSError as e:
        raise G2PLError(f"cannot read the graph file: {e.strerror or e}", file=path) from None
