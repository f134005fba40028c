"""Make an iterator's next items in a worker thread while the caller uses the current one.

A result is written as a stream of chunks, each formatted (text from arrays, endpoint lookups) and
then written to the file: one after the other, the formatting and the disk never work at once.  With
`ahead`, the chunks after the current one are made in a thread while the main thread writes; NumPy's
array operations, the compiled text writer (numba, no GIL) and the `write` system call all let the
other thread run, so on two cores a large output takes about the longer of the two, not their sum.

`in_order` goes further for chunks that do not depend on each other (JSON and CSV text): it makes
them on several threads at once and hands them out in order.

The workers only format this rank's chunks; anything collective, like asking other ranks for theirs,
stays in the calling thread.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_DONE = object()


def ahead(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """The items of `items`, the next `depth` of them made in a worker thread; an exception raised while
    making one is raised here, in its place.  Leaving the loop early (an error, a stop) lets the worker
    end after the item it is making."""
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(x: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(x, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for x in items:
                if not put((True, x)):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the caller, in order
            put((False, e))
            return
        put((True, _DONE))

    worker = threading.Thread(target=work, name="g2pl-output-ahead", daemon=True)
    worker.start()
    try:
        while True:
            ok, x = q.get()
            if not ok:
                raise x
            if x is _DONE:
                return
            yield x
    finally:
        stop.set()
        worker.join()


def in_order(jobs: Iterator[Callable[[], T]], workers: int) -> Iterator[T]:
    """Each job's result, in the jobs' order, made by `workers` threads (at most `workers` jobs made or
    waiting to be taken at a time; `workers` <= 1: one after the other here).  A job's exception is raised in its
    place; leaving the loop early cancels the jobs not started and waits for those running."""
    if workers <= 1:
        for job in jobs:
            yield job()
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="g2pl-output-chunk")
    pending: deque[Future] = deque()
    try:
        for job in jobs:
            if len(pending) == workers:
                yield pending.popleft().result()
            pending.append(pool.submit(job))
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
