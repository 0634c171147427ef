"""Share the batch of one op between two threads (NumPy releases the GIL in BLAS and in ufuncs).

The course runs OpenBLAS on one thread (the Makefile's ``OPENBLAS_NUM_THREADS=1``: its small
matrix products gain nothing from more), so a convolution would use one core. Its batch items are
independent, though: the op cuts its batch into chunks (``even_chunks``) and ``for_chunks`` lets
the calling thread and a helper thread take chunks from a shared counter until none is left.

Results never depend on the threads: each chunk writes only its own rows of the outputs, the
chunks depend on the shapes alone, and a sum over the batch (a weight gradient) is kept per chunk
and added in chunk order afterwards: on one machine, any number of threads gives identical bits.

One thread only (no helper) when the op is smaller than ``MIN_WORK`` multiply-adds (handing a
chunk over costs tens of microseconds), under Pyodide (``sys.platform == "emscripten"``:
WebAssembly has no threads here), unless the BLAS is pinned to one thread or ``ENGINE_NUM_THREADS``
asks for more (see :func:`default_threads`), on a one-core machine, when a thread cannot be
started, and inside a chunk (no nesting).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def _cpus() -> int:
    """The cores this process may run on (its affinity where the OS says, else the CPU count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_threads(platform: str = sys.platform, environ=os.environ, cpus: int | None = None) -> int:
    """Threads per op: ENGINE_NUM_THREADS when set; else 2 when the BLAS is pinned to one thread
    (the course's Makefile sets OPENBLAS_NUM_THREADS=1) and 1 otherwise, since a multi-threaded
    BLAS already spreads a large product over the cores and a second thread of ours on top of it
    ran some 50 % slower (four 32-channel 28x28 convs, BLAS on every core: 40 -> 60 ms); at most
    the cores this process may use, 1 under Pyodide."""
    if platform == "emscripten":
        return 1
    wanted = environ.get("ENGINE_NUM_THREADS")
    if wanted is None:
        blas = next(
            (environ[v] for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS") if v in environ), None
        )
        wanted = "2" if blas is not None and blas.strip() == "1" else "1"
    if not wanted.strip().isdigit() or int(wanted) < 1:
        raise ValueError(f"ENGINE_NUM_THREADS must be a positive integer, got {wanted!r}")
    return min(int(wanted), cpus or _cpus())


THREADS = default_threads()  # threads per op, the caller's included (1: no helper thread)
# below this many multiply-adds (of the forward product, the measure both passes use) a second
# thread does not pay (measured: a 32x8x14x14 -> 16 conv, 7 M, forward + backward 1.0 ms on one
# thread, 1.1 ms on two)
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
    """The pool of THREADS − 1 helper threads, made on first use; None when THREADS is 1."""
    global _pool
    with _pool_lock:
        if _pool is None and THREADS > 1:  # (its threads start at the first submit)
            _pool = ThreadPoolExecutor(max_workers=THREADS - 1, thread_name_prefix="engine-ops")
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


def for_chunks(
    make_worker: Callable[[], Callable[[int, int, int], None]], bounds: list[tuple[int, int]], work: int
) -> None:
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

    helpers = []
    for run in runs[1:]:
        try:
            helpers.append(pool.submit(take_chunks, run))
        except RuntimeError:  # no thread to be had (limits, interpreter shutdown): this one does it all
            break
    try:
        take_chunks(runs[0])
    finally:
        for helper in helpers:
            # a helper still queued behind another caller's op (marimo run: a thread per session,
            # one pool) has nothing left to do once this thread took every chunk: do not wait for it
            helper.result()
