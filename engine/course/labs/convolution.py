"""The computations behind notebook 05 (convolution), one function per picture or exercise.

- Arithmetic: :func:`conv_report` / :func:`conv_transpose_report` (output size, effective kernel,
  parameter count, and a sentence that explains impossible or wasteful settings);
  :func:`conv_placements` / :func:`conv_transpose_placements` (where every kernel tap lands, for
  the strip diagram); :func:`conv_grid` (the padded 2-D input with one output pixel's taps lit).
- :func:`receptive_field_table`: a layer stack's receptive field, jump and feature-map size, row
  by row; :func:`uniform_stack` builds a custom stack from a few numbers.
- im2col made visible: :func:`im2col_view` (the column matrix, one output pixel's patch, row and
  weights), :func:`im2col_cells` (the same as grids of cell kinds and values, for drawing) and
  :func:`im2col_backward` (the backward pass as two transposed products);
  :func:`transpose_cells` draws a transposed convolution's stamps the same way.
- Classic filters: :data:`CLASSIC_FILTERS`, :func:`sample_image`, :func:`apply_filter`.
- A small CNN on the UCI digits: the CNN, its training loop and the default run are the
  notebook's lesson cells; here :func:`cnn_accuracy`, :func:`confusion`, :func:`feature_maps`
  and :func:`learned_filters` evaluate the model the page passes in, and :func:`shipped_cnn`
  rebuilds the default one from the checkpoint the course ships (:data:`CHECKPOINTS`) when the
  page's code is the code that trained it.

Everything that shows a number computes it here (or in ``engine.shapes`` / ``engine.ops.conv``),
so the notebook only draws and the tests can check each value.
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

import engine.functional as F
from engine import Tensor, data, nn, no_grad, shapes
from engine.course import checkpoints
from engine.course.checkpoints import convolution_baselines as _baselines_checkpoint  # static: for the bundler
from engine.course.checkpoints import convolution_cnn as _cnn_checkpoint
from engine.course.checkpoints import convolution_seeds as _seeds_checkpoint
from engine.metrics import confusion_matrix
from engine.ops.conv import col2im, conv2d, im2col
from engine.random import fork_rng

__all__ = [
    "CHECKPOINTS",
    "CLASSIC_FILTERS",
    "CNN_CODE",
    "CNN_DEFAULTS",
    "CNNHistory",
    "DigitsCNN",
    "ConvCost",
    "FieldRow",
    "Grid",
    "Placements",
    "TransposePlacements",
    "ConvReport",
    "EQUIVARIANCE_CANVAS",
    "Equivariance",
    "EffectiveField",
    "SeparableCheck",
    "conv_costs",
    "effective_receptive_field",
    "separable_check",
    "Im2colBackward",
    "Im2colView",
    "TwoConvolutions",
    "apply_filter",
    "cnn_accuracy",
    "compose_kernels",
    "confusion",
    "conv_grid",
    "conv_placements",
    "conv_report",
    "conv_transpose_placements",
    "conv_transpose_report",
    "shipped_cnn",
    "BASELINE_CODE",
    "BASELINE_NAMES",
    "DigitsBaselines",
    "shipped_baselines",
    "shift_digits",
    "shifted_accuracy",
    "ink_share",
    "feature_maps",
    "heldout_predictions",
    "predictions",
    "im2col_backward",
    "im2col_cells",
    "im2col_view",
    "transpose_cells",
    "learned_filters",
    "receptive_field_table",
    "round_trip_output_padding",
    "sample_image",
    "shift_equivariance",
    "two_convolutions",
    "uniform_stack",
    "BlockGradients",
    "block_gradients",
    "SEED_CODE",
    "SEED_MODELS",
    "SEED_SHIFTS",
    "SEEDS",
    "SeedShifts",
    "seed_shift_accuracy",
    "shipped_seed_shifts",
    "remembered_seed_shifts",
]


# ----------------------------------------------------------------------------- arithmetic
@dataclass(frozen=True)
class ConvReport:
    """What a convolution (or transposed convolution) setting gives, in one dimension.

    ``ok`` False means no valid output; ``message`` then says why and how to fix it. When ``ok``,
    ``notes`` lists the quirks worth seeing (pixels never reached, windows made of padding only).
    """

    ok: bool
    output_size: int | None
    effective_kernel: int
    padded_size: int | None
    params: int
    message: str
    notes: tuple = field(default_factory=tuple)


def _settings(op, **values):
    """Validate integer settings (a clear ValueError naming op and value)."""
    minimums = {
        "size": 1,
        "kernel": 1,
        "stride": 1,
        "padding": 0,
        "dilation": 1,
        "output_padding": 0,
        "c_in": 1,
        "c_out": 1,
    }
    out = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
        if value < minimums[name]:
            raise ValueError(f"{op}: {name} must be >= {minimums[name]}, got {value}")
        out[name] = int(value)
    return out


def conv_report(size, kernel, stride=1, padding=0, dilation=1, c_in=1, c_out=1) -> ConvReport:
    """Output size, effective kernel and parameter count of ``Conv2d(c_in, c_out, kernel, ...)``
    along one spatial dimension, with a sentence for impossible or lossy settings.

        K_eff = D(K - 1) + 1,    O = floor((W + 2P - K_eff) / S) + 1,    params = C_out(C_in K² + 1)

    Impossible (ok=False): the dilated kernel is wider than the padded input. Notes: the last
    ``(W + 2P - K_eff) mod S`` padded pixels are never reached; padding >= K_eff makes windows
    that see padding only.
    """
    op = "conv_report"
    s = _settings(
        op, size=size, kernel=kernel, stride=stride, padding=padding, dilation=dilation, c_in=c_in, c_out=c_out
    )
    w, k, st, p, d = s["size"], s["kernel"], s["stride"], s["padding"], s["dilation"]
    k_eff = shapes.effective_kernel_size(k, d)
    padded = w + 2 * p
    params = shapes.conv2d_params(s["c_in"], s["c_out"], k)
    if k_eff > padded:
        need = math.ceil((k_eff - w) / 2)
        message = (
            f"Impossible: the kernel spans K_eff = {d}·({k}−1)+1 = {k_eff} pixels but the "
            f"padded input has only W+2P = {w}+2·{p} = {padded}. No placement fits. "
            f"Use padding ≥ {need}, a smaller kernel or a smaller dilation."
        )
        return ConvReport(False, None, k_eff, padded, params, message)
    out = shapes.conv_output_size(w, k, st, p, d)
    message = f"O = ⌊(W + 2P − K_eff)/S⌋ + 1 = ⌊({w} + {2 * p} − {k_eff})/{st}⌋ + 1 = {out}"
    notes = []
    leftover = (padded - k_eff) % st
    if leftover:
        notes.append(
            f"The last {leftover} padded pixel(s) are never reached: the stride {st} does "
            f"not divide W + 2P − K_eff = {padded - k_eff}, so the floor drops them."
        )
    if p >= k_eff:
        notes.append(
            f"Padding {p} ≥ K_eff {k_eff}: the first and last windows see padding only "
            f"(their outputs are just the bias)."
        )
    if out == w:
        notes.append("'Same' size: the output is as wide as the input.")
    return ConvReport(True, out, k_eff, padded, params, message, tuple(notes))


def conv_transpose_report(
    size, kernel, stride=1, padding=0, output_padding=0, dilation=1, c_in=1, c_out=1
) -> ConvReport:
    """Output size of ``ConvTranspose2d`` along one dimension, with the reason when impossible.

        O = (W - 1)S - 2P + D(K - 1) + output_padding + 1

    PyTorch requires output_padding < max(S, D) and O >= 1. ``padded_size`` is None (a transposed
    convolution crops P from each side of its full output instead of padding its input).
    """
    op = "conv_transpose_report"
    s = _settings(
        op,
        size=size,
        kernel=kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
        output_padding=output_padding,
        c_in=c_in,
        c_out=c_out,
    )
    w, k, st, p, d, a = (s["size"], s["kernel"], s["stride"], s["padding"], s["dilation"], s["output_padding"])
    k_eff = shapes.effective_kernel_size(k, d)
    # ConvTranspose2d(c_in, c_out) stores a [c_in, c_out, K, K] weight and c_out biases.
    params = s["c_in"] * s["c_out"] * k * k + s["c_out"]
    if a >= max(st, d):
        message = (
            f"Impossible: output_padding must be smaller than the stride or the dilation "
            f"(here {a} ≥ max({st}, {d})). It only picks among the {st} input sizes that a "
            f"stride-{st} convolution maps to the same output."
        )
        return ConvReport(False, None, k_eff, None, params, message)
    full = (w - 1) * st + k_eff + a
    out = full - 2 * p
    if out < 1:
        message = (
            f"Impossible: (W−1)S − 2P + D(K−1) + output_padding + 1 = {(w - 1) * st} − "
            f"{2 * p} + {d * (k - 1)} + {a} + 1 = {out} < 1: the padding {p} crops more "
            f"than the full output of {full} pixels."
        )
        return ConvReport(False, None, k_eff, None, params, message)
    message = (
        f"O = (W−1)S − 2P + D(K−1) + output_padding + 1 = {(w - 1) * st} − {2 * p} + {d * (k - 1)} + {a} + 1 = {out}"
    )
    notes = []
    if st > k_eff:
        notes.append(
            f"Stride {st} > K_eff {k_eff}: the kernel's copies do not touch, leaving "
            f"output pixels that receive nothing (only the bias)."
        )
    elif st > 1 and k_eff % st:
        notes.append(
            f"K_eff {k_eff} is not a multiple of the stride {st}: some output pixels "
            f"receive more kernel copies than others (the checkerboard pattern)."
        )
    return ConvReport(True, out, k_eff, None, params, message, tuple(notes))


def round_trip_output_padding(size, kernel, stride=1, padding=0, dilation=1) -> int:
    """The output_padding that makes ``ConvTranspose2d`` return a convolution's output to ``size``:

        a = (W + 2P − K_eff) mod S

    the pixels the convolution's floor dropped (always < S, as PyTorch requires)."""
    report = conv_report(size, kernel, stride, padding, dilation)
    if not report.ok:
        raise ValueError(f"round_trip_output_padding: {report.message}")
    return (report.padded_size - report.effective_kernel) % int(stride)


# ----------------------------------------------------------------------------- drawings
@dataclass(frozen=True)
class Placements:
    """The strip diagram's columns, one entry per (output o, padded position x) cell, plus the
    taps [O, K] (padded coordinates) and the setting's report."""

    output: np.ndarray
    position: np.ndarray
    pixel: np.ndarray
    kind: np.ndarray
    taps: np.ndarray
    report: ConvReport


def conv_placements(size, kernel, stride=1, padding=0, dilation=1) -> Placements:
    """Where each output's kernel taps land on the padded 1-D input (the strip diagram).

    Output o's taps sit at padded positions ``o·S + k·D`` for k = 0..K-1 (input pixel
    ``o·S + k·D − P``). Returns :class:`Placements`: equal-length columns, one entry per
    (output o, padded position x) cell: ``output``, ``position`` (padded coordinate), ``pixel`` (input index or -1
    in padding), ``kind`` in {'input', 'padding', 'tap', 'tap on padding'}; plus ``taps`` [O, K]
    (padded coordinates) and ``report``. An impossible setting gives empty columns.
    """
    report = conv_report(size, kernel, stride, padding, dilation)
    k = int(kernel)
    if not report.ok:
        z = np.zeros(0, int)
        return Placements(z, z, z, np.zeros(0, object), np.zeros((0, k), int), report)
    out, padded = report.output_size, report.padded_size
    taps = np.arange(out)[:, None] * stride + np.arange(k)[None, :] * dilation  # [O, K]
    position = np.broadcast_to(np.arange(padded), (out, padded))
    output = np.broadcast_to(np.arange(out)[:, None], (out, padded))
    pixel = position - padding
    in_padding = (pixel < 0) | (pixel >= size)
    is_tap = np.zeros((out, padded), bool)
    np.put_along_axis(is_tap, taps, True, axis=1)
    kind = np.where(
        is_tap, np.where(in_padding, "tap on padding", "tap"), np.where(in_padding, "padding", "input")
    ).astype(object)
    return Placements(
        output.ravel(), position.ravel(), np.where(in_padding, -1, pixel).ravel(), kind.ravel(), taps, report
    )


@dataclass(frozen=True)
class TransposePlacements:
    """Where each input pixel's kernel copy lands: one entry per (input i, tap k); ``coverage``
    [O] counts the copies reaching each output pixel."""

    input: np.ndarray
    tap: np.ndarray
    full: np.ndarray
    output: np.ndarray
    kept: np.ndarray
    coverage: np.ndarray
    report: ConvReport


def conv_transpose_placements(size, kernel, stride=1, padding=0, output_padding=0, dilation=1) -> TransposePlacements:
    """Where each input pixel's copy of the kernel lands in a transposed convolution's output.

    Input pixel i writes to the full (uncropped) positions ``u = i·S + k·D`` for k = 0..K-1; the
    result keeps ``u - P`` for 0 <= u - P < O (P is cropped from each side, output_padding adds
    positions at the end). Columns, one row per (input i, tap k): ``input``, ``tap``, ``full``
    (u), ``output`` (u - P, or -1 when cropped), ``kept`` (bool); plus ``coverage`` [O] (how many
    copies reach each output pixel) and ``report``.
    """
    report = conv_transpose_report(size, kernel, stride, padding, output_padding, dilation)
    if not report.ok:
        z = np.zeros(0, int)
        return TransposePlacements(z, z, z, z, np.zeros(0, bool), z, report)
    inp, tap = np.meshgrid(np.arange(size), np.arange(kernel), indexing="ij")
    full = inp * stride + tap * dilation
    out = full - padding
    kept = (out >= 0) & (out < report.output_size)
    coverage = np.bincount(out[kept].ravel(), minlength=report.output_size)
    return TransposePlacements(
        inp.ravel(), tap.ravel(), full.ravel(), np.where(kept, out, -1).ravel(), kept.ravel(), coverage, report
    )


def transpose_cells(placements: TransposePlacements) -> dict:
    """The stamps of :func:`conv_transpose_placements` as 2-D grids, rows input pixel i and
    columns full (uncropped) output position u: ``kind`` 'kept' or 'cropped' where i's kernel
    copy lands, 'empty' elsewhere; ``text`` the output index it lands on, or '×' when cropped."""
    rows = len(placements.input) and int(placements.input.max()) + 1
    cols = len(placements.full) and int(placements.full.max()) + 1
    kind = np.full((rows, cols), "empty", dtype=object)
    text = np.full((rows, cols), "", dtype=object)
    kind[placements.input, placements.full] = np.where(placements.kept, "kept", "cropped")
    text[placements.input, placements.full] = [str(o) if k else "×" for o, k in zip(placements.output, placements.kept)]
    return {"kind": kind, "text": text}


@dataclass(frozen=True)
class Grid:
    """The padded input's cells (``row``, ``col``, ``kind``), the output's cells with the
    ``selected`` one, the output pixel used (clipped) and the report."""

    row: np.ndarray
    col: np.ndarray
    kind: np.ndarray
    output_row: np.ndarray
    output_col: np.ndarray
    selected: np.ndarray
    out_row: int
    out_col: int
    report: ConvReport


def conv_grid(size, kernel, stride=1, padding=0, dilation=1, out_row=0, out_col=0) -> Grid:
    """The padded square input grid with output pixel (out_row, out_col)'s kernel taps lit.

    Columns, one row per padded cell: ``row``, ``col`` (padded coordinates), ``kind`` in
    {'input', 'padding', 'tap', 'tap on padding'}; ``output_row``/``output_col``: the output
    grid's cells with ``selected``; ``out_row``/``out_col`` as used (clipped into the output) and
    ``report``. Impossible settings give empty columns.
    """
    report = conv_report(size, kernel, stride, padding, dilation)
    z = np.zeros(0, int)
    if not report.ok:
        return Grid(z, z, np.zeros(0, object), z, z, np.zeros(0, bool), 0, 0, report)
    o, n = report.output_size, report.padded_size
    out_row = int(np.clip(out_row, 0, o - 1))
    out_col = int(np.clip(out_col, 0, o - 1))
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    in_padding = (rows < padding) | (rows >= padding + size) | (cols < padding) | (cols >= padding + size)
    tap_rows = out_row * stride + np.arange(kernel) * dilation
    tap_cols = out_col * stride + np.arange(kernel) * dilation
    is_tap = np.isin(rows, tap_rows) & np.isin(cols, tap_cols)
    kind = np.where(
        is_tap, np.where(in_padding, "tap on padding", "tap"), np.where(in_padding, "padding", "input")
    ).astype(object)
    orow, ocol = np.meshgrid(np.arange(o), np.arange(o), indexing="ij")
    selected = (orow == out_row) & (ocol == out_col)
    return Grid(
        rows.ravel(), cols.ravel(), kind.ravel(), orow.ravel(), ocol.ravel(), selected.ravel(), out_row, out_col, report
    )


# ----------------------------------------------------------------------------- receptive fields
def uniform_stack(n_layers, kernel=3, stride=1, dilation=1, pool_every=0):
    """A custom stack for :func:`receptive_field_table`: ``n_layers`` convolutions (kernel,
    stride, dilation, 'same' padding D(K-1)//2), with a 2x2/2 max-pool after every
    ``pool_every`` convolutions (0: none). Returns named layers ``(name, (k, s, p, d))``."""
    op = "uniform_stack"
    s = _settings(op, size=n_layers, kernel=kernel, stride=stride, dilation=dilation)
    if isinstance(pool_every, bool) or not isinstance(pool_every, numbers.Integral) or pool_every < 0:
        raise ValueError(f"{op}: pool_every must be an integer >= 0, got {pool_every!r}")
    pad = s["dilation"] * (s["kernel"] - 1) // 2
    layers = []
    for i in range(1, s["size"] + 1):
        layers.append((f"conv{i}", (s["kernel"], s["stride"], pad, s["dilation"])))
        if pool_every and i % pool_every == 0:
            layers.append((f"pool{i // pool_every}", (2, 2, 0, 1)))
    return layers


@dataclass(frozen=True)
class FieldRow:
    """One layer of :func:`receptive_field_table`."""

    layer: int
    name: str
    kernel: int
    stride: int
    padding: int
    dilation: int
    rf: int
    jump: int
    start: int
    fmap: int | None
    note: str


def receptive_field_table(layers, input_size=None) -> list[FieldRow]:
    """One row per layer: name, kernel, stride, padding, dilation, receptive field ``rf``,
    ``jump`` (product of strides), effective padding ``start`` and, given ``input_size``, the
    feature-map size ``fmap`` after the layer (None once the map has collapsed: a layer whose
    kernel no longer fits; ``note`` says so).

        r_l = r_{l-1} + (K_eff,l - 1) j_{l-1},    j_l = j_{l-1} s_l,    fmap_l = conv size of fmap_{l-1}
    """
    fields = shapes.receptive_field(layers)
    rows = []
    fmap = input_size
    for index, (layer, rf) in enumerate(zip(layers, fields)):
        name, setting = layer if isinstance(layer[0], str) else (f"layer {index + 1}", layer)
        k, s, p, *rest = setting
        d = rest[0] if rest else 1
        note = ""
        if fmap is not None:
            try:
                fmap = shapes.conv_output_size(fmap, k, s, p, d)
            except ValueError:
                note = "the feature map is smaller than this kernel: the stack cannot go on"
                fmap = None
                input_size = None  # later layers: no map at all
        rows.append(FieldRow(index + 1, name, k, s, p, d, rf.size, rf.jump, rf.padding, fmap, note))
    return rows


# ----------------------------------------------------------------------------- im2col made visible
def _conv_settings(x, kernel, stride, padding, dilation, op):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3:
        raise ValueError(f"{op}: x must be an image [H, W] or [C, H, W], got shape {x.shape}")
    report = conv_report(min(x.shape[1:]), kernel, stride, padding, dilation)
    return x, report


@dataclass(frozen=True)
class Im2colView:
    """One convolution as a matrix product, with one output pixel's path through it lit (see
    :func:`im2col_view`). ``rows`` = colsᵀ [L, C·K·K] (one row per output pixel, as drawn)."""

    message: str
    rows: np.ndarray
    row: int
    row_values: np.ndarray
    weights: np.ndarray
    products: np.ndarray
    value: float
    x_pad: np.ndarray
    patch: np.ndarray
    tap_labels: list
    output: np.ndarray
    conv2d: np.ndarray
    out_row: int
    out_col: int
    out_shape: tuple


def im2col_example(channels, size, kernel):
    """Section 4's input x [channels, size, size] (integers 0..9) and weights [1, channels, kernel,
    kernel] (integers -1..2), drawn from one seeded generator: small integers, so that every
    product can be checked by hand, and the same arrays for the figure and its backward pass."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 10, size=(channels, size, size)).astype(float)
    w = rng.integers(-1, 3, size=(1, channels, kernel, kernel)).astype(float)
    return x, w


def im2col_view(x, weight, stride=1, padding=0, dilation=1, out_row=0, out_col=0, unfold=im2col) -> Im2colView:
    """One convolution as a matrix product, with one output pixel's path through it lit.

    ``x``: [C, H, W] (or [H, W]); ``weight``: [C_out, C, K, K]. With ``cols = im2col(x)``
    ([C·K·K, L], one column per output pixel, the layout of ``torch.nn.functional.unfold``) and
    ``W₂ = weight.reshape(C_out, C·K·K)``::

        out = W₂ · cols,    out[o, r] = Σ_t W₂[o, t] · cols[t, r],    r = out_row·W_out + out_col

    Returns an :class:`Im2colView`: ``rows`` = colsᵀ (drawn one row per output pixel), ``row``
    (the index r), ``row_values`` (the patch, = cols[:, r]), ``weights`` (W₂[0], the weights it
    meets), ``products`` (their element-wise product), ``value`` (their sum = out[0, r]),
    ``x_pad`` [C, H+2P, W+2P], ``patch`` (boolean mask over x_pad of the taps r reads),
    ``tap_labels`` ('c,i,j' per tap), ``output`` (W₂·cols for channel 0, [H_out, W_out]) and
    ``conv2d`` (``engine.functional.conv2d`` on the same input, to compare), ``out_row``/
    ``out_col`` clipped into the output. ``unfold(x, K, stride, padding, dilation)`` builds cols
    (the notebook passes its own im2col; ``engine.ops.conv.im2col`` by default). An impossible
    setting raises ValueError with the reason.
    """
    op = "im2col_view"
    x, report = _conv_settings(x, np.shape(weight)[-1], stride, padding, dilation, op)
    if not report.ok:
        raise ValueError(f"{op}: {report.message}")
    weight = np.asarray(weight, dtype=np.float64)
    c, h, w = x.shape
    k = weight.shape[-1]
    if weight.ndim != 4 or weight.shape[1] != c or weight.shape[2] != k:
        raise ValueError(
            f"{op}: weight must be [C_out, {c}, K, K] for an input with {c} channels, got shape {weight.shape}"
        )
    h_out = shapes.conv_output_size(h, k, stride, padding, dilation)
    w_out = shapes.conv_output_size(w, k, stride, padding, dilation)
    out_row = int(np.clip(out_row, 0, h_out - 1))
    out_col = int(np.clip(out_col, 0, w_out - 1))
    cols = np.asarray(unfold(x, k, stride, padding, dilation), dtype=np.float64)  # [C·K·K, L]
    w2 = weight.reshape(weight.shape[0], -1)
    r = out_row * w_out + out_col
    x_pad = np.pad(x, ((0, 0), (padding, padding), (padding, padding)))
    patch = np.zeros(x_pad.shape, bool)
    taps_r = out_row * stride + np.arange(k) * dilation
    taps_c = out_col * stride + np.arange(k) * dilation
    patch[:, taps_r[:, None], taps_c[None, :]] = True
    ci, ii, jj = np.meshgrid(np.arange(c), np.arange(k), np.arange(k), indexing="ij")
    labels = [f"{a},{b},{d}" for a, b, d in zip(ci.ravel(), ii.ravel(), jj.ravel())]
    products = cols[:, r] * w2[0]
    return Im2colView(
        message=report.message,
        rows=cols.T,
        row=r,
        row_values=cols[:, r],
        weights=w2[0],
        products=products,
        value=float(products.sum()),
        x_pad=x_pad,
        patch=patch,
        tap_labels=labels,
        output=(w2 @ cols)[0].reshape(h_out, w_out),
        conv2d=conv2d(x[None], weight, stride=stride, padding=padding, dilation=dilation).data[0, 0].astype(np.float64),
        out_row=out_row,
        out_col=out_col,
        out_shape=(h_out, w_out),
    )


def im2col_cells(view: Im2colView, padding=0, text_limit=400) -> dict:
    """The im2col figure of ``view`` as grids of cell kinds and texts (2-D arrays ``kind`` and
    ``text``), one entry per panel, in the kinds of ``engine.course.plot.GRID_COLORS``:

    - ``"input c"`` per channel c: the padded input, 'tap' inside output pixel r's window ('tap
      on padding' where the window reads padding), else 'input' or 'padding';
    - ``"cols"``: colsᵀ, one row per output pixel, row r 'selected', the others 'output';
    - ``"weights"``: W₂[0] as one row (the same tap t in the same column as in colsᵀ), 'tap'.

    ``text`` holds every value (as %g) while a panel has at most ``text_limit`` cells, else only
    the lit ones: the values that enter the dot product are always written.
    """
    x_pad, rows, r = view.x_pad, view.rows, view.row
    p = _settings("im2col_cells", padding=padding)["padding"]
    panels = {}
    for ch in range(x_pad.shape[0]):
        i, j = np.indices(x_pad[ch].shape)
        in_padding = (i < p) | (j < p) | (i >= x_pad.shape[1] - p) | (j >= x_pad.shape[2] - p)
        lit = view.patch[ch]
        kind = np.where(lit, np.where(in_padding, "tap on padding", "tap"), np.where(in_padding, "padding", "input"))
        panels[f"input {ch}"] = _cells(kind, x_pad[ch], lit, text_limit)
    lit = np.arange(rows.shape[0])[:, None] == r
    panels["cols"] = _cells(np.where(lit, "selected", "output"), rows, lit, text_limit)
    weights = np.asarray(view.weights, dtype=float)[None]
    panels["weights"] = _cells(np.full(weights.shape, "tap"), weights, np.ones(weights.shape, bool), text_limit)
    return panels


def _cells(kind, values, lit, text_limit):
    """One panel of :func:`im2col_cells`."""
    lit = np.broadcast_to(lit, values.shape)
    shown = lit | (values.size <= text_limit)
    text = np.array([f"{v:g}" if s else "" for v, s in zip(values.ravel(), shown.ravel())], dtype=object).reshape(
        values.shape
    )
    return {"kind": np.broadcast_to(np.asarray(kind, dtype=object), values.shape).copy(), "text": text}


@dataclass(frozen=True)
class Im2colBackward:
    """The two transposed products next to autograd (see :func:`im2col_backward`)."""

    grad_weight: np.ndarray
    grad_input: np.ndarray
    autograd_weight: np.ndarray
    autograd_input: np.ndarray
    window_count: np.ndarray

    @property
    def largest_gap(self) -> float:
        """The largest |by hand − autograd| over ∂L/∂x and ∂L/∂W."""
        return max(
            float(np.abs(self.grad_input - self.autograd_input).max()),
            float(np.abs(self.grad_weight - self.autograd_weight).max()),
        )


def im2col_backward(x, weight, grad_output, stride=1, padding=0, dilation=1) -> Im2colBackward:
    """The backward pass of a convolution as the two transposed products, next to autograd.

    With ``g = ∂L/∂out`` reshaped [C_out, L]::

        ∂L/∂W₂ = g · colsᵀ             ∂L/∂cols = W₂ᵀ · g            ∂L/∂x = col2im(∂L/∂cols)

    ``col2im`` adds every column entry back onto the pixel it came from, so a pixel inside several
    windows collects several terms (``window_count`` = col2im(im2col(ones)) counts them).
    Returns an :class:`Im2colBackward`: ``grad_weight``/``grad_input`` by hand,
    ``autograd_weight``/``autograd_input`` from ``engine`` (``out.backward(g)``), and
    ``window_count`` [H, W].
    """
    op = "im2col_backward"
    x, report = _conv_settings(x, np.shape(weight)[-1], stride, padding, dilation, op)
    if not report.ok:
        raise ValueError(f"{op}: {report.message}")
    weight = np.asarray(weight, dtype=np.float64)
    k = weight.shape[-1]
    cols = im2col(x, k, stride, padding, dilation)
    w2 = weight.reshape(weight.shape[0], -1)
    g = np.asarray(grad_output, dtype=np.float64)
    g2 = g.reshape(weight.shape[0], -1)
    if g2.shape[1] != cols.shape[1]:
        raise ValueError(f"{op}: grad_output has {g2.shape[1]} positions per channel, the output has {cols.shape[1]}")
    grad_weight = (g2 @ cols.T).reshape(weight.shape)
    grad_input = col2im(w2.T @ g2, x.shape[1:], k, stride, padding, dilation)
    xt = Tensor(x[None], requires_grad=True)
    wt = Tensor(weight, requires_grad=True)
    out = conv2d(xt, wt, stride=stride, padding=padding, dilation=dilation)
    out.backward(g.reshape(out.shape))
    ones = np.ones((1,) + x.shape[1:])
    count = col2im(im2col(ones, k, stride, padding, dilation), x.shape[1:], k, stride, padding, dilation)[0]
    return Im2colBackward(grad_weight, grad_input, wt.grad.numpy(), xt.grad.numpy()[0], count)


# ----------------------------------------------------------------------------- classic filters
def _gaussian_kernel(size: int, sigma: float) -> np.ndarray:
    t = np.arange(size) - (size - 1) / 2
    g = np.exp(-(t**2) / (2 * sigma**2))
    k = np.outer(g, g)
    return k / k.sum()


# Cross-correlation kernels, as conv2d applies them (no flip). Each sums to 1 (keeps brightness:
# blur, sharpen, identity) or to 0 (responds to change only: edges, Laplacian).
CLASSIC_FILTERS: dict = {
    "identity": np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], float),
    "box blur": np.full((3, 3), 1 / 9),
    "Gaussian blur": _gaussian_kernel(5, 1.0),
    "sharpen": np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], float),
    "vertical edges (Sobel x)": np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], float),
    "horizontal edges (Sobel y)": np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], float),
    "Laplacian": np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], float),
    "emboss": np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]], float),
}


def sample_image(size=48, noise=0.0, seed=0) -> np.ndarray:
    """A generated grey image [size, size] in [0, 1]: a soft left-to-right gradient, a bright
    square, a dark disc, a diagonal stripe and fine vertical bars (edges of every orientation and
    scale), plus Gaussian noise of std ``noise``."""
    op = "sample_image"
    s = _settings(op, size=size)["size"]
    if s < 8:
        raise ValueError(f"{op}: size must be >= 8, got {s}")
    noise = float(noise)
    if not (math.isfinite(noise) and noise >= 0):
        raise ValueError(f"{op}: noise must be a finite number >= 0, got {noise}")
    u = (np.arange(s) + 0.5) / s
    yy, xx = np.meshgrid(u, u, indexing="ij")
    img = 0.15 + 0.2 * xx
    img = np.where((np.abs(xx - 0.3) < 0.15) & (np.abs(yy - 0.3) < 0.15), 0.95, img)
    img = np.where((xx - 0.7) ** 2 + (yy - 0.32) ** 2 < 0.16**2, 0.02, img)
    img = np.where(np.abs((xx - yy) - 0.25) < 0.05, 0.7, img)
    bars = (np.floor(xx * s / 2) % 2 == 0) & (yy > 0.72) & (yy < 0.92) & (xx > 0.45) & (xx < 0.9)
    img = np.where(bars, 0.85, img)
    if noise:
        img = img + noise * np.random.default_rng(seed).standard_normal(img.shape)
    return np.clip(img, 0.0, 1.0)


def apply_filter(image, kernel, stride=1, repeat=1) -> np.ndarray:
    """``kernel`` (a name in :data:`CLASSIC_FILTERS` or a [K, K] array) applied ``repeat`` times
    to ``image`` [H, W] with ``engine.functional.conv2d``, zero padding K//2 (same size at
    stride 1), the stride on the last application. The name 'edge magnitude' gives
    sqrt(Sobel_x² + Sobel_y²)."""
    op = "apply_filter"
    if isinstance(kernel, str) and kernel == "edge magnitude":
        gx = apply_filter(image, "vertical edges (Sobel x)", stride, repeat)
        gy = apply_filter(image, "horizontal edges (Sobel y)", stride, repeat)
        return np.sqrt(gx**2 + gy**2)
    if isinstance(kernel, str):
        if kernel not in CLASSIC_FILTERS:
            raise ValueError(f"{op}: unknown filter {kernel!r}; known: {', '.join(CLASSIC_FILTERS)}, edge magnitude")
        kernel = CLASSIC_FILTERS[kernel]
    kernel = np.asarray(kernel, dtype=np.float64)
    if kernel.ndim != 2 or kernel.shape[0] != kernel.shape[1]:
        raise ValueError(f"{op}: kernel must be square [K, K], got shape {kernel.shape}")
    image = np.asarray(image, dtype=np.float64)
    if image.ndim != 2:
        raise ValueError(f"{op}: image must be [H, W], got shape {image.shape}")
    repeat = _settings(op, size=repeat)["size"]
    k = kernel.shape[0]
    x = image[None, None]
    w = kernel[None, None]
    for i in range(repeat):
        x = conv2d(x, w, padding=k // 2, stride=stride if i == repeat - 1 else 1).data
    return x[0, 0]


def compose_kernels(first, second) -> np.ndarray:
    """The one kernel that does what cross-correlating with ``first`` then ``second`` does (no
    nonlinearity between): c[t] = Σ_{u+v=t} first[u]·second[v], a (K₁+K₂−1)-wide kernel.

    (x ⋆ a) ⋆ b [i] = Σ_v b[v] Σ_u a[u] x[i+u+v], so c is the full convolution of a and b."""
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"compose_kernels: kernels must be 2-D, got shapes {a.shape} and {b.shape}")
    out = np.zeros((a.shape[0] + b.shape[0] - 1, a.shape[1] + b.shape[1] - 1))
    for (i, j), w in np.ndenumerate(b):
        out[i : i + a.shape[0], j : j + a.shape[1]] += w * a
    return out


@dataclass(frozen=True)
class TwoConvolutions:
    """Two 'valid' cross-correlations in a row against the one composed kernel: ``gap_linear`` =
    max |conv(conv(x, a), b) − conv(x, a ⋆ b)| (rounding only), ``gap_relu`` the same with a ReLU
    between the two (no single kernel does that), ``relu_changed``: the share of first-layer
    outputs the ReLU set to zero."""

    composed: np.ndarray
    gap_linear: float
    gap_relu: float
    relu_changed: float


def two_convolutions(image, first="vertical edges (Sobel x)", second="box blur") -> TwoConvolutions:
    """Apply ``first`` then ``second`` (names in :data:`CLASSIC_FILTERS` or arrays) with no
    padding, with and without a ReLU between, and compare with :func:`compose_kernels`."""
    kernels = [CLASSIC_FILTERS[k] if isinstance(k, str) else np.asarray(k, float) for k in (first, second)]
    x = np.asarray(image, dtype=np.float64)[None, None]
    a, b = (k[None, None] for k in kernels)
    composed = compose_kernels(*kernels)
    hidden = conv2d(x, a).data
    linear = conv2d(hidden, b).data
    relu = conv2d(np.maximum(hidden, 0.0), b).data
    once = conv2d(x, composed[None, None]).data
    return TwoConvolutions(
        composed, float(np.abs(linear - once).max()), float(np.abs(relu - once).max()), float((hidden < 0).mean())
    )


# ----------------------------------------------------------------------------- cheaper convolutions
@dataclass(frozen=True)
class ConvCost:
    """Weights (biases included) and multiply-adds of one layer on an H×W output."""

    name: str
    params: int
    macs: int


def conv_costs(c_in=64, c_out=128, kernel=3, size=32, groups=4) -> list:
    """Costs of four ways to map C_in to C_out channels on a size×size output (stride 1, 'same'):

    - standard K×K: C_out·C_in·K² + C_out weights, H·W·C_out·C_in·K² multiply-adds;
    - 1×1 (pointwise): the same with K = 1, it mixes channels only;
    - grouped (``groups`` = g): each output sees C_in/g channels, weights and work divided by g;
    - depthwise-separable: a depthwise K×K (groups = C_in, one filter per channel) then a 1×1:
      C_in·K² + C_in + C_out·C_in + C_out weights, H·W·(C_in·K² + C_in·C_out) multiply-adds.
    """
    op = "conv_costs"
    s = _settings(op, c_in=c_in, c_out=c_out, kernel=kernel, size=size, stride=groups)
    ci, co, k, hw, g = s["c_in"], s["c_out"], s["kernel"], s["size"] ** 2, s["stride"]
    if ci % g or co % g:
        raise ValueError(f"{op}: groups = {g} must divide both C_in = {ci} and C_out = {co}")
    return [
        ConvCost(f"standard {k}×{k}", co * ci * k * k + co, hw * co * ci * k * k),
        ConvCost("1×1 (pointwise)", co * ci + co, hw * co * ci),
        ConvCost(f"grouped {k}×{k}, g = {g}", co * (ci // g) * k * k + co, hw * co * (ci // g) * k * k),
        ConvCost(f"depthwise {k}×{k} + pointwise", ci * k * k + ci + co * ci + co, hw * (ci * k * k + ci * co)),
    ]


@dataclass(frozen=True)
class SeparableCheck:
    """A depthwise conv (``groups`` = C_in) then a 1×1 conv, against one standard conv with the
    kernel W[o, c] = P[o, c]·D[c] they amount to: ``gap`` (rounding only); parameter counts
    counted on ``nn.Conv2d`` modules (no biases)."""

    gap: float
    separable_params: int
    standard_params: int


def separable_check(c_in=8, c_out=16, kernel=3, seed=0) -> SeparableCheck:
    """Reproduce a depthwise + pointwise pair with ``groups=`` and show it is a rank-limited
    standard convolution: every output channel's kernel is a mix of the same C_in spatial filters."""
    op = "separable_check"
    s = _settings(op, c_in=c_in, c_out=c_out, kernel=kernel)
    ci, co, k = s["c_in"], s["c_out"], s["kernel"]
    with fork_rng(int(seed)):
        depthwise = nn.Conv2d(ci, ci, k, padding=k // 2, groups=ci, bias=False)
        pointwise = nn.Conv2d(ci, co, 1, bias=False)
        standard = nn.Conv2d(ci, co, k, padding=k // 2, bias=False)
    x = Tensor(np.random.default_rng(seed).standard_normal((2, ci, 10, 10)).astype(np.float32))
    d = np.asarray(depthwise.weight.data, np.float64)[:, 0]  # [C_in, K, K]
    p = np.asarray(pointwise.weight.data, np.float64)[:, :, 0, 0]  # [C_out, C_in]
    merged = p[:, :, None, None] * d[None]  # [C_out, C_in, K, K]
    with no_grad():
        two = pointwise(depthwise(x)).data
    one = conv2d(x.data, merged.astype(two.dtype), padding=k // 2).data
    count = lambda m: int(sum(q.data.size for q in m.parameters()))  # noqa: E731
    return SeparableCheck(float(np.abs(two - one).max()), count(depthwise) + count(pointwise), count(standard))


# ----------------------------------------------------------------------------- effective receptive field
@dataclass(frozen=True)
class EffectiveField:
    """|∂y/∂x| of the centre output unit, averaged over ``trials`` random initialisations and
    inputs and normalised to sum 1 (``grad_map`` [S, S]); the theoretical field width
    ``theoretical`` = 2n + 1 for n 3×3 layers; ``std`` = the map's standard deviation along one
    axis about the centre (pixels), the effective field's radius."""

    layers: int
    grad_map: np.ndarray
    theoretical: int
    std: float

    @property
    def central_share(self) -> float:
        """The gradient mass inside the central square half as wide as the theoretical field."""
        c, r = self.grad_map.shape[0] // 2, self.layers // 2
        return float(self.grad_map[c - r : c + r + 1, c - r : c + r + 1].sum())


@functools.lru_cache(maxsize=64)  # a page toggles between a few settings: each computed once
def effective_receptive_field(layers=4, relu=True, channels=4, trials=8, seed=0) -> EffectiveField:
    """Luo et al. (2016): the effective receptive field of a stack of ``layers`` 3×3
    convolutions ('same' padding, Kaiming-normal weights, ``channels`` channels, optional ReLU
    between) is the input-gradient map of one centre output unit, computed with the engine's
    autograd. It covers the theoretical (2n + 1)-wide field unevenly: Gaussian-like, its width
    growing like √n while the theoretical one grows like n."""
    op = "effective_receptive_field"
    n = _settings(op, size=layers)["size"]
    c = _settings(op, c_in=channels)["c_in"]
    t = _settings(op, size=trials)["size"]
    side = 2 * n + 9  # the theoretical field plus a margin of 4
    centre = side // 2
    rng = np.random.default_rng(seed)
    total = np.zeros((side, side))
    for _ in range(t):
        x = Tensor(rng.standard_normal((1, c, side, side)), requires_grad=True)
        h = x
        for i in range(n):
            w = rng.standard_normal((c, c, 3, 3)) * math.sqrt(2.0 / (9 * c))
            h = F.conv2d(h, Tensor(w), padding=1)
            if relu and i < n - 1:
                h = F.relu(h)
        h[0, :, centre, centre].sum().backward()
        total += np.abs(x.grad.numpy()[0]).sum(axis=0)
    grad_map = total / total.sum()
    offsets = np.arange(side) - centre
    std = float(np.sqrt((grad_map.sum(axis=0) * offsets**2).sum()))
    return EffectiveField(n, grad_map, 2 * n + 1, std)


# ----------------------------------------------------------------------------- equivariance
EQUIVARIANCE_CANVAS = 24  # an 8x8 digit at (8, 8) in a 24x24 zero canvas: shifts up to 6 stay inside


@dataclass(frozen=True)
class Equivariance:
    """Shift the input right by ``shift`` pixels. ``conv_error`` = ‖F(Tx) − T'F(x)‖ / ‖F(x)‖ for
    the conv stack F (T' the output shift closest to shift / (stride·pool), ``out_shift``);
    ``dense_error`` the same for a dense layer with a same-sized output and T' = T;
    ``conv_pooled``: the change of the conv output's global average (what a classifier head
    reads) relative to its mean size. The maps are for drawing."""

    shift: int
    out_shift: int
    conv_error: float
    dense_error: float
    conv_pooled: float
    image: np.ndarray
    shifted: np.ndarray
    conv_map: np.ndarray
    conv_map_shifted: np.ndarray
    dense_map: np.ndarray
    dense_map_shifted: np.ndarray


def _shift_right(a, k):
    out = np.zeros_like(a)
    if k == 0:
        return a.copy()
    out[..., k:] = a[..., :-k]
    return out


def _equivariance_weights(seed, n):
    """The random 3×3 kernel and the dense layer's [n², n²] matrix (W ~ N(0, 1/n)) of
    :func:`shift_equivariance`, drawn from ``seed`` in that order; remembered per integer seed
    (drawing the dense matrix is most of a call), read-only so that no caller changes them."""
    if isinstance(seed, numbers.Integral):
        return _equivariance_weights_cached(int(seed), n)
    rng = np.random.default_rng(seed)
    return rng.standard_normal((1, 1, 3, 3)), rng.standard_normal((n * n, n * n)) / n


@functools.lru_cache(maxsize=8)
def _equivariance_weights_cached(seed, n):
    rng = np.random.default_rng(seed)
    kernel, dense = rng.standard_normal((1, 1, 3, 3)), rng.standard_normal((n * n, n * n)) / n
    kernel.flags.writeable = dense.flags.writeable = False
    return kernel, dense


def shift_equivariance(image, shift=2, stride=1, pool=1, seed=0) -> Equivariance:
    """Translation equivariance of a convolution against a dense layer, measured.

    ``image`` [8, 8] is placed in a zero canvas (:data:`EQUIVARIANCE_CANVAS` wide) and shifted
    right by ``shift`` pixels. F = conv(3×3, padding 1, ``stride``) then, with ``pool`` > 1, a
    ``pool``×``pool`` max-pool; the dense layer maps the canvas to a canvas-sized map with
    W ~ N(0, 1/n). With weights shared across positions, F(T_k x) = T_{k/(stride·pool)} F(x)
    exactly when stride·pool divides k; otherwise no output shift matches. A dense layer has
    no such structure. Global averaging of a stride-1 convolution's output is exactly invariant.
    """
    op = "shift_equivariance"
    img = np.asarray(image, dtype=np.float64)
    if img.shape != (8, 8):
        raise ValueError(f"{op}: image must be 8x8 (a digit), got shape {img.shape}")
    n = EQUIVARIANCE_CANVAS
    shift = int(shift)
    if not 0 <= shift <= n - 16 - 2:
        raise ValueError(f"{op}: shift must be in 0..{n - 18} to keep the digit inside, got {shift}")
    s = _settings(op, stride=stride, kernel=pool)
    stride, pool = s["stride"], s["kernel"]
    kernel, dense = _equivariance_weights(seed, n)
    canvas = np.zeros((n, n))
    canvas[8:16, 8:16] = img
    moved = _shift_right(canvas, shift)

    def conv_stack(x):
        y = conv2d(x[None, None], kernel, padding=1, stride=stride).data
        if pool > 1:
            y = F.max_pool2d(Tensor(y), pool).data
        return y[0, 0]

    def dense_layer(x):
        return (dense @ x.ravel()).reshape(n, n)

    factor = stride * pool
    fx, ftx = conv_stack(canvas), conv_stack(moved)
    candidates = sorted({shift // factor, -(-shift // factor)})
    errors = [np.linalg.norm(ftx - _shift_right(fx, c)) / np.linalg.norm(fx) for c in candidates]
    best = int(np.argmin(errors))
    dx, dtx = dense_layer(canvas), dense_layer(moved)
    return Equivariance(
        shift=shift,
        out_shift=candidates[best],
        conv_error=float(errors[best]),
        dense_error=float(np.linalg.norm(dtx - _shift_right(dx, shift)) / np.linalg.norm(dx)),
        conv_pooled=float(abs(ftx.mean() - fx.mean()) / np.abs(fx).mean()),
        image=canvas,
        shifted=moved,
        conv_map=fx,
        conv_map_shifted=ftx,
        dense_map=dx,
        dense_map_shifted=dtx,
    )


# ----------------------------------------------------------------------------- a small CNN
# The CNN, its training loop and the run that made the shipped checkpoint are the notebook's own
# lesson cells (CNN, train_cnn, train_digits_cnn, default_cnn_state); the helpers below evaluate
# and draw whatever model the page passes in.
def cnn_accuracy(model, X, y, batch_size=256) -> float:
    """Share of images whose largest logit is the label (no graph built)."""
    return float(np.mean(predictions(model, X, batch_size) == np.asarray(y))) if len(X) else 0.0


@dataclass
class CNNHistory:
    """One entry per epoch: mean training ``loss``, ``train_acc``, ``test_acc`` (empty without a
    test set); ``stopped`` says why training stopped early ('' when it ran to the end)."""

    loss: list = field(default_factory=list)
    train_acc: list = field(default_factory=list)
    test_acc: list = field(default_factory=list)
    stopped: str = ""


def predictions(model, X, batch_size=256) -> np.ndarray:
    """The class ``model`` predicts for each image of ``X`` (the argmax of its logits), int [N]."""
    X = np.asarray(X, dtype=np.float32)
    with no_grad():
        return np.concatenate(
            [model(Tensor(X[i : i + batch_size])).data.argmax(axis=1) for i in range(0, len(X), batch_size)]
        )


@functools.lru_cache(
    maxsize=8
)  # a click on the confusion matrix or a training setting re-runs its cell, not the model (section 8 reads it for three models)
def heldout_predictions(model) -> np.ndarray:
    """:func:`predictions` of ``model`` on the 360 held-out digits, remembered per model."""
    return predictions(model, data.load_digits("test", channel_dim=True)[0])


def confusion(model, X, y, n_classes=10, batch_size=256) -> np.ndarray:
    """The confusion matrix of ``model`` on (X, y): ``engine.metrics.confusion_matrix`` of the
    labels and the argmax :func:`predictions`, rows true classes, columns predictions."""
    return confusion_matrix(np.asarray(y), predictions(model, X, batch_size), num_classes=n_classes)


def feature_maps(model, image) -> dict:
    """What one image [1, H, W] (or [H, W]) gives in the page's CNN: ``relu1`` [C, H, W], the
    maps of its ``first_layer``, ``logits`` [n_classes] and ``probs`` (their softmax)."""
    x = np.asarray(image, dtype=np.float32)
    x = Tensor(x.reshape((1, 1) + x.shape[-2:]))
    with no_grad():
        maps = {"relu1": model.first_layer(x).data[0].copy(), "logits": model(x).data[0].copy()}
    z = maps["logits"].astype(np.float64)
    p = np.exp(z - z.max())
    maps["probs"] = p / p.sum()
    return maps


def learned_filters(model) -> np.ndarray:
    """The first convolution's kernels [C, K, K] (one per filter)."""
    return np.asarray(model.conv1.weight.data)[:, 0].copy()


# ----------------------------------------------------------------------------- the digits CNN
# The section's default settings: what the page shows on open, from the shipped checkpoint.
CNN_DEFAULTS = {"n_filters": 12, "kernel_size": 3, "epochs": 12, "lr": 3e-3}


@dataclass(eq=False)
class DigitsCNN:
    """A CNN trained on the UCI digits: the ``model``, its per-epoch ``history``, its held-out
    ``confusion`` matrix, the ``settings`` it was trained with and whether it is the ``shipped``
    checkpoint. Compared (and hashed) by identity, so a figure can be cached per trained model."""

    model: object
    history: CNNHistory
    confusion: np.ndarray
    settings: dict
    shipped: bool = False


# The notebook's default_cnn_state trains the CNN with CNN_DEFAULTS through its lesson cells;
# `make checkpoints` runs it, and the page reads it back with shipped_cnn.
CNN_CODE = ("CNN", "train_cnn", "train_digits_cnn")
CHECKPOINTS = {
    "convolution_cnn": checkpoints.FromNotebook(notebook="05_convolution", function="default_cnn_state", code=CNN_CODE)
}


@functools.lru_cache(maxsize=4)  # the same object for the same code: the page's figures are cached per model
def shipped_cnn(model_class, *code) -> tuple[DigitsCNN | None, str]:
    """``(the default CNN rebuilt from the shipped checkpoint, "")`` when ``code`` (the page's
    lesson cells named by :data:`CNN_CODE`, the class first) is the code it was trained with and
    its parameters fit ``model_class``; otherwise ``(None, reason)``, one sentence for the page."""
    state, reason = checkpoints.load_if_fits(_cnn_checkpoint, model_class, *code)
    if state is None:
        return None, reason
    settings = {k: (v.item() if hasattr(v, "item") else v) for k, v in state["settings"].items()}
    try:
        model = model_class(settings["n_filters"], settings["kernel_size"])
        model.load_state_dict(state["parameters"])
    except (KeyError, ValueError, TypeError) as err:
        return None, (
            f"the shipped CNN does not fit this page's `{model_class.__name__}` ({err}), "
            "so it is not loaded: train with the button to see what your code does"
        )
    model.eval()
    history = CNNHistory(*([float(v) for v in state["history"][k]] for k in ("loss", "train_acc", "test_acc")))
    y_test = data.load_digits("test", channel_dim=True)[1]
    # the held-out predictions are remembered per model: the page's confusion cell reads them too
    matrix = confusion_matrix(np.asarray(y_test), heldout_predictions(model), num_classes=10)
    return DigitsCNN(model, history, matrix, settings, shipped=True), ""


# ----------------------------------------------------------------------------- dense baselines
# Two dense models on the same digits, trained by the page's own train_cnn (the notebook's
# SoftmaxRegression, MLP and train_digits_baselines): what the convolutions add, and what a shift
# of the digits costs each model.
BASELINE_CODE = ("SoftmaxRegression", "MLP", "train_cnn", "train_digits_baselines")
CHECKPOINTS["convolution_baselines"] = checkpoints.FromNotebook(
    notebook="05_convolution", function="default_baselines_state", code=BASELINE_CODE
)


@dataclass(eq=False)
class DigitsBaselines:
    """The dense baselines trained on the UCI digits: ``models`` and their per-epoch ``histories``
    by name (``"softmax regression"``, ``"MLP"``), the ``settings`` they were trained with and
    whether they are the ``shipped`` checkpoint. Compared (and hashed) by identity."""

    models: dict
    histories: dict
    settings: dict
    shipped: bool = False


BASELINE_NAMES = ("softmax regression", "MLP")


@functools.lru_cache(maxsize=4)  # the same object for the same code: figures are cached per model
def shipped_baselines(softmax_class, mlp_class, *code) -> tuple[DigitsBaselines | None, str]:
    """``(the baselines rebuilt from the shipped checkpoint, "")`` when ``code`` (the page's lesson
    cells named by :data:`BASELINE_CODE`, the two classes first) is the code that trained them;
    otherwise ``(None, reason)``, one sentence for the page."""
    state, reason = checkpoints.load_if_fits(_baselines_checkpoint, softmax_class, mlp_class, *code)
    if state is None:
        return None, reason
    models, histories = {}, {}
    try:
        for name, make in zip(BASELINE_NAMES, (softmax_class, mlp_class)):
            model = make()
            model.load_state_dict(state[name]["parameters"])
            model.eval()
            models[name] = model
            histories[name] = CNNHistory(
                *([float(v) for v in state[name]["history"][k]] for k in ("loss", "train_acc", "test_acc"))
            )
    except (KeyError, ValueError, TypeError) as err:
        return None, (
            f"the shipped baselines do not fit this page's classes ({err}), so they are "
            "not loaded: train with the button to see what your code does"
        )
    settings = {k: (v.item() if hasattr(v, "item") else v) for k, v in state["settings"].items()}
    return DigitsBaselines(models, histories, settings, shipped=True), ""


def shift_digits(images, right=0, down=0) -> np.ndarray:
    """``images`` [..., H, W] moved ``right`` columns and ``down`` rows (negative: left, up), the
    pixels that leave the frame dropped and the ones that enter it zero (blank paper)."""
    images = np.asarray(images)
    h, w = images.shape[-2:]
    if abs(right) >= w or abs(down) >= h:
        raise ValueError(f"shift_digits: a shift of ({right}, {down}) moves a {h}×{w} image out of its frame")
    out = np.zeros_like(images)
    out[..., max(down, 0) : h + min(down, 0), max(right, 0) : w + min(right, 0)] = images[
        ..., max(-down, 0) : h + min(-down, 0), max(-right, 0) : w + min(-right, 0)
    ]
    return out


@functools.lru_cache(maxsize=64)  # the shift sliders move back and forth over a few values
def shifted_accuracy(model, right=0, down=0) -> float:
    """Held-out accuracy of ``model`` on the 360 held-out digits moved by :func:`shift_digits`
    (unmoved, from :func:`heldout_predictions`, which the confusion matrix has already made)."""
    images, labels = data.load_digits("test", channel_dim=True)
    if right == down == 0:
        return float(np.mean(heldout_predictions(model) == labels))
    return cnn_accuracy(model, shift_digits(images, right, down), labels)


@functools.lru_cache(maxsize=8)
def ink_share(rows=(0, -1), cols=()) -> float:
    """Share of the training digits' total ink that lies in the given rows and columns (the
    pixels a vertical or horizontal shift of one pixel pushes out of the frame)."""
    images = data.load_digits("train")[0].astype(np.float64)
    total = images.sum(axis=0)
    mask = np.zeros(total.shape, bool)
    mask[list(rows), :] = True
    mask[:, list(cols)] = True
    return float(total[mask].sum() / total.sum())


# ----------------------------------------------------------------------------- residual blocks
@dataclass(frozen=True, eq=False)
class BlockGradients:
    """How much of a gradient reaching the top of a stack of blocks arrives below each block:
    ``ratio[kind][s, k - 1]`` = ‖∂L/∂h‖ / ‖∂L/∂y‖ for the input h of the block k blocks below the
    output y (seed ``seeds[s]``), ``kind`` "plain" (y = F(x)) or "residual" (y = x + F(x))."""

    blocks: np.ndarray  # 1 .. depth
    seeds: tuple
    ratio: dict


_BLOCK_GRADIENTS: dict = {}


def block_gradients(block_class, depth=12, channels=8, seeds=(0, 1, 2, 3, 4), n_images=8) -> BlockGradients:
    """Backpropagate a random upstream gradient g through a stem convolution (1 → ``channels``)
    and ``depth`` blocks ``block_class(channels, skip)`` built with each seed (the layers' default
    initialisation), on the first ``n_images`` held-out digits, with L = ⟨g, y⟩; the norm of the
    gradient at every block's input, relative to ‖g‖."""
    depth = _settings("block_gradients", size=depth)["size"]
    # remembered per process by the block's code, not the class object: every page session
    # defines the lesson class anew, and the figure costs about 0.1 s
    key = (checkpoints.code_fingerprint(block_class), depth, channels, tuple(seeds), n_images)
    if key not in _BLOCK_GRADIENTS:
        _BLOCK_GRADIENTS[key] = _block_gradients(block_class, depth, channels, tuple(seeds), n_images)
    return _BLOCK_GRADIENTS[key]


def _block_gradients(block_class, depth, channels, seeds, n_images) -> BlockGradients:
    x = Tensor(data.load_digits("test", channel_dim=True)[0][:n_images].astype(np.float32))
    ratio = {}
    for kind, skip in (("plain", False), ("residual", True)):
        rows = []
        for seed in seeds:
            with fork_rng(seed):
                stem = nn.Conv2d(1, channels, 3, padding=1)
                blocks = [block_class(channels, skip) for _ in range(depth)]
            inputs = [stem(x).detach()]
            inputs[0].requires_grad = True
            for block in blocks:
                inputs[-1].retain_grad()
                inputs.append(block(inputs[-1]))
            g = np.random.default_rng(seed).standard_normal(inputs[-1].shape).astype(np.float32)
            (inputs[-1] * Tensor(g)).sum().backward()
            norms = [float(np.linalg.norm(h.grad.numpy())) for h in inputs[:-1]]
            rows.append(np.array(norms[::-1]) / float(np.linalg.norm(g)))
        ratio[kind] = np.array(rows)
    return BlockGradients(np.arange(1, depth + 1), tuple(seeds), ratio)


# ----------------------------------------------------------------------------- section 8 over seeds
# The three models of section 8, each trained with seeds 0 to 4 (initial weights and batch order)
# by the notebook's train_over_seeds, scored on the held-out digits moved one axis at a time: the
# claims of the section hold over these runs, not only over the shipped ones.
SEED_MODELS = ("CNN",) + BASELINE_NAMES
SEEDS = (0, 1, 2, 3, 4)
SEED_SHIFTS = ((0, 0), (-2, 0), (-1, 0), (1, 0), (2, 0), (0, -2), (0, -1), (0, 1), (0, 2))  # (right, down)
SEED_CODE = ("CNN", "SoftmaxRegression", "MLP", "train_cnn", "train_over_seeds")
CHECKPOINTS["convolution_seeds"] = checkpoints.FromNotebook(
    notebook="05_convolution", function="seeds_state", code=SEED_CODE
)


def seed_shift_accuracy(runs) -> np.ndarray:
    """Held-out accuracy [model, seed, shift] of ``runs`` ({name: [model per seed]}, the names of
    :data:`SEED_MODELS`) on the 360 held-out digits moved by each of :data:`SEED_SHIFTS`."""
    images, labels = data.load_digits("test", channel_dim=True)
    moved = [shift_digits(images, r, d) for r, d in SEED_SHIFTS]
    return np.array([[[cnn_accuracy(model, m, labels) for m in moved] for model in runs[name]] for name in SEED_MODELS])


@dataclass(frozen=True, eq=False)
class SeedShifts:
    """Section 8's comparison over seeds: ``accuracy`` [model, seed, shift] (:data:`SEED_MODELS`,
    the seeds, :data:`SEED_SHIFTS`) and what the prose says of it:

    - ``sideways_cnn_best``: in how many (seed, sideways shift) pairs the CNN keeps the most,
      of ``sideways_runs``;
    - ``vertical_kept``: the largest share of its centred accuracy any model keeps moved up or down;
    - ``centred_lead``: {baseline: (fewest, most) more digits the CNN reads right, centred, per seed}."""

    accuracy: np.ndarray
    shipped: bool = False

    @property
    def sideways_cnn_best(self) -> int:
        side = self.accuracy[:, :, 1:5]
        return int((side.argmax(axis=0) == SEED_MODELS.index("CNN")).sum())

    @property
    def sideways_runs(self) -> int:
        return int(self.accuracy.shape[1] * 4)

    @property
    def vertical_kept(self) -> float:
        return float((self.accuracy[:, :, 5:] / self.accuracy[:, :, :1]).max())

    @property
    def centred_lead(self) -> dict:
        right = np.round(self.accuracy[:, :, 0] * 360).astype(int)
        cnn = right[SEED_MODELS.index("CNN")]
        return {
            name: (int((cnn - right[i]).min()), int((cnn - right[i]).max()))
            for i, name in enumerate(SEED_MODELS)
            if name != "CNN"
        }


@functools.lru_cache(maxsize=4)  # the same object for the same code
def shipped_seed_shifts(*code) -> tuple[SeedShifts | None, str]:
    """``(the shipped comparison over seeds, "")`` when ``code`` (the page's lesson cells named by
    :data:`SEED_CODE`) is the code that trained it; otherwise ``(None, reason)``."""
    state, reason = checkpoints.load_if_fits(_seeds_checkpoint, *code)
    if state is None:
        return None, reason
    return SeedShifts(np.asarray(state["accuracy"], dtype=float), shipped=True), ""


_SEED_RUNS: dict = {}


def remembered_seed_shifts(cnn_class, softmax_class, mlp_class, train_cnn, train_over_seeds, on_run=None) -> SeedShifts:
    """The comparison over seeds trained by the page's ``train_over_seeds`` (the arguments: the
    lesson cells named by :data:`SEED_CODE`) at its defaults and scored by
    :func:`seed_shift_accuracy`, remembered per process by that code: the runs are seeded, so a
    second press of the page's button with the same code would train the same fifteen models
    again (about 12 s CPU); it shows the first press's result instead."""
    key = checkpoints.code_fingerprint(cnn_class, softmax_class, mlp_class, train_cnn, train_over_seeds)
    if key not in _SEED_RUNS:
        _SEED_RUNS[key] = SeedShifts(seed_shift_accuracy(train_over_seeds(on_run=on_run)))
    return _SEED_RUNS[key]
