"""The output stream's two overlaps: chunks made in a worker thread while the current one is written
(g2pl.results.ahead), and a file's pages handed to the disk while it is written (g2pl.io.writeback)."""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path

import pytest

from g2pl.errors import G2PLRuntimeError
from g2pl.io import writeback
from g2pl.io.output_files import atomic_file
from g2pl.results.ahead import ahead, in_order


def test_ahead_keeps_the_items_and_their_order():
    assert list(ahead(iter(range(100)))) == list(range(100))
    assert list(ahead(iter([]))) == []
    assert list(ahead(iter(range(10)), depth=4)) == list(range(10))


def test_ahead_makes_the_next_item_while_the_current_one_is_used():
    made = threading.Event()

    def items():
        yield 1
        made.set()  # reached only when the worker makes item 2
        yield 2

    it = ahead(items())
    assert next(it) == 1
    assert made.wait(timeout=10)  # made while item 1 is still in use here
    assert list(it) == [2]


def test_ahead_raises_an_error_in_its_place():
    def items():
        yield 1
        yield 2
        raise ValueError("chunk 3")

    got = []
    with pytest.raises(ValueError, match="chunk 3"):
        for x in ahead(items()):
            got.append(x)
    assert got == [1, 2]


def test_leaving_early_ends_the_worker():
    def forever():
        i = 0
        while True:
            yield i
            i += 1

    before = threading.active_count()
    it = ahead(forever())
    assert next(it) == 0
    it.close()
    assert threading.active_count() == before
    assert not any(t.name == "g2pl-output-ahead" for t in threading.enumerate())


def _slow(i: int) -> int:
    time.sleep(0.001 * ((7 * i) % 5))  # later jobs often finish first
    return i


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_in_order_hands_out_results_in_the_jobs_order(workers):
    jobs = (functools.partial(_slow, i) for i in range(40))
    assert list(in_order(jobs, workers)) == list(range(40))


def test_in_order_runs_jobs_side_by_side():
    both = threading.Barrier(2, timeout=10)  # two jobs must be running at once to pass it

    def job(i):
        both.wait()
        return i

    assert list(in_order(iter([functools.partial(job, 0), functools.partial(job, 1)]), 2)) == [0, 1]


def test_in_order_raises_in_place_and_stops_the_rest():
    started = []

    def job(i):
        started.append(i)
        if i == 3:
            raise MemoryError
        return i

    got = []
    with pytest.raises(MemoryError):
        for x in in_order((functools.partial(job, i) for i in range(1000)), 2):
            got.append(x)
    assert got == [0, 1, 2] and len(started) < 10  # a few queued jobs at most, not all 1000


@pytest.fixture
def calls(monkeypatch):
    """sync_file_range replaced by a recorder (returning `result[0]`), with a window of 1 KiB."""
    got: list[tuple[int, int, int]] = []
    result = [0]

    def fake(fd, offset, nbytes, flags):
        got.append((offset, nbytes, flags))
        return result[0]

    monkeypatch.setattr(writeback, "WINDOW", 1024)
    monkeypatch.setitem(writeback._state, "fn", fake)
    return got, result


def test_writeback_hands_each_window_to_the_disk(tmp_path: Path, calls):
    got, _ = calls
    path = tmp_path / "out.bin"
    data = bytes(range(256)) * 40  # 10 KiB in 300-byte writes
    with atomic_file(path) as f:
        for i in range(0, len(data), 300):
            f.write(data[i:i + 300])
    assert path.read_bytes() == data
    assert got and all(flags == 2 for _o, _n, flags in got)
    ends = 0
    for offset, nbytes, _ in got:  # contiguous windows from the start, each at least WINDOW
        assert offset == ends and nbytes >= 1024
        ends += nbytes
    assert len(data) - ends < 1024


def test_writeback_stops_asking_where_it_fails(tmp_path: Path, calls):
    got, result = calls
    result[0] = -1
    with atomic_file(tmp_path / "out.bin") as f:
        for _ in range(10):
            f.write(b"x" * 1000)
    assert len(got) == 1 and (tmp_path / "out.bin").stat().st_size == 10_000


def test_writeback_without_the_call_writes_as_before(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(writeback, "WINDOW", 16)
    monkeypatch.setitem(writeback._state, "fn", None)
    with atomic_file(tmp_path / "out.bin") as f:
        f.write(b"a" * 100)
        assert f.tell() == 100  # (every other attribute is the file's)
    assert (tmp_path / "out.bin").read_bytes() == b"a" * 100


def test_a_failed_write_leaves_no_file(tmp_path: Path, calls):
    path = tmp_path / "out.bin"
    with pytest.raises(G2PLRuntimeError, match="No space left"):
        with atomic_file(path) as f:
            f.write(b"x" * 5000)
            raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_real_sync_file_range_where_there_is_one(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(writeback, "WINDOW", 4096)
    with atomic_file(tmp_path / "out.bin") as f:
        for _ in range(8):
            f.write(b"y" * 4096)
    assert (tmp_path / "out.bin").read_bytes() == b"y" * 32768


def test_errors_name_the_file(tmp_path: Path):
    with pytest.raises(G2PLRuntimeError, match="cannot write the file"):
        with atomic_file(tmp_path / "out.bin") as f:
            f.write(b"z")
            raise OSError(5, "Input/output error")
