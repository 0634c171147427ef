"""Share the batch of one op between two threads (NumPy releases the GIL in BLAS and in ufuncs).

The course runs OpenBLAS on one thread (the Makefile's ``OPENBLAS_NUM_THREADS=1``: its small
matrix products gain nothing from more), so a convolution would use one core. Its batch items are
independent, though: the op cuts its batch into chunks (``even_chunks``) and ``for_chunks`` lets
the calling thread and a helper thread take chunks from a shared counter until none is left.

Results never depend on the threads: each chunk writes only its own rows of the outputs, the
chunks depend on the shapes alone, and a sum over the batch (a weight gradient) is kept per chunk
and added in chunk order afterwards. One thread, two threads and Pyodide give identical bits.

One thread only (no helper) when the op is smaller than ``MIN_WORK`` multiply-adds (handing a
chunk over costs tens of microseconds), under Pyodide (``sys.platform == "emscripten"``:
WebAssembly has no threads here), with ``ENGINE_NUM_THREADS=1`` in the environment, on a one-core
machine, when a thread cannot be started, and inside a chunk (no nesting).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def default_threads(platform: str = sys.platform, environ=os.environ, cpus: int | None = os.cpu_count()) -> int:
    """Threads per op: ENGINE_NUM_THREADS (default 2), at most the CPU count, 1 under Pyodide."""
    if platform == "emscripten":
        return 1
    wanted = environ.get("ENGINE_NUM_THREADS", "2")
    if not wanted.strip().isdigit() or int(wanted) < 1:
        raise ValueError(f"ENGINE_NUM_THREADS must be a positive integer, got {wanted!r}")
    return min(int(wanted), cpus or 1)


THREADS = default_threads()  # threads per op, the caller's included (1: no helper thread)
# below this many multiply-adds a second thread does not pay (measured: a 32x8x14x14 -> 16 conv,
# 7 M, forward + backward 1.0 ms on one thread, 1.1 ms on two; 128x1x28x28 -> 8, 8 M: 1.9 -> 1.6 ms)
MIN_WORK = 1 << 23

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_chunk = threading.local()  # .active: this thread is running a chunk
_scratch = threading.local()  # .arrays: {(slot, shape, dtype): array}, this thread's kept scratch
KEPT_SCRATCH = 8


def _forget_pool() -> None:
    """In a child process made by fork the pool's threads do not exist: start a new pool there."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _helpers() -> ThreadPoolExecutor | None:
    """The pool of THREADS − 1 helper threads, started on first use; None when threads are unavailable."""
    global _pool, THREADS
    with _pool_lock:
        if _pool is None and THREADS > 1:
            try:
                _pool = ThreadPoolExecutor(max_workers=THREADS - 1, thread_name_prefix="engine-ops")
            except RuntimeError:
                THREADS = 1
        return _pool


def scratch(slot, shape: tuple, dtype) -> np.ndarray:
    """An uninitialised array for scratch work that the calling thread keeps between calls, one per
    ``slot`` (the last KEPT_SCRATCH kept). Fresh memory of a few MB is page-faulted on first touch,
    which costs as much as the work it holds when an op allocates it on every call (glibc returns
    freed memory above its trim threshold to the system, and two threads' buffers cross it)."""
    kept = _scratch.__dict__.setdefault("arrays", {})
    key = (slot, tuple(shape), np.dtype(dtype))
    array = kept.pop(key, None)
    if array is None:
        array = np.empty(shape, dtype=dtype)
        while len(kept) >= KEPT_SCRATCH:
            kept.pop(next(iter(kept)))  # the least recently used
    kept[key] = array
    return array


def even_chunks(n: int, count: int) -> list[tuple[int, int]]:
    """(start, stop) of ``count`` consecutive chunks of range(n), their sizes differing by at most 1."""
    count = max(1, min(n, count))
    edges = [n * i // count for i in range(count + 1)]
    return list(zip(edges[:-1], edges[1:]))


def for_chunks(make_worker: Callable[[], Callable[[int, int, int], None]], bounds: list[tuple[int, int]],
               work: int) -> None:
    """Call ``run(index, start, stop)`` once for each chunk ``bounds[index]``, in any order and on
    up to THREADS threads when ``work`` (the op's multiply-adds) pays for a second one; each thread
    taking part gets its own ``run = make_worker()`` (which may own scratch buffers). ``run`` must
    write only its own chunk's outputs. An exception of any chunk is raised here, once every
    thread has stopped."""
    pool = None
    if len(bounds) > 1 and work >= MIN_WORK and THREADS > 1 and not getattr(_in_chunk, "active", False):
        pool = _helpers()
    if pool is None:
        run = make_worker()
        for index, (start, stop) in enumerate(bounds):
            run(index, start, stop)
        return
    # every thread's worker is made here, before any starts: making one (scratch buffers, views)
    # is Python work, which would hold up the other thread's chunks if both made theirs at once
    runs = [make_worker() for _ in range(min(THREADS, len(bounds)))]
    counter = itertools.count()
    counter_lock = threading.Lock()

    def take_chunks(run):
        _in_chunk.active = True
        try:
            while True:
                with counter_lock:
                    index = next(counter)
                if index >= len(bounds):
                    return
                run(index, *bounds[index])
        finally:
            _in_chunk.active = False

    helpers = [pool.submit(take_chunks, run) for run in runs[1:]]
    try:
        take_chunks(runs[0])
    finally:
        for helper in helpers:
            helper.result()
