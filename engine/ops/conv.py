"""Convolution and pooling: im2col, col2im, and the primitives built on them.

Layout of the column matrix (the same as ``torch.nn.functional.unfold``)::

    cols = im2col(x)            x: [N, C, H, W]  ->  cols: [N, C·kh·kw, H_out·W_out]
    cols[n, (c, i, j), (p, q)] = x_pad[n, c, p·s_h + i·d_h, q·s_w + j·d_w]

Row ``(c, i, j)`` = c·kh·kw + i·kw + j is one kernel tap of one channel; column ``(p, q)`` =
p·W_out + q is one output position. A convolution is then one matrix product per batch item,
``out[n] = W₂ · cols[n]`` with W₂ the weight reshaped to [C_out, C·kh·kw], and its gradients are
two more: ``∂L/∂W₂ = Σₙ gₙ · colsₙᵀ`` and ``∂L/∂cols = W₂ᵀ · g``. ``col2im`` is the adjoint of
``im2col``: it adds every column entry back onto the pixel it was copied from (pixels that sit in
several windows receive the sum), which turns ∂L/∂cols into ∂L/∂x.

Both are vectorised: ``im2col`` is one strided view (no copy) reshaped into the matrix (one copy);
``col2im`` loops over the kh·kw kernel offsets only, each adding a whole strided slice, never over
pixels or batch items (``np.add.at`` would be an order of magnitude slower). Where the columns to
scatter are a product (W₂ᵀ g in the input gradient, W₂ᵀ x in the transposed convolution), each
offset's rows of the product are computed just before they are added, into one reused buffer,
so the full column-gradient matrix (the largest array of the layer) is never built. At stride 1
(most layers) the input gradient takes a faster route, ``_input_grad_stride1``: on the padded
image flattened row by row, every kernel offset is a plain shift, so the kh·kw additions become
one sum over a strided view (no copy) of W₂ᵀ g, computed a cache-sized chunk of the batch at a time.

``Conv2d`` goes through its batch in chunks (about 1 MB of columns each), which the calling thread
and a helper thread share when the layer is large enough (:mod:`engine.ops._parallel`: NumPy
releases the GIL in BLAS and in ufuncs, and the course runs OpenBLAS on one thread). Each chunk
writes only its own rows, and the weight gradient is summed per chunk, then over the chunks in
order, so one or two threads give the same bits. Benchmark layer (32x8x28x28 -> 16, 3x3, padding
1, bias, float32; forward + backward, ``python -m benchmarks.run``, 2 CPUs, both free): 3.0 ms on
one thread, 2.3 ms on two (PyTorch 1.45 ms). When other processes keep the cores busy the helper
thread waits for a core and two threads lose (load 3 on 2 cores: 3.1 ms on one, 3.3-3.5 on two).

Sizes come from :mod:`engine.shapes` (H_out = ⌊(H + 2P − D(K − 1) − 1)/S⌋ + 1), which also raises
the error, naming the numbers, when a configuration is impossible.
"""

from __future__ import annotations

import itertools
import numbers

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import shapes
from .._checks import int_pair, positive_int, to_array
from ..autograd import Function
from . import _parallel

__all__ = [
    "im2col",
    "col2im",
    "conv2d",
    "conv_transpose2d",
    "max_pool2d",
    "avg_pool2d",
    "Conv2d",
    "ConvTranspose2d",
    "MaxPool2d",
    "AvgPool2d",
]


# ----------------------------------------------------------------------------- arguments
def _widths(padding, kernel, stride, dilation, op: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """Padding as ((top, bottom), (left, right)); also PyTorch's strings 'valid' and 'same'.

    'same' pads D(K − 1) in total, the odd pixel at the bottom/right as PyTorch; it needs stride 1.
    """
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding == "same":
            if stride != (1, 1):
                raise ValueError(f"{op}: padding='same' needs stride 1, got stride={stride}")
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return tuple((t // 2, t - t // 2) for t in totals)
        raise ValueError(f"{op}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    ph, pw = int_pair(op, "padding", padding, 0)
    return (ph, ph), (pw, pw)


def _output_hw(op, x_shape, kernel, stride, widths, dilation) -> tuple[int, int]:
    """(H_out, W_out) from engine.shapes; an impossible size raises ValueError with the numbers."""
    out = []
    for size, k, s, (lo, hi), d in zip(x_shape[-2:], kernel, stride, widths, dilation):
        try:
            # asymmetric padding (lo, hi) gives the size of symmetric padding lo on size + hi − lo
            out.append(shapes.conv_output_size(size + hi - lo, k, s, lo, d))
        except ValueError as error:
            raise ValueError(f"{op}: input of shape {tuple(x_shape)}: {error}") from None
    return out[0], out[1]


# ----------------------------------------------------------------------------- im2col / col2im
def _pad(x: np.ndarray, widths, value=0.0) -> np.ndarray:
    """x [N, C, H, W] with ``widths`` ((top, bottom), (left, right)) rows and columns of ``value``
    around it (a filled array and one slice assignment: half the time of ``np.pad``)."""
    if not any(lo or hi for lo, hi in widths):
        return x
    (top, bottom), (left, right) = widths
    n, c, h, w = x.shape
    out = np.full((n, c, h + top + bottom, w + left + right), value, dtype=x.dtype)
    out[:, :, top : top + h, left : left + w] = x
    return out


def _windows(xp: np.ndarray, kernel, stride, dilation, out_hw) -> np.ndarray:
    """A strided *view* [N, C, kh, kw, H_out, W_out] of the padded input (nothing is copied):
    ``view[n, c, i, j, p, q] = xp[n, c, p·s_h + i·d_h, q·s_w + j·d_w]``."""
    sn, sc, sh, sw = xp.strides
    return as_strided(
        xp,
        shape=(xp.shape[0], xp.shape[1], kernel[0], kernel[1], out_hw[0], out_hw[1]),
        strides=(sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]),
        writeable=False,
    )


def _im2col(x, kernel, stride, widths, dilation, out_hw) -> np.ndarray:
    """[N, C·kh·kw, H_out·W_out] (one copy of the strided view)."""
    n, c = x.shape[:2]
    view = _windows(_pad(x, widths), kernel, stride, dilation, out_hw)
    return view.reshape(n, c * kernel[0] * kernel[1], out_hw[0] * out_hw[1])


def _col2im(cols6, x_shape, kernel, stride, widths, dilation) -> np.ndarray:
    """Adjoint of ``_im2col``: add ``cols6[n, c, i, j, p, q]`` onto x_pad[n, c, p·s_h + i·d_h, q·s_w + j·d_w].

    ``cols6`` is [N, C, kh, kw, H_out, W_out] (it may be a broadcast view). One strided slice-add
    per kernel offset (i, j); overlapping windows accumulate. The padding is cut off at the end.
    """
    n, c, h, w = x_shape
    (top, bottom), (left, right) = widths
    ho, wo = cols6.shape[-2:]
    dtype = np.result_type(cols6.dtype, np.float32) if cols6.dtype.kind != "f" else cols6.dtype
    out = np.zeros((n, c, h + top + bottom, w + left + right), dtype=dtype)
    for i in range(kernel[0]):
        r0 = i * dilation[0]
        rows = slice(r0, r0 + stride[0] * (ho - 1) + 1, stride[0])
        for j in range(kernel[1]):
            c0 = j * dilation[1]
            out[:, :, rows, c0 : c0 + stride[1] * (wo - 1) + 1 : stride[1]] += cols6[:, :, i, j]
    return out[:, :, top : top + h, left : left + w]


def _product_col2im(w2t, rhs, x_shape, kernel, stride, widths, dilation, out_hw) -> np.ndarray:
    """``_col2im`` of the product ``w2t @ rhs``, without building that product.

    w2t [G, (C/G)·kh·kw, K] and rhs [N, G, K, H_out·W_out]: the product is the column matrix
    (e.g. W₂ᵀ g, the gradient of the columns), C·kh·kw rows of N·L values, usually the largest
    array of a convolution. Instead, for each kernel offset (i, j) the slice of C rows that
    belongs to it is computed into one reused buffer and added onto its strided slice of the
    image: kh·kw smaller products, the same arithmetic, a fraction of the memory traffic.
    """
    n, c, h, w = x_shape
    groups, _, k = w2t.shape
    (top, bottom), (left, right) = widths
    ho, wo = out_hw  # the window grid (rhs has ho·wo columns)
    w5 = w2t.reshape(groups, c // groups, kernel[0], kernel[1], k)
    dtype = np.result_type(w2t.dtype, rhs.dtype)
    out = np.zeros((n, c, h + top + bottom, w + left + right), dtype=dtype)
    buf = np.empty((n, groups, c // groups, ho * wo), dtype=dtype)
    piece = buf.reshape(n, c, ho, wo)
    for i in range(kernel[0]):
        r0 = i * dilation[0]
        rows = slice(r0, r0 + stride[0] * (ho - 1) + 1, stride[0])
        for j in range(kernel[1]):
            c0 = j * dilation[1]
            np.matmul(w5[:, :, i, j, :], rhs, out=buf)
            out[:, :, rows, c0 : c0 + stride[1] * (wo - 1) + 1 : stride[1]] += piece
    return out[:, :, top : top + h, left : left + w]


D_CHUNK_BYTES = 1 << 20  # of W₂ᵀ g per step of _input_grad_stride1: it stays in cache


def _input_grad_stride1(w2t, g, x_shape, kernel, widths, dilation) -> np.ndarray:
    """``_col2im`` of ``w2t @ g`` for a stride-1 convolution, with all kh·kw offsets in one sum.

    Flatten the padded image row by row (row length W_p). With stride 1, output position (p, q)
    and kernel tap (i, j) meet pixel (p + i·d_h, q + j·d_w), at flat index u = m + off_ij with
    m = p·W_p + q and off_ij = i·d_h·W_p + j·d_w. So lay g on a grid W_p wide (zeros in the
    columns q >= W_out), compute D = W₂ᵀ · g into rows [(c, i, j), m] with off_max zeros before
    and zeros after, and each pixel's gradient is one sum over a strided view of D (no copy):

        ∂L/∂x_pad[n, c, u] = Σ_(i,j) D[n, (c, i, j), u − off_ij]

    ``_product_col2im`` instead adds kh·kw slices one after the other, each a read and a write of
    the whole image. Batch items go in steps of about 1 MB of D, so D stays in cache.
    Measured on the benchmark layer (32x8x28x28 -> 16, 3x3, float32, one thread): 1.5 ms instead
    of 2.5 ms, forward + backward 5.7 -> 4.7 ms. A stride > 1 has no such shift: general path.
    """
    out = np.empty(x_shape, dtype=np.result_type(w2t.dtype, g.dtype))
    _stride1_input_grad_filler(w2t, g, x_shape, kernel, widths, dilation, x_shape[0])(out, 0, x_shape[0])
    return out


def _flat_grid(x_shape, kernel, widths, dilation) -> tuple[int, int, int]:
    """(H_p, W_p, the largest kernel offset on the padded image flattened row by row)."""
    (top, bottom), (left, right) = widths
    hp, wp = x_shape[2] + top + bottom, x_shape[3] + left + right
    return hp, wp, (kernel[0] - 1) * dilation[0] * wp + (kernel[1] - 1) * dilation[1]


def _stride1_input_grad_filler(w2t, g, x_shape, kernel, widths, dilation, items, slot=0):
    """``fill(out, start, stop)``: ``_input_grad_stride1`` of batch items start..stop written into
    out[start:stop], in steps of at most ``items`` items and about D_CHUNK_BYTES of D. Its buffers
    are made here, once: one filler per thread (``slot``: which of the calling thread's kept
    scratch arrays it uses), any number of calls (four NumPy calls a step)."""
    _, c_in, h, w = x_shape
    groups, k, c_group_out = w2t.shape
    (top, _), (left, _) = widths
    hp, wp, lead = _flat_grid(x_shape, kernel, widths, dilation)
    row = lead + hp * wp
    ho, wo = g.shape[-2:]
    kh, kw = kernel
    dtype = np.result_type(w2t.dtype, g.dtype)
    items = max(1, min(items, D_CHUNK_BYTES // (groups * k * row * np.dtype(dtype).itemsize)))
    w2t = np.ascontiguousarray(w2t)
    grid = _parallel.scratch(("grid", slot), (items, groups * c_group_out, ho, wp), g.dtype)  # g, W_p wide
    grid[..., wo:] = 0
    grid4 = grid.reshape(items, groups, c_group_out, ho * wp)
    d = _parallel.scratch(("D", slot), (items, groups, k, row), dtype)
    d[..., :lead] = 0
    d[..., lead + ho * wp :] = 0
    sn, _, sr, se = d.strides
    view = as_strided(  # view[n, c, i, j, u] = D[n, (c, i, j), lead − off_ij + u]
        d[:, 0, 0, lead:],
        shape=(items, c_in, kh, kw, hp * wp),
        strides=(sn, kh * kw * sr, kw * sr - dilation[0] * wp * se, sr - dilation[1] * se, se),
        writeable=False,
    )
    padded = _parallel.scratch(("padded", slot), (items, c_in, hp * wp), dtype)
    inside = padded.reshape(items, c_in, hp, wp)[:, :, top : top + h, left : left + w]

    def fill(out, start, stop):
        for first in range(start, stop, items):
            m = min(items, stop - first)
            grid[:m, :, :, :wo] = g[first : first + m]
            np.matmul(w2t, grid4[:m], out=d[:m, :, :, lead : lead + ho * wp])
            view[:m].sum(axis=(2, 3), out=padded[:m])
            out[first : first + m] = inside[:m]

    return fill


def im2col(x, kernel_size, stride=1, padding=0, dilation=1) -> np.ndarray:
    """The column matrix of a convolution: every receptive field as a column.

    ``x``: [N, C, H, W] (or [C, H, W]), an array or a Tensor. Returns a NumPy array
    [N, C·kh·kw, H_out·W_out] (or [C·kh·kw, H_out·W_out]), the layout of
    ``torch.nn.functional.unfold``::

        cols[n, c·kh·kw + i·kw + j, p·W_out + q] = x_pad[n, c, p·s_h + i·d_h, q·s_w + j·d_w]

    ``conv2d`` computes ``weight.reshape(C_out, -1) @ cols`` from exactly this matrix.
    """
    op = "im2col"
    x = to_array(op, "input", x)
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: input must be [N, C, H, W] or [C, H, W], got shape {x.shape}")
    kernel = int_pair(op, "kernel_size", kernel_size, 1)
    stride = int_pair(op, "stride", stride, 1)
    dilation = int_pair(op, "dilation", dilation, 1)
    widths = _widths(padding, kernel, stride, dilation, op)
    batched = x if x.ndim == 4 else x[None]
    out_hw = _output_hw(op, x.shape, kernel, stride, widths, dilation)
    cols = _im2col(batched, kernel, stride, widths, dilation, out_hw)
    return cols if x.ndim == 4 else cols[0]


def col2im(cols, output_size, kernel_size, stride=1, padding=0, dilation=1) -> np.ndarray:
    """The adjoint of :func:`im2col` (``torch.nn.functional.fold``): [N, C·kh·kw, L] -> [N, C, H, W].

    Each column entry is added back onto the pixel it was copied from, so a pixel covered by k
    windows receives the sum of k entries: ``col2im(im2col(ones))`` counts the windows per pixel.
    ``output_size`` is (H, W) of the image.
    """
    op = "col2im"
    cols = to_array(op, "input", cols)
    kernel = int_pair(op, "kernel_size", kernel_size, 1)
    stride = int_pair(op, "stride", stride, 1)
    dilation = int_pair(op, "dilation", dilation, 1)
    h, w = int_pair(op, "output_size", output_size, 1)
    widths = _widths(padding, kernel, stride, dilation, op)
    batched = cols if cols.ndim == 3 else cols[None]
    if cols.ndim not in (2, 3) or batched.shape[1] % (kernel[0] * kernel[1]):
        raise ValueError(
            f"{op}: cols must be [N, C·kh·kw, L] with kh·kw = {kernel[0] * kernel[1]}, got shape {cols.shape}"
        )
    n, rows, length = batched.shape
    c = rows // (kernel[0] * kernel[1])
    ho, wo = _output_hw(op, (n, c, h, w), kernel, stride, widths, dilation)
    if ho * wo != length:
        raise ValueError(f"{op}: cols has {length} columns but a {h}x{w} image has {ho}x{wo} = {ho * wo} windows")
    out = _col2im(batched.reshape(n, c, *kernel, ho, wo), (n, c, h, w), kernel, stride, widths, dilation)
    return out if cols.ndim == 3 else out[0]


# ----------------------------------------------------------------------------- convolution
CHUNK_BYTES = 1 << 20  # of the column matrix per chunk of the batch (benchmark layer: 7 chunks)


def _chunks(cols: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each chunk of the batch: equal chunks of about CHUNK_BYTES of ``cols``."""
    return _parallel.even_chunks(len(cols), -(-cols.nbytes // CHUNK_BYTES))


class Conv2d(Function):
    """out[n, o] = Σ_(c,i,j) W[o, c, i, j] · x_pad[n, c, p·s + i·d, q·s + j·d] + b[o]  (cross-correlation).

    As matrices, per batch item and group: out = W₂ · cols + b, with cols = im2col(x).
    Gradients (g = ∂L/∂out, reshaped [N, C_out, L]):
        ∂L/∂W₂ = Σₙ gₙ · colsₙᵀ,   ∂L/∂x = col2im(W₂ᵀ · g),   ∂L/∂b = Σ_(n,p,q) g.

    The bias rides in the products: cols gets a last row of ones and W₂ a last column b, so
    [W₂ | b] · [cols; 1] = W₂ · cols + b, and the last column of Σₙ gₙ · [colsₙ; 1]ᵀ is ∂L/∂b
    (no separate pass over the output for either). The batch goes in chunks (``_chunks``), shared
    by two threads when the layer is large enough (:mod:`engine.ops._parallel`); each chunk's
    share of ∂L/∂W₂ is added in chunk order, so the result does not depend on the threads.
    """

    @staticmethod
    def forward(ctx, x, weight, bias=None, *, stride, widths, dilation, groups, out_hw):
        n, c_in = x.shape[:2]
        c_out, c_group, kh, kw = weight.shape
        k = c_group * kh * kw
        length = out_hw[0] * out_hw[1]
        w2 = weight.reshape(groups, c_out // groups, k)
        rows = k  # rows of cols per group: im2col's, and a row of ones when there is a bias
        if bias is not None:
            w2 = np.concatenate([w2, bias.reshape(groups, c_out // groups, 1)], axis=2)
            rows = k + 1
        cols = np.empty((n, groups, rows, length), dtype=x.dtype)  # kept for the backward
        if bias is not None:
            cols[:, :, k] = 1
        out = np.empty((n, groups, c_out // groups, length), dtype=x.dtype)
        taps = (n, groups, c_in // groups, kh, kw, *out_hw)
        windows = _windows(_pad(x, widths), (kh, kw), stride, dilation, out_hw).reshape(taps)
        cols_taps = cols[:, :, :k].reshape(taps)

        def forward_chunk(_, start, stop):
            np.copyto(cols_taps[start:stop], windows[start:stop])
            np.matmul(w2, cols[start:stop], out=out[start:stop])

        bounds = _chunks(cols)
        _parallel.for_chunks(lambda: forward_chunk, bounds, n * c_out * rows * length)
        ctx.save_for_backward(cols, weight)
        ctx.settings = (x.shape, stride, widths, dilation, groups, bounds)
        return out.reshape(n, c_out, *out_hw)

    @staticmethod
    def backward(ctx, g):
        cols, weight = ctx.saved_tensors
        x_shape, stride, widths, dilation, groups, bounds = ctx.settings
        needs = ctx.needs_input_grad
        n, c_in = x_shape[:2]
        c_out, c_group, kh, kw = weight.shape
        k = c_group * kh * kw
        rows = cols.shape[2]
        dtype = np.result_type(g.dtype, cols.dtype)
        g4 = g.reshape(n, groups, c_out // groups, cols.shape[-1])
        w2t = weight.reshape(groups, c_out // groups, k).transpose(0, 2, 1)
        gx = np.empty(x_shape, dtype=dtype) if needs[0] else None
        wants_sums = needs[1] or (len(needs) == 3 and needs[2])
        # Σₙ gₙ [colsₙ; 1]ᵀ per chunk (small products summed: one big one would need a transposed
        # copy); the chunks' sums are added in chunk order below, the same with any number of threads
        sums = np.empty((len(bounds), groups, c_out // groups, rows), dtype=dtype) if wants_sums else None

        slots = itertools.count()

        def backward_worker():
            # one per thread: the stride-1 input gradient's buffers are made once, here
            items = max(stop - start for start, stop in bounds)
            fill_gx = (
                _stride1_input_grad_filler(w2t, g, x_shape, (kh, kw), widths, dilation, items, next(slots))
                if gx is not None and stride == (1, 1)
                else None
            )

            def backward_chunk(index, start, stop):
                if sums is not None:
                    np.matmul(g4[start:stop], cols[start:stop].transpose(0, 1, 3, 2)).sum(axis=0, out=sums[index])
                if fill_gx is not None:  # col2im(W₂ᵀ g)
                    fill_gx(gx, start, stop)
                elif gx is not None:
                    gx[start:stop] = _product_col2im(
                        w2t,
                        g4[start:stop],
                        (stop - start, *x_shape[1:]),
                        (kh, kw),
                        stride,
                        widths,
                        dilation,
                        g.shape[-2:],
                    )

            return backward_chunk

        # the forward's measure, as in forward: both passes of a layer take the same decision
        _parallel.for_chunks(backward_worker, bounds, n * c_out * rows * cols.shape[-1])
        total = sums.sum(axis=0) if sums is not None else None
        gw = np.ascontiguousarray(total[:, :, :k]).reshape(weight.shape) if needs[1] else None
        if len(needs) < 3:
            return gx, gw
        gb = total[:, :, k].reshape(c_out) if needs[2] else None
        return gx, gw, gb


class ConvTranspose2d(Function):
    """The adjoint of Conv2d in its input: out = col2im(W₂ᵀ · x) + b, W of shape [C_in, C_out/G, kh, kw].

    Each input pixel x[n, c, p, q] spreads W[c, :, :, :]·x onto the output window at
    (p·s − P + i·d, q·s − P + j·d). Gradients (g = ∂L/∂out):
        ∂L/∂x = W₂ · im2col(g)  (a convolution of g with the same weight),
        ∂L/∂W₂ = Σₙ xₙ · im2col(g)ₙᵀ,   ∂L/∂b = Σ_(n,p,q) g.
    """

    @staticmethod
    def forward(ctx, x, weight, bias=None, *, stride, widths, dilation, groups, out_hw):
        n, c_in, h, w = x.shape
        _, c_group, kh, kw = weight.shape
        k = c_group * kh * kw
        x4 = x.reshape(n, groups, c_in // groups, h * w)
        w2t = weight.reshape(groups, c_in // groups, k).transpose(0, 2, 1)  # [G, k, C_in/G]
        y_shape = (n, c_group * groups, *out_hw)
        out = _product_col2im(w2t, x4, y_shape, (kh, kw), stride, widths, dilation, (h, w))  # col2im(W₂ᵀ x)
        if bias is not None:
            out = out + bias[:, None, None]
        ctx.save_for_backward(x, weight)
        ctx.settings = (stride, widths, dilation, groups)
        return np.ascontiguousarray(out)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        stride, widths, dilation, groups = ctx.settings
        needs = ctx.needs_input_grad
        n, c_in, h, w = x.shape
        _, c_group, kh, kw = weight.shape
        k = c_group * kh * kw
        cols = _im2col(g, (kh, kw), stride, widths, dilation, (h, w)).reshape(n, groups, k, h * w)
        gx = gw = gb = None
        if needs[0]:
            w2 = weight.reshape(groups, c_in // groups, k)
            gx = np.matmul(w2, cols).reshape(x.shape)
        if needs[1]:
            x4 = x.reshape(n, groups, c_in // groups, h * w)
            gw = np.matmul(x4, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(weight.shape)
        if len(needs) == 3 and needs[2]:
            gb = g.sum(axis=(0, 2, 3))
        return (gx, gw, gb) if len(needs) == 3 else (gx, gw)


# ----------------------------------------------------------------------------- pooling
class MaxPool2d(Function):
    """out[n, c, p, q] = max over the window (i, j) of x_pad[n, c, p·s + i·d, q·s + j·d], padding −∞.

    Gradient: each g[n, c, p, q] goes to ONE input element, the window's first maximum in
    row-major window order (as PyTorch); overlapping windows that pick the same pixel add up.
    """

    @staticmethod
    def forward(ctx, x, *, kernel, stride, widths, dilation, out_hw):
        n, c = x.shape[:2]
        view = _windows(_pad(x, widths, -np.inf), kernel, stride, dilation, out_hw)
        flat = view.reshape(n, c, kernel[0] * kernel[1], *out_hw)  # one copy
        arg = flat.argmax(axis=2)  # first maximum; a NaN counts as the maximum, as PyTorch
        out = np.take_along_axis(flat, arg[:, :, None], axis=2)[:, :, 0]
        ctx.arg = arg
        ctx.settings = (x.shape, kernel, stride, widths, dilation)
        return out

    @staticmethod
    def backward(ctx, g):
        x_shape, kernel, stride, widths, dilation = ctx.settings
        n, c = x_shape[:2]
        dcols = np.zeros((n, c, kernel[0] * kernel[1], *g.shape[-2:]), dtype=g.dtype)
        np.put_along_axis(dcols, ctx.arg[:, :, None], g[:, :, None], axis=2)
        return _col2im(dcols.reshape(n, c, *kernel, *g.shape[-2:]), x_shape, kernel, stride, widths, dilation)


class AvgPool2d(Function):
    """out[n, c, p, q] = (1/D[p, q]) Σ_(i,j) x_pad[n, c, p·s + i, q·s + j], zero padding.

    D = kh·kw (count_include_pad), or the count of non-padding pixels in the window, or
    divisor_override. Gradient: every pixel of the window receives g[n, c, p, q] / D[p, q].
    """

    @staticmethod
    def forward(ctx, x, *, kernel, stride, widths, divisor, out_hw):
        view = _windows(_pad(x, widths), kernel, stride, (1, 1), out_hw)
        out = view[:, :, 0, 0].copy()
        for i in range(kernel[0]):  # kh·kw slice-adds: faster than summing the strided view
            for j in range(kernel[1]):
                if i or j:
                    out += view[:, :, i, j]
        out /= divisor
        ctx.settings = (x.shape, kernel, stride, widths, divisor)
        return out

    @staticmethod
    def backward(ctx, g):
        x_shape, kernel, stride, widths, divisor = ctx.settings
        share = (g / divisor)[:, :, None, None]
        cols6 = np.broadcast_to(share, (*g.shape[:2], *kernel, *g.shape[-2:]))
        return _col2im(cols6, x_shape, kernel, stride, widths, (1, 1))


# ----------------------------------------------------------------------------- functions
def _tensor(x):
    from ..tensor import as_tensor

    return as_tensor(x)


def _check_input(op: str, x, what: str = "input") -> bool:
    """Accept [N, C, H, W] or unbatched [C, H, W]; returns True when a batch dim must be added."""
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: {what} must be 4-D [N, C, H, W] (or 3-D [C, H, W]), got shape {x.shape}")
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: {what} must be floating point, got {x.dtype}; convert it with .float()")
    return x.ndim == 3


def _check_dtypes(op: str, x, weight, bias) -> None:
    """Input, weight and bias must share one dtype, as PyTorch requires (no silent float64)."""
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != x.dtype:
            raise TypeError(
                f"{op}: input is {x.dtype} but {name} is {t.dtype}; they must have the same dtype "
                "(as in PyTorch): convert one of them with .float() or .double()"
            )


def _check_bias(op: str, bias, channels: int):
    if bias is None:
        return None
    bias = _tensor(bias)
    if bias.shape != (channels,):
        raise ValueError(f"{op}: bias must have shape ({channels},) (one per output channel), got {bias.shape}")
    return bias


def _conv_operands(op: str, input, weight, groups, weight_layout: str):
    """(input, weight as Tensors, whether the input was unbatched, groups), checked."""
    x, weight = _tensor(input), _tensor(weight)
    unbatched = _check_input(op, x)
    groups = positive_int(op, "groups", groups)
    if weight.ndim != 4:
        raise ValueError(f"{op}: weight must be 4-D {weight_layout}, got shape {weight.shape}")
    return x, weight, unbatched, groups


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation, as ``torch.nn.functional.conv2d``.

    input [N, C_in, H, W] (or [C_in, H, W]), weight [C_out, C_in/groups, kh, kw], bias [C_out];
    stride, padding, dilation: int or (h, w) pair; padding may also be 'valid' or 'same'.
    Output [N, C_out, H_out, W_out] with H_out = ⌊(H + 2P − D(kh − 1) − 1)/S⌋ + 1.
    Input, weight and bias must share one dtype (float32 with float64 is a TypeError, as PyTorch).
    """
    op = "conv2d"
    x, weight, unbatched, groups = _conv_operands(op, input, weight, groups, "[C_out, C_in/groups, kh, kw]")
    c_in = x.shape[-3]
    if c_in != weight.shape[1] * groups:
        raise ValueError(
            f"{op}: input of shape {x.shape} has {c_in} channels, but weight of shape {weight.shape} "
            f"expects {weight.shape[1]}·groups = {weight.shape[1] * groups} (weight is "
            "[C_out, C_in/groups, kh, kw])"
        )
    if weight.shape[0] % groups:
        raise ValueError(
            f"{op}: C_out = {weight.shape[0]} (weight shape {weight.shape}) is not divisible by groups={groups}"
        )
    bias = _check_bias(op, bias, weight.shape[0])
    _check_dtypes(op, x, weight, bias)
    kernel = weight.shape[2:]
    stride = int_pair(op, "stride", stride, 1)
    dilation = int_pair(op, "dilation", dilation, 1)
    widths = _widths(padding, kernel, stride, dilation, op)
    out_hw = _output_hw(op, x.shape, kernel, stride, widths, dilation)
    if unbatched:
        x = x.unsqueeze(0)
    inputs = (x, weight) if bias is None else (x, weight, bias)
    out = Conv2d.apply(*inputs, stride=stride, widths=widths, dilation=dilation, groups=groups, out_hw=out_hw)
    return out.squeeze(0) if unbatched else out


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution (the gradient of conv2d in its input), as ``torch.nn.functional.conv_transpose2d``.

    input [N, C_in, H, W], weight [C_in, C_out/groups, kh, kw], bias [C_out].
    Output H_out = (H − 1)S − 2P + D(kh − 1) + output_padding + 1 (see engine.shapes).
    Input, weight and bias must share one dtype, as in conv2d.
    """
    op = "conv_transpose2d"
    x, weight, unbatched, groups = _conv_operands(op, input, weight, groups, "[C_in, C_out/groups, kh, kw]")
    c_in = x.shape[-3]
    if c_in != weight.shape[0] or c_in % groups:
        raise ValueError(
            f"{op}: input of shape {x.shape} has {c_in} channels, but weight of shape {weight.shape} "
            f"is [C_in, C_out/groups, kh, kw] with C_in = {weight.shape[0]}"
            + (f" (and C_in must be divisible by groups={groups})" if c_in % groups else "")
        )
    bias = _check_bias(op, bias, weight.shape[1] * groups)
    _check_dtypes(op, x, weight, bias)
    kernel = weight.shape[2:]
    stride = int_pair(op, "stride", stride, 1)
    dilation = int_pair(op, "dilation", dilation, 1)
    padding = int_pair(op, "padding", padding, 0)
    output_padding = int_pair(op, "output_padding", output_padding, 0)
    try:
        out_hw = shapes.conv_transpose_output_size(x.shape[-2:], kernel, stride, padding, output_padding, dilation)
    except ValueError as error:
        raise ValueError(f"{op}: input of shape {x.shape}, weight of shape {weight.shape}: {error}") from None
    widths = tuple((p, p) for p in padding)
    if unbatched:
        x = x.unsqueeze(0)
    inputs = (x, weight) if bias is None else (x, weight, bias)
    out = ConvTranspose2d.apply(*inputs, stride=stride, widths=widths, dilation=dilation, groups=groups, out_hw=out_hw)
    return out.squeeze(0) if unbatched else out


def _pool_settings(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = int_pair(op, "kernel_size", kernel_size, 1)
    stride = (
        kernel
        if stride is None or (isinstance(stride, (tuple, list)) and not stride)
        else int_pair(op, "stride", stride, 1)
    )
    padding = int_pair(op, "padding", padding, 0)
    dilation = int_pair(op, "dilation", dilation, 1)
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(
            f"{op}: padding {padding} must be at most half the kernel size {kernel} "
            "(otherwise a window could hold only padding)"
        )
    widths = tuple((p, p) for p in padding)
    out_hw = _output_hw(op, x.shape, kernel, stride, widths, dilation)
    if ceil_mode:  # one more window where a partial one remains, if it starts inside the input or
        # its left padding (PyTorch's rule); the extra bottom/right rows are padding no window counts
        widths, grown = [], []
        for size, k, s, p, d, o in zip(x.shape[-2:], kernel, stride, padding, dilation, out_hw):
            span = size + 2 * p - d * (k - 1) - 1
            if span % s and o * s < size + p:
                o += 1
            widths.append((p, p + max(0, (o - 1) * s + d * (k - 1) + 1 - size - 2 * p)))
            grown.append(o)
        widths, out_hw = tuple(widths), tuple(grown)
    return kernel, stride, widths, dilation, out_hw


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over each window, as ``torch.nn.functional.max_pool2d`` (stride defaults to kernel_size).

    Padding counts as −∞ (it never wins). With ``return_indices=True`` also returns, per output,
    the flat index h·W + w of the chosen pixel in its [H, W] plane (as PyTorch).
    """
    op = "max_pool2d"
    x = _tensor(input)
    unbatched = _check_input(op, x)
    kernel, stride, widths, dilation, out_hw = _pool_settings(op, x, kernel_size, stride, padding, dilation, ceil_mode)
    if unbatched:
        x = x.unsqueeze(0)
    out = MaxPool2d.apply(x, kernel=kernel, stride=stride, widths=widths, dilation=dilation, out_hw=out_hw)
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    from ..tensor import Tensor

    # recompute the winner's position from the window offset: row p·s + i·d − P, column likewise
    arg = _max_offsets(x.data, kernel, stride, widths, dilation, out_hw)
    i, j = np.divmod(arg, kernel[1])
    rows = np.arange(out_hw[0])[:, None] * stride[0] + i * dilation[0] - widths[0][0]
    cols = np.arange(out_hw[1])[None, :] * stride[1] + j * dilation[1] - widths[1][0]
    index = (rows * x.shape[-1] + cols).astype(np.int64)
    return out, Tensor._wrap(index[0] if unbatched else index)


def _max_offsets(x, kernel, stride, widths, dilation, out_hw) -> np.ndarray:
    view = _windows(_pad(x, widths, -np.inf), kernel, stride, dilation, out_hw)
    return view.reshape(*x.shape[:2], kernel[0] * kernel[1], *out_hw).argmax(axis=2)


def avg_pool2d(
    input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
):
    """Mean over each window, as ``torch.nn.functional.avg_pool2d`` (stride defaults to kernel_size).

    Zero padding; the divisor is kh·kw when ``count_include_pad`` (padding counts), else the
    number of real pixels in the window; ``divisor_override`` replaces both.
    """
    op = "avg_pool2d"
    x = _tensor(input)
    unbatched = _check_input(op, x)
    kernel, stride, widths, _, out_hw = _pool_settings(op, x, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if (
            isinstance(divisor_override, bool)
            or not isinstance(divisor_override, numbers.Integral)
            or divisor_override < 1
        ):
            raise ValueError(f"{op}: divisor_override must be a positive int, got {divisor_override!r}")
        divisor = np.asarray(divisor_override, dtype=x.dtype)
    elif not any(hi for _, hi in widths) or (count_include_pad and all(lo == hi for lo, hi in widths)):
        divisor = np.asarray(kernel[0] * kernel[1], dtype=x.dtype)
    else:  # windows that reach beyond the padding (ceil_mode) or into it (not count_include_pad)
        counts = []
        for size, k, s, (p, _), o in zip(x.shape[-2:], kernel, stride, widths, out_hw):
            start = np.arange(o) * s - p  # first row of each window in unpadded coordinates
            lo, hi = (-p, size + p) if count_include_pad else (0, size)
            counts.append(np.minimum(start + k, hi) - np.maximum(start, lo))
        divisor = (counts[0][:, None] * counts[1][None, :]).astype(x.dtype)
    if unbatched:
        x = x.unsqueeze(0)
    out = AvgPool2d.apply(x, kernel=kernel, stride=stride, widths=widths, divisor=divisor, out_hw=out_hw)
    return out.squeeze(0) if unbatched else out
