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
        """The message as the terminal shows it.  File names, messages and source lines may come from
        someone else: control characters are shown escaped (an escape sequence in a file name must not
        drive the terminal) and very long lines are cut around the point of the error."""
        where = clean(self.file or "<input>", keep_newlines=False)
        if self.span is not None:
            where += f":{self.span.line}:{self.span.col}"
        elif self.line is not None:
            where += f":{self.line}"
        out = [f"{where}: error: {cut(clean(self.message))}"]
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
                shown, at, width = _source_window(text, self.span.col - 1, width)
                out.append(f"    {num} | {shown}")
                out.append(f"    {pad} | {' ' * at}{'^' * width}")
        for note in self.notes:
            out.append(f"note: {cut(clean(note))}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


#: longest message or source line shown whole; longer ones are cut (the source line around the error)
SHOWN_CHARS = 240


def clean(text: str, keep_newlines: bool = True) -> str:
    """`text` with what the terminal would not print as text (C0/C1 controls but tab and, when kept,
    newline; DEL; Unicode format characters such as bidirectional overrides) escaped as \\xNN or
    \\uNNNN, so untrusted text printed in an error cannot move the cursor, recolour or retitle the
    terminal, or reorder what it shows."""
    def shown(c: str) -> bool:
        return c.isprintable() or c == "\t" or (keep_newlines and c == "\n")

    if all(shown(c) for c in text):
        return text
    return "".join(c if shown(c) else f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
                   if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text)


def cut(text: str, limit: int = SHOWN_CHARS * 4) -> str:
    """`text` whole when short, else its start and end with how much was left out between them."""
    if len(text) <= limit:
        return text
    head, tail = text[:limit * 3 // 4], text[-(limit // 4):]
    return f"{head} ... ({len(text) - len(head) - len(tail):,} characters left out) ... {tail}"


def _source_window(text: str, col: int, width: int) -> tuple[str, int, int]:
    """(the part of a source line to show, the caret's offset in it, the caret's width): the whole line
    when short, else SHOWN_CHARS characters around the error; control characters escaped."""
    start, end = 0, len(text)
    if len(text) > SHOWN_CHARS:
        width = min(width, SHOWN_CHARS // 2)
        start = max(0, min(col - SHOWN_CHARS // 3, len(text) - SHOWN_CHARS))
        end = start + SHOWN_CHARS
    before = clean(text[start:col], keep_newlines=False)
    marked = clean(text[col:col + width], keep_newlines=False)
    after = clean(text[col + width:end], keep_newlines=False)
    lead = "... " if start > 0 else ""
    trail = " ..." if end < len(text) else ""
    return f"{lead}{before}{marked}{after}{trail}", len(lead) + len(before), max(1, len(marked))


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
