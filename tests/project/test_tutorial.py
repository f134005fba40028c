"""The documents' examples run as printed: docs/tutorial.md and README.md, block by block.

A doctest for Markdown.  Each document is read in order, and its fenced blocks are handled as a reader
following it would:

* a file block -- a code block right after prose that ends with `:` and names a path (`Save as
  `tut/mm1.g2pl`:`) -- is written to that path in a scratch directory (a path outside `tut/`, such as
  `programs/mst.g2pl`, names a repository file: the listing must appear in it verbatim);
* a `console` block runs every `$ command` in the scratch directory (`g2pl`, `g2plc` and `python` are the
  ones next to this test's Python, `programs/` is the repository's) and compares what it prints, stdout
  and stderr in order, with the lines under it;
* a `pycon` block (`>>>`) runs as a doctest in the scratch directory.

Only what varies between runs is normalized: the time on a `stats:` line, and the progress lines
`g2pl run` writes on stderr (`g2pl: done: ...`), which the documents leave out.  Supersteps, messages,
bytes and every value must match exactly.  A block that cannot run here (too slow, several MPI ranks, a
GPU) has `<!-- not checked: REASON -->` on the line before it, which readers do not see; it is reported
as a skipped test with that reason (`pytest -rs`).  Other code blocks (fragments, `sh` blocks without
printed output) are not run.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/tutorial.md", "README.md")

SKIP_MARK = re.compile(r"^<!--\s*not checked:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
PATH_IN_PROSE = re.compile(r"`([\w./-]+/[\w.-]+\.\w+)`")
PROGRESS = re.compile(r"^g2pl: (done: |superstep \d)")
STATS_TIME = re.compile(r"^(stats: .*, )\d+(?:\.\d+)? s$")


@dataclass
class Command:
    cmd: str
    line: int  # in the document, 1-based
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    intro: str  # the prose paragraph just before the block
    skip: str | None  # the reason of a `<!-- not checked: ... -->` mark

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def file_path(self) -> str | None:
        """The path a file block is saved as (the last one its introduction names), if it is one."""
        if self.lang in ("console", "pycon", "sh", "python") or not self.intro.rstrip().endswith(":"):
            return None
        paths = PATH_IN_PROSE.findall(self.intro)
        return paths[-1] if paths else None

    def commands(self) -> list[Command]:
        """The `$ ` commands of a console block, each with the lines printed under it."""
        out: list[Command] = []
        lines = self.text.splitlines()
        i = 0
        while i < len(lines):
            ln = lines[i]
            if not ln.startswith("$ "):
                if not out:
                    raise AssertionError(f"{self.where}: console output before any `$ ` command: {ln!r}")
                out[-1].expected.append(ln)
                i += 1
                continue
            cmd, line = ln[2:], self.line + 1 + i
            while not _complete(cmd) and i + 1 < len(lines):
                i += 1
                cmd += "\n" + lines[i]
            out.append(Command(cmd, line))
            i += 1
        return out


def _complete(cmd: str) -> bool:
    """Whether a shell command is whole (no open quote, no trailing backslash)."""
    if cmd.endswith("\\"):
        return False
    try:
        shlex.split(cmd)
    except ValueError:
        return False
    return True


def read_blocks(doc: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of `doc` (a path under the repository, or named `doc` with its `text` given)."""
    lines = ((ROOT / doc).read_text() if text is None else text).splitlines()
    blocks: list[Block] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        start, lang = i, m.group(1)
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        before = [ln for ln in prose if ln.strip()]
        mark = SKIP_MARK.match(before[-1].strip()) if before else None
        paragraph: list[str] = []
        for ln in reversed(prose):
            if SKIP_MARK.match(ln.strip()):
                continue
            if not ln.strip():
                if paragraph:
                    break
                continue
            paragraph.insert(0, ln)
        blocks.append(Block(doc, start + 1, lang, "\n".join(body) + "\n", " ".join(paragraph),
                            mark.group(1) if mark else None))
        prose = []
    return blocks


def normalize(text: str) -> list[str]:
    """Printed lines as compared: progress lines dropped, a stats line's time made `<time>`."""
    out = []
    for ln in text.splitlines():
        ln = ln.rstrip()
        if PROGRESS.match(ln):
            continue
        out.append(STATS_TIME.sub(r"\1<time> s", ln))
    while out and not out[-1]:
        out.pop()
    return out


class Workspace:
    """The scratch directory a document's blocks run in, in order; `upto(i)` runs what comes before."""

    def __init__(self, doc: str, root: Path, text: str | None = None) -> None:
        self.doc = doc
        self.dir = root
        self.blocks = read_blocks(doc, text)
        self.done = 0
        self.last_rc = 0
        (root / "tut").mkdir()
        (root / "programs").symlink_to(ROOT / "programs")
        self.bin = root / ".bin"
        self.bin.mkdir()
        here = Path(sys.executable).parent
        for tool in ("g2pl", "g2plc"):
            if (here / tool).exists():
                (self.bin / tool).symlink_to(here / tool)
            else:  # a Python without the console scripts: the same entry points
                fn = "g2plc_main" if tool == "g2plc" else "g2pl_main"
                (self.bin / tool).write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "import sys; '
                                             f'from g2pl.cli import {fn}; sys.exit({fn}())" "$@"\n')
                (self.bin / tool).chmod(0o755)
        (self.bin / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        (self.bin / "python").chmod(0o755)
        self.env = {"PATH": f"{self.bin}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
                    "HOME": str(root), "LANG": "C.UTF-8"}

    def upto(self, index: int) -> None:
        """Run the blocks before `index` that have not run yet (checking nothing: their own tests do)."""
        while self.done < index:
            self.run(self.blocks[self.done])

    def run(self, block: Block) -> list[str]:
        """Run one block; returns what differs from the document (empty: it matches)."""
        self.done = max(self.done, self.blocks.index(block) + 1)
        if block.skip is not None:
            return []
        path = block.file_path()
        if path is not None:
            if path.startswith("tut/"):
                (self.dir / path).write_text(block.text)
                return []
            assert (ROOT / path).is_file(), f"{block.where}: the listing names {path}, which does not exist"
            if block.text not in (ROOT / path).read_text():
                return [f"{block.where}: this listing is not in {path} as printed"]
            return []
        if block.lang == "console":
            return self.run_console(block)
        if block.lang == "pycon":
            return self.run_pycon(block)
        return []

    def run_console(self, block: Block) -> list[str]:
        problems = []
        for c in block.commands():
            proc = subprocess.run(["bash", "-c", f"(exit {self.last_rc}); {c.cmd}"], cwd=self.dir, env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            self.last_rc = proc.returncode
            got, want = normalize(proc.stdout), normalize("\n".join(c.expected))
            if got != want:
                problems.append(f"{block.doc}:{c.line}: `$ {c.cmd}` printed\n" + "\n".join(f"    {ln}" for ln in got)
                                + "\n  the document shows\n" + "\n".join(f"    {ln}" for ln in want))
        return problems

    def run_pycon(self, block: Block) -> list[str]:
        test = doctest.DocTestParser().get_doctest(block.text, {}, block.where, self.doc, block.line)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        report: list[str] = []
        old = os.getcwd()
        os.chdir(self.dir)
        try:
            runner.run(test, out=report.append)
        finally:
            os.chdir(old)
        return ["".join(report)] if runner.failures else []


def _cases():
    for doc in DOCS:
        for i, b in enumerate(read_blocks(doc)):
            if b.skip is not None or b.lang in ("console", "pycon") or b.file_path() is not None:
                yield pytest.param(doc, i, id=f"{doc}:{b.line}")


_WORKSPACES: dict[str, Workspace] = {}


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    yield _WORKSPACES
    _WORKSPACES.clear()


@pytest.mark.parametrize("doc, index", list(_cases()))
def test_block(workspaces, tmp_path_factory, doc, index):
    if doc not in workspaces:
        workspaces[doc] = Workspace(doc, tmp_path_factory.mktemp(Path(doc).stem))
    ws = workspaces[doc]
    block = ws.blocks[index]
    if block.skip is not None:
        ws.done = max(ws.done, index + 1)
        pytest.skip(f"{block.where}: not checked: {block.skip}")
    ws.upto(index)
    problems = ws.run(block)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def test_the_runner_reads_the_documents():
    blocks = read_blocks("docs/tutorial.md")
    files = [b.file_path() for b in blocks if b.file_path()]
    assert "tut/small.el" in files and "tut/mm1.g2pl" in files and "programs/mst.g2pl" in files, files
    assert sum(len(b.commands()) for b in blocks if b.lang == "console") >= 20
    assert any(b.lang == "pycon" for b in blocks)
    assert normalize("g2pl: done: 8 supersteps, 90 messages (12k/s), 0.01 s\n"
                     "stats: 8 supersteps, 90 messages, 0 bytes across ranks, 1 rank, backend numpy, 0.004 s\n") \
        == ["stats: 8 supersteps, 90 messages, 0 bytes across ranks, 1 rank, backend numpy, <time> s"]


SAMPLE = """\
Save as `tut/a.txt`:

```
hello
```

<!-- not checked: needs 64 ranks -->
```console
$ g2pl run programs/bfs.g2pl --graph kron:30 --np 64
```

```console
$ cat tut/a.txt
hello
$ false
$ echo $?
1
$ printf 'x\\n' && echo \\
  y
x
y
$ echo wrong
right
```
"""


def test_the_runner_on_a_sample(tmp_path):
    """Files are saved, marked blocks are not run, `$?` is the previous command's status, continued
    commands are whole, and a difference is reported with both texts."""
    ws = Workspace("sample.md", tmp_path, SAMPLE)
    file, marked, console = ws.blocks
    assert (file.file_path(), marked.skip, console.skip) == ("tut/a.txt", "needs 64 ranks", None)
    assert [c.cmd for c in console.commands()] == ["cat tut/a.txt", "false", "echo $?",
                                                    "printf 'x\\n' && echo \\\n  y", "echo wrong"]
    assert ws.run(file) == [] and ws.run(marked) == []
    problems = ws.run(console)
    assert problems == ["sample.md:22: `$ echo wrong` printed\n    wrong\n  the document shows\n    right"], problems
