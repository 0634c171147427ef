"""conv2d in chunks of the batch, shared by two threads: the same values, the same bits.

``Conv2d`` cuts its batch into chunks and ``engine.ops._parallel.for_chunks`` shares them between
the calling thread and a helper thread when the layer is large enough. The tests force the
smallest chunks (one item) and threads for any size, then compare with PyTorch and with the
same layer on one thread: every array must be bit-identical, since only the order of work differs.
"""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest
from oracle import check_against_torch, random_arrays, require_torch

import engine
import engine.functional as F
from engine.ops import _parallel
from engine.ops import conv as conv_ops


@pytest.fixture
def one_item_chunks(monkeypatch):
    """Chunks of one batch item, shared by two threads however small the layer."""
    monkeypatch.setattr(conv_ops, "CHUNK_BYTES", 1)
    monkeypatch.setattr(_parallel, "MIN_WORK", 0)
    monkeypatch.setattr(_parallel, "THREADS", 2)


# (input shape, weight shape, keyword settings, with bias): each path of Conv2d.backward
CASES = [
    ((5, 3, 7, 7), (4, 3, 3, 3), dict(padding=1), True),  # stride 1: _input_grad_stride1
    ((4, 3, 8, 7), (5, 3, 3, 3), dict(stride=2, padding=1), True),  # _product_col2im
    ((3, 4, 7, 6), (6, 2, 3, 3), dict(padding=1, groups=2), True),
    ((3, 3, 7, 6), (4, 3, 4, 3), dict(padding="same", dilation=(1, 2)), False),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("x_shape, w_shape, kw, bias", CASES)
def test_chunked_and_threaded_conv2d_matches_torch(one_item_chunks, x_shape, w_shape, kw, bias):
    torch = require_torch()
    shapes = [x_shape, w_shape] + ([(w_shape[0],)] if bias else [])
    check_against_torch(
        lambda *t: F.conv2d(*t, **kw), lambda *t: torch.nn.functional.conv2d(*t, **kw), random_arrays(*shapes, seed=21)
    )


@pytest.mark.parametrize("grad", [(True, False, True), (False, False, True), (True, True, False)])
def test_the_bias_gradient_alone_or_without_it_matches_torch(one_item_chunks, grad):
    # the bias gradient comes out of the weight-gradient products (a row of ones in the columns)
    torch = require_torch()
    arrays = random_arrays((3, 2, 6, 6), (4, 2, 3, 3), (4,), seed=22)
    check_against_torch(
        lambda *t: F.conv2d(*t, padding=1), lambda *t: torch.nn.functional.conv2d(*t, padding=1), arrays, grad=grad
    )


def conv_step(dtype, stride):
    """Output and the three gradients of one float layer (batch 7), as arrays."""
    rng = np.random.default_rng(23)
    x, w, b = (
        engine.Tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
        for shape in [(7, 3, 9, 9), (5, 3, 3, 3), (5,)]
    )
    out = F.conv2d(x, w, b, stride=stride, padding=1)
    out.backward(rng.standard_normal(out.shape).astype(dtype))
    return [out.data, x.grad.numpy(), w.grad.numpy(), b.grad.numpy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stride", [1, 2])
def test_two_threads_give_the_bits_of_one(one_item_chunks, monkeypatch, dtype, stride):
    two = conv_step(dtype, stride)
    monkeypatch.setattr(_parallel, "THREADS", 1)
    one = conv_step(dtype, stride)
    for a, b in zip(two, one):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("stride", [1, 2])
def test_an_empty_batch_gives_an_empty_output_and_zero_gradients_as_torch(stride):
    torch = require_torch()
    check_against_torch(
        lambda *t: F.conv2d(*t, padding=1, stride=stride),
        lambda *t: torch.nn.functional.conv2d(*t, padding=1, stride=stride),
        [np.zeros((0, 3, 5, 5)), *random_arrays((4, 3, 3, 3), (4,), seed=26)],
    )


def test_the_benchmark_layer_is_large_enough_for_two_threads_and_cut_in_seven():
    # benchmarks/bench_conv_attention.py: 32x8x28x28 -> 16, 3x3, padding 1, float32, with bias
    cols = np.empty((32, 1, 8 * 9 + 1, 28 * 28), dtype=np.float32)  # 7.3 MB of columns
    assert [stop - start for start, stop in conv_ops._chunks(cols)] == [4, 5, 4, 5, 4, 5, 5]
    assert 32 * 16 * 73 * 784 >= _parallel.MIN_WORK


def test_a_layer_after_another_with_the_same_scratch_shapes_is_still_right():
    # the stride-1 input gradient keeps its buffers between calls; g's grid [items, C_out, H_out,
    # W_p] must get its zero columns q >= W_out again: 1x1 on 8x8 fills all 8, 3x3 on 8x6 only 6
    torch = require_torch()
    x, w, g = random_arrays((2, 3, 8, 8), (4, 3, 1, 1), (2, 4, 8, 8), seed=24)
    out = F.conv2d(engine.Tensor(x, requires_grad=True), w)
    out.backward(g)
    check_against_torch(
        lambda *t: F.conv2d(*t, padding=1),
        lambda *t: torch.nn.functional.conv2d(*t, padding=1),
        random_arrays((2, 3, 8, 6), (4, 3, 3, 3), seed=25),
    )


def test_scratch_arrays_are_kept_per_slot_and_shape_and_the_oldest_dropped():
    first = _parallel.scratch(("test", 0), (3, 4), np.float32)
    assert _parallel.scratch(("test", 0), (3, 4), np.float32) is first
    assert _parallel.scratch(("test", 1), (3, 4), np.float32) is not first
    assert _parallel.scratch(("test", 0), (3, 4), np.float64) is not first
    for size in range(_parallel.KEPT_SCRATCH):
        _parallel.scratch(("other", size), (2,), np.float32)
    assert _parallel.scratch(("test", 0), (3, 4), np.float32) is not first  # dropped as the oldest
    seen = []
    worker = threading.Thread(target=lambda: seen.append(_parallel.scratch(("test", 0), (3, 4), np.float32)))
    worker.start()
    worker.join()
    assert seen[0] is not _parallel.scratch(("test", 0), (3, 4), np.float32)  # each thread its own


# ----------------------------------------------------------------------------- for_chunks
def test_even_chunks_cover_the_batch_in_order_with_sizes_one_apart():
    for n in range(1, 12):
        for count in range(1, 14):
            bounds = _parallel.even_chunks(n, count)
            assert bounds[0][0] == 0 and bounds[-1][1] == n and len(bounds) == min(n, count)
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
            sizes = [stop - start for start, stop in bounds]
            assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_two_threads_run_chunks_at_the_same_time(monkeypatch):
    monkeypatch.setattr(_parallel, "THREADS", 2)
    both_inside = threading.Barrier(2, timeout=10)  # breaks (an error) unless two chunks overlap
    names = {}

    def run(index, start, stop):
        both_inside.wait()
        names[index] = threading.current_thread().name

    _parallel.for_chunks(lambda: run, [(0, 1), (1, 2)], work=_parallel.MIN_WORK)
    assert len(set(names.values())) == 2


def test_small_work_one_thread_and_nested_calls_stay_on_the_calling_thread(monkeypatch):
    monkeypatch.setattr(_parallel, "THREADS", 2)
    me = threading.current_thread().name
    seen = []
    _parallel.for_chunks(lambda: lambda i, a, b: seen.append(threading.current_thread().name), [(0, 1), (1, 2)], work=1)
    assert seen == [me, me]

    def outer(index, start, stop):  # a chunk that cuts its own work in chunks: no deadlock
        inner = []
        _parallel.for_chunks(
            lambda: lambda i, a, b: inner.append(threading.current_thread().name),
            [(0, 1), (1, 2)],
            work=_parallel.MIN_WORK,
        )
        assert inner == [threading.current_thread().name] * 2

    _parallel.for_chunks(lambda: outer, [(0, 1), (1, 2), (2, 3)], work=_parallel.MIN_WORK)


def test_when_no_thread_can_start_the_caller_runs_every_chunk(monkeypatch):
    class NoThreads:
        def submit(self, *args):
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(_parallel, "THREADS", 2)
    monkeypatch.setattr(_parallel, "_helpers", NoThreads)
    me, seen = threading.current_thread().name, []
    _parallel.for_chunks(
        lambda: lambda i, a, b: seen.append((i, threading.current_thread().name)),
        _parallel.even_chunks(4, 4),
        work=_parallel.MIN_WORK,
    )
    assert seen == [(i, me) for i in range(4)]


def test_an_error_in_any_chunk_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(_parallel, "THREADS", 2)
    for bad in range(4):

        def run(index, start, stop, bad=bad):
            if index == bad:
                raise ValueError(f"chunk {index} failed")

        with pytest.raises(ValueError, match=f"chunk {bad} failed"):
            _parallel.for_chunks(lambda: run, _parallel.even_chunks(4, 4), work=_parallel.MIN_WORK)


def test_threads_per_op_from_the_platform_and_the_environment():
    pinned = {"OPENBLAS_NUM_THREADS": "1"}  # the course's Makefile: BLAS on one thread
    assert _parallel.default_threads("linux", pinned, 8) == 2
    assert _parallel.default_threads("linux", pinned, 1) == 1
    # a BLAS free to use every core (unset, or more than 1): no thread of ours on top of it
    assert _parallel.default_threads("linux", {}, 8) == 1
    assert _parallel.default_threads("linux", {"OPENBLAS_NUM_THREADS": "4"}, 8) == 1
    assert _parallel.default_threads("linux", {"ENGINE_NUM_THREADS": "1"}, 8) == 1
    assert _parallel.default_threads("linux", {"ENGINE_NUM_THREADS": "4"}, 8) == 4
    assert _parallel.default_threads("emscripten", {"ENGINE_NUM_THREADS": "4"}, 8) == 1  # Pyodide
    with pytest.raises(ValueError, match="ENGINE_NUM_THREADS must be a positive integer, got 'two'"):
        _parallel.default_threads("linux", {"ENGINE_NUM_THREADS": "two"}, 8)


def _threaded_conv_in_child():
    conv_step(np.float32, 1)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_child_starts_its_own_helper_thread(one_item_chunks):
    conv_step(np.float32, 1)  # the parent's pool exists now; its thread is not copied by fork
    child = multiprocessing.get_context("fork").Process(target=_threaded_conv_in_child)
    child.start()
    child.join(timeout=60)
    stuck = child.is_alive()
    if stuck:
        child.kill()
    assert not stuck and child.exitcode == 0
