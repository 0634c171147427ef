"""What notebook 04's optimizers race on, the settings and caches around the race, and its
measurements.

The update rules (SGD, momentum, Nesterov, RMSprop, Adam/AdamW), the loop that races them and the
mini-batch loop are the notebook's own lesson cells; the functions here that run them take them
as arguments, so a learner's edited rule is the one that runs. ``engine.optim`` appears only as
the reference (:func:`engine_adam_updates`), for the schedulers and for clipping.

- :data:`SURFACES`: an ill-conditioned quadratic, Rosenbrock's valley, a saddle with two minima,
  and Beale's function, each an engine-differentiable function of θ = (θ₁, θ₂) with its NumPy
  twin for contour grids, a start, the minimum and suggested learning rates.
- :func:`run_race`: the lesson's race loop and rules on a surface, each racer with its
  hyper-parameters (:func:`rule_keywords`) and a learning-rate :class:`Schedule` from
  ``engine.optim.lr_scheduler``; runs are cached, so one slider re-runs one or two racers.
- :func:`rule_updates`: the steps a rule takes on one parameter for a gradient sequence (Adam's
  bias correction); :func:`engine_adam_updates` the library's, for comparison.
- :func:`schedule_curves`: the learning rates of StepLR, cosine, linear warm-up then cosine,
  one-cycle and reduce-on-plateau from ``engine.optim.lr_scheduler``.
- :func:`condition_rates`, :func:`nesterov_lookahead`, :func:`l2_vs_decoupled`: the race loop
  and rules, passed in, on a quadratic of condition number κ (rates against theory), against
  Nesterov's textbook form, and as Adam with an L2 penalty against AdamW's decoupled decay.
- :func:`sgd_noise`, :func:`lr_range_test`: the notebook's mini-batch loop, passed in, on a
  least-squares problem: the noise floor that decay breaks through, and the range test.
- :func:`phase_diagram`, :func:`momentum_rate`: the lesson's momentum rule over a grid of (η, μ) on a
  quadratic (the lesson's grid function, passed in), beside the theory's rate and stability line.
- :func:`clip_by_global_norm`: gradient clipping with ``nn.utils.clip_grad_norm_``.
- :func:`batch_scaling`: the mini-batch loop over batch sizes with η scaled linearly or fixed
  (the linear scaling rule and where it breaks), shipped in :data:`CHECKPOINTS`.
- :func:`edge_runs`: full-batch GD with its sharpness on a small network (the edge of stability),
  shipped in :data:`CHECKPOINTS`.
- :func:`surface_map`, :func:`gap_chart`, :func:`condition_chart`, :func:`bias_correction_chart`,
  :func:`noise_chart`, :func:`range_chart`, :func:`weight_decay_charts`, :func:`phase_chart`: the page's charts, each
  built once per run, measurement or set of values (the measurements are remembered per setting,
  so a slider moved back redraws nothing new).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from engine import Tensor, optim
from engine.course import checkpoints

# static imports of the checkpoints: marimo's WebAssembly bundler follows only these
from engine.course.checkpoints import optimizers_batch_scaling as _batch_scaling_checkpoint
from engine.course.checkpoints import optimizers_edge as _edge_checkpoint
from engine.nn.module import Parameter
from engine.nn.utils import clip_grad_norm_
from engine.optim import lr_scheduler

OPTIMIZERS = ("sgd", "momentum", "nesterov", "rmsprop", "adam", "adamw")
LABELS = {
    "sgd": "SGD",
    "momentum": "momentum",
    "nesterov": "Nesterov",
    "rmsprop": "RMSprop",
    "adam": "Adam",
    "adamw": "AdamW",
}
SCHEDULES = ("constant", "step", "cosine", "warmup_cosine", "onecycle", "plateau")

# ----------------------------------------------------------------------------- surfaces


def _quadratic(t):
    return 0.5 * (t[0] ** 2 + 100.0 * t[1] ** 2)


def _rosenbrock(t):
    x, y = t[0], t[1]  # index once: each index is a node of the graph
    return (1.0 - x) ** 2 + 100.0 * (y - x**2) ** 2


def _saddle(t):
    x, y = t[0], t[1]
    return 0.5 * x**2 - 0.5 * y**2 + 0.25 * y**4


def _beale(t):
    x, y = t[0], t[1]
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y**2) ** 2 + (2.625 - x + x * y**3) ** 2


def _surface(label: str, fn, latex: str, *, start, minimum, box, lr) -> dict:
    """A surface's entry; ``lr`` is the suggested η of SGD, momentum (Nesterov's too), RMSprop and
    Adam (AdamW's too)."""
    sgd, heavy_ball, rms, adaptive = lr
    return dict(
        label=label,
        fn=fn,
        latex=latex,
        start=start,
        minimum=minimum,
        box=box,
        lr=dict(sgd=sgd, momentum=heavy_ball, nesterov=heavy_ball, rmsprop=rms, adam=adaptive, adamw=adaptive),
    )


SURFACES = {
    "quadratic": _surface(
        "ill-conditioned quadratic",
        _quadratic,
        r"f(\theta) = \tfrac12(\theta_1^2 + 100\,\theta_2^2)",
        start=(-2.8, 1.2),
        minimum=(0.0, 0.0),
        box=((-3.2, 3.2), (-1.6, 1.6)),
        lr=(0.018, 0.01, 0.03, 0.1),
    ),
    "rosenbrock": _surface(
        "Rosenbrock's valley",
        _rosenbrock,
        r"f(\theta) = (1-\theta_1)^2 + 100\,(\theta_2-\theta_1^2)^2",
        start=(-1.2, 1.0),
        minimum=(1.0, 1.0),
        box=((-2.0, 2.0), (-1.0, 3.0)),
        lr=(1e-3, 1e-3, 3e-2, 0.1),
    ),
    "saddle": _surface(
        "a saddle between two minima",
        _saddle,
        r"f(\theta) = \tfrac12\theta_1^2 - \tfrac12\theta_2^2 + \tfrac14\theta_2^4",
        start=(-2.0, 0.01),
        minimum=(0.0, 1.0),
        box=((-2.5, 2.5), (-1.8, 1.8)),
        lr=(0.05, 0.02, 0.01, 0.03),
    ),
    "beale": _surface(
        "Beale's function",
        _beale,
        r"f(\theta) = (1.5-\theta_1+\theta_1\theta_2)^2 + (2.25-\theta_1+\theta_1\theta_2^2)^2 + "
        r"(2.625-\theta_1+\theta_1\theta_2^3)^2",
        start=(1.0, 1.4),
        minimum=(3.0, 0.5),
        box=((-0.5, 4.5), (-1.0, 2.0)),
        lr=(1e-2, 3e-3, 3e-2, 0.1),
    ),
}


def _check_surface(name):
    if name not in SURFACES:
        raise ValueError(f"optimizers lab: unknown surface {name!r}; choose one of {', '.join(SURFACES)}")


def surface_value(name: str, theta) -> float:
    """f(θ) with the engine (the same function the optimizers minimise)."""
    _check_surface(name)
    return float(SURFACES[name]["fn"](Tensor(np.asarray(theta, dtype=np.float64))).data)


def surface_gradient(name: str, theta) -> np.ndarray:
    """∇f(θ) by autograd."""
    _check_surface(name)
    t = Tensor(np.asarray(theta, dtype=np.float64), requires_grad=True)
    SURFACES[name]["fn"](t).backward()
    return t.grad.numpy().copy()


def surface_grid(name: str, size: int = 120):
    """(θ₁ grid, θ₂ grid, f on the grid) over the surface's box, for contours (vectorised NumPy)."""
    _check_surface(name)
    (x0, x1), (y0, y1) = SURFACES[name]["box"]
    xx, yy = np.meshgrid(np.linspace(x0, x1, size), np.linspace(y0, y1, size))
    zz = SURFACES[name]["fn"](np.stack([xx, yy]))
    return xx, yy, zz


# ----------------------------------------------------------------------------- the race's map
# The race and clipping charts redraw at every move of a race control. This map is three layers
# (the shaded surface as one image, the paths, and one layer of markers: each path's end, the
# start, the minimum), where plot.surface_paths draws five: each layer costs about 4 ms to build
# and send.


@functools.lru_cache(maxsize=8)
def _shaded_layer(name: str, size: int):
    """The surface as a chart layer: one grey image (darker is lower, on a log scale) of 4·``size``
    pixels a side stretched over the surface's box, built once per surface, not at every redraw
    (a layered chart copies its layers, so this one is never changed). One image mark, where a
    rect per grid cell made the browser redraw 576 marks at every move of a race control (bench-ui's
    render column: 0.15-0.25 s for the race's sliders)."""
    import base64

    import altair as alt

    from engine.course import plot

    xx, yy, zz = surface_grid(name, 4 * size)
    shade = np.log10(zz - zz.min() + 1e-3)
    shade = (shade - shade.min()) / max(float(np.ptp(shade)), 1e-12)
    pixels = np.round(255 * shade[::-1]).astype(np.uint8)  # row 0 of an image is its top: θ₂ at its largest
    url = "data:image/png;base64," + base64.b64encode(plot.png(pixels)).decode("ascii")
    (x0, x1), (y0, y1) = SURFACES[name]["box"]
    return (
        alt.Chart(plot.data(x=[x0], x2=[x1], y=[y0], y2=[y1]))
        .mark_image(url=url, aspect=False, opacity=0.7)
        .encode(
            alt.X("x:Q", title="θ₁", scale=_box_scale(x0, x1)),
            alt.X2("x2"),
            alt.Y("y:Q", title="θ₂", scale=_box_scale(y0, y1)),
            alt.Y2("y2"),
        )
    )


def simplify_path(points, tolerance: float) -> np.ndarray:
    """The indices of the points of a polyline ``points`` ([N, 2]) that a chart must draw: the
    Ramer-Douglas-Peucker simplification, which keeps the two ends and every point farther than
    ``tolerance`` from the segment between the points kept around it. In the chart's own units
    (each axis scaled to [0, 1] of its view) a tolerance of a few thousandths is under a pixel or
    two: a zig-zag keeps every corner, a straight or converged stretch keeps its ends, and the
    chart sends a fraction of the points."""
    return simplify_paths([points], tolerance)[0]


def simplify_paths(paths: list, tolerance: float) -> list:
    """:func:`simplify_path` of each polyline of ``paths``, all in one pass: vectorised by rounds,
    each round splitting every segment of every path at its farthest point, so a call takes about
    as many rounds as the deepest recursion, whatever the number of paths."""
    p = [np.asarray(a, dtype=np.float64).reshape(-1, 2) for a in paths]
    sizes = [len(a) for a in p]
    if not sum(sizes):
        return [np.zeros(0, dtype=np.int64) for _ in p]
    p_all = np.concatenate(p)
    starts = np.cumsum([0] + sizes[:-1])
    keep = np.zeros(len(p_all), dtype=bool)
    for start, n in zip(starts, sizes):
        if n:
            keep[[start, start + n - 1]] = True  # each path's ends: no segment spans two paths
    every = np.arange(len(p_all))
    while True:
        kept = np.flatnonzero(keep)
        if len(kept) < 2:
            break
        seg = np.minimum(np.searchsorted(kept, every, side="right") - 1, len(kept) - 2)
        a, b = p_all[kept[seg]], p_all[kept[seg + 1]]
        d, off = b - a, p_all - a
        length2 = np.einsum("ij,ij->i", d, d)
        along = np.clip(np.einsum("ij,ij->i", off, d) / np.where(length2 > 0, length2, 1.0), 0.0, 1.0)
        off -= along[:, None] * d
        far = np.einsum("ij,ij->i", off, off)
        far[keep] = 0.0
        top = np.maximum.reduceat(far, kept[:-1])[seg]  # each segment's farthest point
        split = (far == top) & (far > tolerance * tolerance)
        if not split.any():
            break
        keep |= split
    return [np.flatnonzero(keep[start : start + n]) for start, n in zip(starts, sizes)]


_KEPT: dict = {}  # (id of a path array, its view) -> (the array, the indices simplify_path keeps): the last 64


def _kept_points(items: list) -> list:
    """:func:`simplify_paths` of the ``(array, view, points)`` of ``items`` (``points`` is
    ``array`` in the view's units), each remembered for this very array (a cached run's path or
    losses) and ``view``: a slider that re-runs one racer simplifies one path, not every racer's,
    and the paths not remembered are simplified together."""
    from engine.course.plot import remember

    found = {}
    for i, (array, view, _) in enumerate(items):
        hit = _KEPT.get((id(array), view))
        if hit is not None and hit[0] is array:
            found[i] = hit[1]
    todo = [i for i in range(len(items)) if i not in found]
    for i, keep in zip(todo, simplify_paths([items[i][2] for i in todo], _PIXEL)):
        array, view, _ = items[i]
        found[i] = remember(_KEPT, (id(array), view), (array, keep), 64)[1]
    return [found[i] for i in range(len(items))]


def drawn_curves(x, curves: dict, log_y: bool = False) -> dict:
    """``{name: (x, y)}`` of the curves ``{name: y}`` over the shared ``x``, each cut to the points
    the eye can tell apart (:func:`simplify_path`) on the chart's axes: x over its range, y over
    the range all the curves span (in decades when ``log_y``: ys must then be positive)."""
    x = np.asarray(x, dtype=np.float64)
    ys = {k: np.asarray(v, dtype=np.float64) for k, v in curves.items()}
    seen = {k: np.log10(v) if log_y else v for k, v in ys.items()}
    span = max(float(np.ptp(np.concatenate(list(seen.values())))), 1e-12)
    width = max(float(np.ptp(x)), 1e-12)
    kept = simplify_paths([np.stack([(x - x[0]) / width, seen[k] / span], 1) for k in ys], _PIXEL)
    return {k: (x[keep], v[keep]) for (k, v), keep in zip(ys.items(), kept)}


def _box_scale(low: float, high: float):
    import altair as alt

    return alt.Scale(domain=[low, high], nice=False, zero=False)


_PIXEL = 0.003  # a path's simplification tolerance, a fraction of the chart's side: about a pixel or two
_CHARTS: dict = {}  # a chart's settings and the ids of its arrays -> (chart, the arrays): the last 64


def _same_arrays_chart(arrays: tuple, settings: tuple, build):
    """``build()``, or the chart built before from these very array objects (a cached run's path
    is the same object when a slider comes back to its value) and these settings. The arrays are
    kept with the chart, so an id cannot be reused by another array while it is remembered."""
    from engine.course.plot import remember

    key = (tuple(id(a) for a in arrays), settings)
    hit = _CHARTS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[1], arrays)):
        return hit[0]
    return remember(_CHARTS, key, (build(), arrays), 64)[0]


def surface_map(
    surface: str,
    paths: dict,
    colors: dict,
    *,
    start,
    title=None,
    height: int = 340,
    grid: int = 24,
    max_points: int = 150,
):
    """The surface (darker is lower) with one path per entry of ``paths`` (label -> [N, 2], cut at
    its first non-finite point, simplified to the points the eye can tell apart
    (:func:`simplify_path`) and thinned to ``max_points``) in its palette colour ``colors[label]``,
    each path's last point as a dot, the start as a square and the minimum as a diamond. An Altair
    layer of three layers, the view fixed to the surface's box (the same chart object again for
    the same path arrays and settings: do not change it)."""
    _check_surface(surface)
    settings = (
        surface,
        tuple(paths),
        tuple(colors.items()),
        tuple(float(v) for v in start),
        title,
        height,
        grid,
        max_points,
    )
    return _same_arrays_chart(
        tuple(paths.values()),
        settings,
        lambda: _surface_map(
            surface, paths, colors, start=start, title=title, height=height, grid=grid, max_points=max_points
        ),
    )


def _surface_map(surface: str, paths: dict, colors: dict, *, start, title, height: int, grid: int, max_points: int):
    import altair as alt

    from engine.course import plot

    spec = SURFACES[surface]
    (x0, x1), (y0, y1) = spec["box"]
    x_scale, y_scale = _box_scale(x0, x1), _box_scale(y0, y1)
    names, steps, xs, ys = [], [], [], []
    ends = {"x": [], "y": [], "fill": [], "shape": [], "label": []}
    finite = {}  # each path up to its first non-finite point
    for name, path in paths.items():
        p = np.asarray(path, dtype=np.float64).reshape(-1, 2)
        ok = np.all(np.isfinite(p), axis=1)
        finite[name] = p if ok.all() else p[: np.argmin(ok)]
    finite = {name: p for name, p in finite.items() if len(p)}
    in_box = [(paths[name], spec["box"], (p - (x0, y0)) / (x1 - x0, y1 - y0)) for name, p in finite.items()]
    kept = _kept_points(in_box)  # in the chart's units: the box is the view
    for (name, p), keep in zip(finite.items(), kept):
        if len(keep) > max_points:
            keep = keep[np.unique(np.linspace(0, len(keep) - 1, max_points).round().astype(int))]
        names += [name] * len(keep)
        steps.append(keep)
        xs.append(p[keep, 0])
        ys.append(p[keep, 1])
        for key, value in zip(ends, (p[-1, 0], p[-1, 1], plot.color(colors[name]), "circle", f"{name}: last point")):
            ends[key].append(value)
    for where, shape, fill, label in (
        (start, "square", "#111827", "start"),
        (spec["minimum"], "diamond", plot.color("target"), "minimum"),
    ):
        for key, value in zip(ends, (where[0], where[1], fill, shape, label)):
            ends[key].append(value)
    order = list(paths)
    layers = [_shaded_layer(surface, grid)]
    if names:
        lines = plot.data(
            step=np.concatenate(steps),
            x=np.concatenate(xs),
            y=np.concatenate(ys),
            series=np.array(names, dtype=object),
            digits=4,
        )
        layers.append(
            alt.Chart(lines)
            .mark_line(strokeWidth=1.8, clip=True)
            .encode(
                alt.X("x:Q", scale=x_scale),
                alt.Y("y:Q", scale=y_scale),
                alt.Order("step:Q"),
                plot.series_colors(order, colors),
                [alt.Tooltip("series:N"), alt.Tooltip("step:Q")],
            )
        )
    markers = plot.data(
        x=np.array(ends["x"], dtype=np.float64),
        y=np.array(ends["y"], dtype=np.float64),
        fill=np.array(ends["fill"], dtype=object),
        shape=np.array(ends["shape"], dtype=object),
        label=np.array(ends["label"], dtype=object),
        digits=4,
    )
    layers.append(
        alt.Chart(markers)
        .mark_point(filled=True, size=80, opacity=1, stroke="white", clip=True)
        .encode(
            alt.X("x:Q", scale=x_scale),
            alt.Y("y:Q", scale=y_scale),
            alt.Fill("fill:N", scale=None),
            alt.Shape("shape:N", scale=None),
            alt.Tooltip("label:N"),
        )
    )
    return alt.layer(*layers, width="container", height=height, title=title or alt.Undefined)


# ----------------------------------------------------------------------------- racing the lesson's rules
# The update rules and the loop that races them are the notebook's lesson cells; this part only
# checks settings, gives each racer its hyper-parameters and learning-rate schedule, caches runs
# and wraps what the loop recorded. The notebook passes its own rules and loop in.

# The keyword each lesson rule takes its hyper-parameters by, per racer: a run is cached on these
# only, so moving μ re-runs momentum and Nesterov, not Adam (the race's sliders stay fast).
HYPER_USED = {
    "sgd": (),
    "momentum": ("momentum",),
    "nesterov": ("momentum",),
    "rmsprop": ("alpha",),
    "adam": ("betas",),
    "adamw": ("betas", "weight_decay"),
}
_KEYWORDS = {"momentum": "mu", "alpha": "alpha", "betas": "betas", "weight_decay": "weight_decay"}


def rule_keywords(
    name: str, momentum: float = 0.9, alpha: float = 0.99, betas=(0.9, 0.999), weight_decay: float = 0.0
) -> dict:
    """The keyword arguments racer ``name`` calls its rule with (AdamW is the rule ``adam`` with
    ``weight_decay``; Adam runs it with none). ValueError for a setting a racer refuses."""
    if name not in HYPER_USED:
        raise ValueError(f"optimizers lab: optimizer must be one of {OPTIMIZERS}, got {name!r}")
    if name == "nesterov" and momentum <= 0:
        raise ValueError("Nesterov momentum needs μ > 0 (with μ = 0 it is plain SGD); raise the momentum slider")
    given = {"momentum": momentum, "alpha": alpha, "betas": tuple(betas), "weight_decay": weight_decay}
    return {_KEYWORDS[k]: given[k] for k in HYPER_USED[name]}


class Schedule:
    """The learning rate of one racer, step by step, from an ``engine.optim.lr_scheduler`` class:
    ``.lr`` is η for the coming step, ``.step(loss)`` moves on (ReduceLROnPlateau reads the loss).
    The scheduler drives a stand-in optimizer that holds only the learning rate."""

    def __init__(self, name: str, lr: float, steps: int):
        if name not in SCHEDULES:
            raise ValueError(f"optimizers lab: schedule must be one of {SCHEDULES}, got {name!r}")
        self._opt = optim.SGD([Parameter(np.zeros(1))], lr=lr)
        self._opt._opt_called = True  # it never steps: only its learning rate is read
        self._sched = make_lr_scheduler(name, self._opt, steps)
        self._plateau = name == "plateau"

    @property
    def lr(self) -> float:
        return self._opt.param_groups[0]["lr"]

    def step(self, loss: float) -> None:
        if self._sched is not None:
            self._sched.step(loss) if self._plateau else self._sched.step()


def make_lr_scheduler(
    name: str,
    opt,
    steps: int,
    warmup: int | None = None,
    step_size: int | None = None,
    gamma: float = 0.5,
    factor: float = 0.5,
    patience: int = 10,
):
    """A scheduler from ``engine.optim.lr_scheduler`` for a run of ``steps`` steps (None for 'constant')."""
    warmup = warmup if warmup is not None else max(1, steps // 10)
    step_size = step_size if step_size is not None else max(1, steps // 4)
    if name == "constant":
        return None
    if name == "step":
        return lr_scheduler.StepLR(opt, step_size=step_size, gamma=gamma)
    if name == "cosine":
        return lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    if name == "warmup_cosine":
        return lr_scheduler.warmup_cosine(opt, warmup_steps=min(max(1, warmup), steps - 1), total_steps=steps)
    if name == "onecycle":
        lr = opt.param_groups[0]["lr"]
        return lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps + 1, cycle_momentum=False)
    if name == "plateau":
        return lr_scheduler.ReduceLROnPlateau(opt, factor=factor, patience=patience)
    raise ValueError(f"optimizers lab: schedule must be one of {SCHEDULES}, got {name!r}")


@dataclass
class Trajectory:
    path: np.ndarray  # [k + 1, 2]: the start, then θ after each step
    losses: np.ndarray  # f at each point of the path
    lrs: np.ndarray  # the learning rate used at each step
    diverged: bool
    grad_norms: np.ndarray  # ‖∇f‖ before clipping, per step

    @property
    def final_loss(self) -> float:
        return float(self.losses[-1])


def _trajectory(surface: str, log: dict) -> Trajectory:
    """A racer's record from the race loop (path, losses, lrs, norms) as a Trajectory."""
    path = np.array(log["path"], dtype=np.float64)
    diverged = not np.all(np.abs(path[-1]) <= 1e6)  # also true for inf and NaN
    last = float("nan") if diverged else surface_value(surface, path[-1])
    return Trajectory(
        path, np.array(list(log["losses"]) + [last]), np.array(log["lrs"]), diverged, np.array(log["norms"])
    )


def _check_run(surface: str, steps) -> None:
    _check_surface(surface)
    if not (isinstance(steps, (int, np.integer)) and 1 <= steps <= 5000):
        raise ValueError(f"race: steps must be an integer in [1, 5000], got {steps!r}")


def loss_gap(surface: str, run: Trajectory, max_points: int = 200) -> tuple:
    """(steps, f(θ_t) − f(θ*)) along a run, floored at 10⁻¹⁶ for a log axis, at no more than
    ``max_points`` evenly spaced steps (the last one kept): what a chart needs, not every step."""
    gap = np.maximum(run.losses - surface_value(surface, SURFACES[surface]["minimum"]), 1e-16)
    steps = np.arange(len(gap))
    if len(gap) > max_points:
        steps = np.unique(np.linspace(0, len(gap) - 1, max_points).round().astype(int))
    return steps, gap[steps]


def gap_chart(surface: str, runs: dict, colors: dict, *, max_points: int = 100, height: int = 220):
    """How far each run's f(θ_t) is from the minimum value, on a log axis (:func:`loss_gap`), one
    line per entry of ``runs`` (label -> Trajectory) in its palette colour ``colors[label]``: the
    race's result. The same chart object again for the same runs (do not change it)."""
    settings = (surface, tuple(runs), tuple(colors.items()), max_points, height)
    return _same_arrays_chart(
        tuple(runs.values()), settings, lambda: _gap_chart(surface, runs, colors, max_points, height)
    )


def _gap_chart(surface: str, runs: dict, colors: dict, max_points: int, height: int):
    import altair as alt

    from engine.course import plot

    gaps = {label: loss_gap(surface, run, max_points=max_points) for label, run in runs.items()}

    # only the points the eye can tell apart: each run in units of its own steps and decades (the
    # chart's axes span at least as much, so no dropped point is farther than a pixel or two)
    def units(steps, gap):
        logs = np.log10(gap)
        return np.stack([steps / max(int(steps[-1]), 1), logs / max(float(np.ptp(logs)), 1e-3)], 1)

    kept = _kept_points([(runs[label].losses, ("gap", max_points), units(*g)) for label, g in gaps.items()])
    gaps = {label: (steps[keep], gap[keep]) for (label, (steps, gap)), keep in zip(gaps.items(), kept)}
    names = list(gaps)
    rows = plot.data(
        step=np.concatenate([steps for steps, _ in gaps.values()]),
        gap=np.concatenate([gap for _, gap in gaps.values()]),
        optimizer=np.repeat(np.array(names, dtype=object), [len(g) for _, g in gaps.values()]),
        digits=3,
    )
    return (
        alt.Chart(rows, width="container", height=height, title="Distance to the minimum value")
        .mark_line(clip=True)
        .encode(
            alt.X("step:Q", title="step"),
            alt.Y("gap:Q", title="f(θ) − f(θ*)", scale=alt.Scale(type="log")),
            plot.series_colors(names, colors, field="optimizer"),
            alt.Tooltip("gap:Q", format=".3g"),
        )
    )


_RUNS: dict = {}  # run key -> Trajectory, the last 512 runs (oldest dropped first)


def _run_key(loop, rule, surface, name, start, steps, lr, schedule, clip, keywords) -> tuple:
    """What a run depends on: the lesson's loop and rule (an edited cell is a new function), the
    settings, and only the hyper-parameters ``name`` reads."""
    used = tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else float(v)) for k, v in keywords.items()))
    return (
        loop,
        rule,
        surface,
        name,
        tuple(float(v) for v in start),
        int(steps),
        float(lr),
        schedule,
        None if clip is None else float(clip),
        used,
    )


def _remember(key: tuple, run: Trajectory) -> None:
    if len(_RUNS) >= 512:
        _RUNS.pop(next(iter(_RUNS)))
    _RUNS[key] = run


@dataclass
class Race:
    """Several optimizers from one start: the trajectories that ran, and why the others did not."""

    trajectories: dict = field(default_factory=dict)  # name -> Trajectory
    problems: dict = field(default_factory=dict)  # name -> the ValueError's message


def run_race(
    loop,
    rules: dict,
    surface: str,
    names,
    start=None,
    steps: int = 100,
    lrs: dict | None = None,
    schedule: str = "constant",
    clip: float | None = None,
    **hyper,
) -> Race:
    """Race the racers of ``names`` (in :data:`OPTIMIZERS` order) on ``surface`` with the lesson's
    ``loop`` and update ``rules`` (``{racer: rule}``), each with its own learning rate (the
    surface's suggestion when ``lrs`` has none) and the hyper-parameters it reads
    (:func:`rule_keywords`). A setting one racer refuses (Nesterov with μ = 0) is recorded in
    ``problems``; the others still run. Runs are remembered: only racers whose loop, rule or
    settings changed run again, together in one call of ``loop``."""
    _check_run(surface, steps)
    spec = SURFACES[surface]
    start = tuple(spec["start"] if start is None else start)
    result, keys, fresh = Race(), {}, {}
    for name in (n for n in OPTIMIZERS if n in names):
        lr = (lrs or {}).get(name)
        lr = spec["lr"][name] if lr is None else lr
        try:
            if not (lr > 0 and math.isfinite(lr)):
                raise ValueError(f"race: the learning rate must be positive, got {lr}")
            keywords = rule_keywords(name, **hyper)
        except ValueError as err:
            result.problems[name] = str(err)
            continue
        keys[name] = _run_key(loop, rules[name], surface, name, start, steps, lr, schedule, clip, keywords)
        if keys[name] not in _RUNS:
            fresh[name] = (functools.partial(rules[name], **keywords), Schedule(schedule, lr, steps))
    if fresh:
        with np.errstate(over="ignore", invalid="ignore"):
            logs = loop(
                spec["fn"],
                {n: r for n, (r, _) in fresh.items()},
                start,
                steps,
                {n: s for n, (_, s) in fresh.items()},
                clip=clip,
            )
        for name, log in logs.items():
            _remember(keys[name], _trajectory(surface, log))
    result.trajectories = {n: _RUNS[k] for n, k in keys.items()}
    return result


def run_one(loop, rule, surface: str, name: str, **settings) -> Trajectory:
    """One racer's Trajectory: :func:`run_race` with ``rule`` as racer ``name`` alone
    (ValueError for a setting it refuses)."""
    result = run_race(loop, {name: rule}, surface, [name], **settings)
    if name in result.problems:
        raise ValueError(result.problems[name])
    return result.trajectories[name]


def constant_paths(loop, f, rules: dict, start, steps: int, lrs: dict) -> dict:
    """``{racer: path [steps + 1, 2]}``: the lesson's ``loop`` with ``rules`` (keywords bound) on
    ``f``, each at its constant learning rate ``lrs[racer]``."""
    schedules = {name: Schedule("constant", lrs[name], steps) for name in rules}
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        logs = loop(f, rules, start, steps, schedules)
    return {name: np.array(log["path"], dtype=np.float64) for name, log in logs.items()}


# ----------------------------------------------------------------------------- Nesterov's look-ahead


@dataclass
class LookAhead:
    """Nesterov momentum two ways on one surface: Sutskever et al.'s look-ahead form and PyTorch's."""

    theta: np.ndarray  # look-ahead form: θ_t, [steps + 1, 2]
    lookahead: np.ndarray  # φ_t = θ_t + μv_t, where the look-ahead form takes its gradients
    engine: np.ndarray  # PyTorch's form (the lesson's nesterov): its parameters, [steps + 1, 2]

    @property
    def max_difference(self) -> float:
        """max ‖φ_t − engine θ_t‖: PyTorch's parameters are the look-ahead points."""
        return float(np.max(np.abs(self.lookahead - self.engine)))


def lookahead_point(theta, velocity, momentum: float):
    """φ = θ + μv: where momentum alone would carry θ, and where Nesterov takes the gradient."""
    return np.asarray(theta, dtype=np.float64) + momentum * np.asarray(velocity, dtype=np.float64)


def nesterov_lookahead(
    loop, rule, surface: str = "quadratic", lr: float = 0.01, momentum: float = 0.9, steps: int = 50
) -> LookAhead:
    """The look-ahead form v ← μv − η∇f(θ + μv), θ ← θ + v takes the gradient where momentum is
    about to carry θ, so it brakes before it overshoots. PyTorch's form, the lesson's ``rule``
    (b ← μb + g, θ ← θ − η(g + μb), with g at its own parameters) run by the lesson's ``loop``, is
    the same algorithm in the variable φ = θ + μv."""
    _check_surface(surface)
    start = SURFACES[surface]["start"]
    theta, v = np.array(start, dtype=np.float64), np.zeros(2)
    thetas, points = [theta.copy()], [theta.copy()]
    for _ in range(steps):
        v = momentum * v - lr * surface_gradient(surface, lookahead_point(theta, v, momentum))
        theta = theta + v
        thetas.append(theta.copy())
        points.append(lookahead_point(theta, v, momentum))
    pytorch = constant_paths(
        loop,
        SURFACES[surface]["fn"],
        {"nesterov": functools.partial(rule, mu=momentum)},
        start,
        steps,
        {"nesterov": lr},
    )["nesterov"]
    return LookAhead(np.array(thetas), np.array(points), pytorch)


# ----------------------------------------------------------------------------- Adam's bias correction


def rule_updates(rule, grads, lr: float = 0.01, **keywords) -> np.ndarray:
    """The updates Δθ_t an update rule makes on one parameter fed the gradients g_1, g_2, … in
    turn (θ starts at 0; ``keywords`` go to the rule): the lesson's ``adam`` here, its first
    steps with and without bias correction."""
    theta, state, updates = np.zeros(1), {}, []
    for g in np.asarray(grads, dtype=np.float64):
        new = rule(theta, np.array([g]), state, lr, **keywords)
        updates.append(float(new[0] - theta[0]))
        theta = new
    return np.array(updates)


def engine_adam_updates(grads, lr: float = 0.01, betas=(0.9, 0.999), eps: float = 1e-8) -> np.ndarray:
    """The same updates from ``engine.optim.Adam`` fed the gradients one by one (the reference).
    Remembered per gradient sequence and setting: the library does not change while a page runs,
    so a slider of the lesson's side re-runs only the lesson's rule."""
    from engine.course.plot import remember

    grads = np.asarray(grads, dtype=np.float64)
    key = (grads.tobytes(), float(lr), tuple(float(b) for b in betas), float(eps))
    known = _ENGINE_ADAM.get(key)
    if known is None:
        p = Parameter(np.zeros(1))
        opt = optim.Adam([p], lr=lr, betas=tuple(betas), eps=eps)
        updates = []
        for g in grads:
            before = p.data.copy()
            p.grad = np.array([g])
            opt.step()
            updates.append(float(p.data[0] - before[0]))
        known = remember(_ENGINE_ADAM, key, np.array(updates), 64)
    return known.copy()


_ENGINE_ADAM: dict = {}  # (gradients, lr, betas, eps) -> the library's updates


def noisy_gradients(steps: int, mean: float = 1.0, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """g_t = mean + noise·N(0, 1): the gradient sequence of the bias-correction demo."""
    return mean + noise * np.random.default_rng(seed).standard_normal(steps)


# ----------------------------------------------------------------------------- stochastic gradients


@dataclass
class NoisyRuns:
    """Mini-batch SGD on least squares: the excess loss L(θ_t) − L(θ̂) after each step (full data),
    with a constant η, with η decayed by a cosine to 0, and full-batch GD at the same η."""

    batch_size: int
    n: int
    excess: dict  # 'constant' / 'decayed' / 'full batch' -> array over steps 0 … steps
    floor: dict  # the mean excess over the last 10 % of the steps, per run
    gradient_noise: float  # E‖g_batch − g‖² at θ̂, measured over 200 batches: the noise a step sees


def _least_squares_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) * np.array([1.0, 0.5])
    y = X @ np.array([2.0, -1.0]) + rng.standard_normal(n)  # σ = 1 label noise: no θ fits every point
    return X, y


def epoch_batches(n: int, batch_size: int, steps: int, rng) -> list:
    """``steps`` mini-batches as training draws them, without replacement: each epoch a new
    shuffle of the n points cut into n // B batches of B (the last, shorter one left out), so a
    point is used at most once per epoch and B = n is the full batch."""
    per_epoch = n // batch_size
    batches = []
    while len(batches) < steps:
        order = rng.permutation(n)
        batches += [order[k * batch_size : (k + 1) * batch_size] for k in range(per_epoch)]
    return batches[:steps]


_NOISY_RUNS = ("constant", "decayed", "full batch")


@functools.lru_cache(maxsize=32)  # remembered per setting and per lesson function (an edited cell is a new one)
def sgd_noise(
    loop,
    rule,
    batch_size: int = 8,
    lr: float = 0.1,
    steps: int = 400,
    n: int = 512,
    seed: int = 0,
    only: tuple = _NOISY_RUNS,
) -> NoisyRuns:
    """L(θ) = ‖Xθ − y‖²/2n on 2-D data with label noise, trained by the lesson's mini-batch
    ``loop`` with its update ``rule``. A mini-batch gradient is unbiased but noisy, with variance
    about 1/B of one example's: at a constant η, SGD stops falling at a floor that rises as B
    shrinks; decaying η (a cosine to 0) averages the noise out and goes below it. Full-batch GD
    (B = n) has no noise and no floor. The batches (:func:`epoch_batches`) come from
    ``default_rng(seed + 1)``, the same for the constant and the decayed run. ``only`` names the
    runs to make (each the same as in a full call); without all three the noise is not measured (NaN)."""
    only = tuple(only)
    if not set(only) <= set(_NOISY_RUNS):
        raise ValueError(f"sgd_noise: runs must be among {_NOISY_RUNS}, got {only!r}")
    if not (isinstance(batch_size, (int, np.integer)) and 1 <= batch_size <= n):
        raise ValueError(f"sgd_noise: batch size must be an integer in [1, {n}], got {batch_size!r}")
    if not (0 < lr <= 1.0):
        raise ValueError(f"sgd_noise: η must be in (0, 1] for this problem (its largest curvature is ≈ 1), got {lr}")
    if not (isinstance(steps, (int, np.integer)) and 10 <= steps <= 5000):
        raise ValueError(f"sgd_noise: steps must be an integer in [10, 5000], got {steps!r}")
    X, y = _least_squares_data(n, seed)
    best = np.linalg.lstsq(X, y, rcond=None)[0]

    def losses(thetas):  # L at each row of thetas, in one product (not one per step)
        return 0.5 * np.mean((thetas @ X.T - y) ** 2, axis=1)

    floor_loss = float(losses(best[None])[0])
    batches = epoch_batches(n, batch_size, steps, np.random.default_rng(seed + 1))
    runs = {
        "constant": lambda: (batches, [lr] * steps),
        "decayed": lambda: (
            batches,
            lr_scheduler.schedule_values(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=steps), steps, lr),
        ),
        "full batch": lambda: ([slice(None)] * steps, [lr] * steps),
    }
    excess, floor = {}, {}
    for name in (name for name in _NOISY_RUNS if name in only):
        chosen, rates = runs[name]()
        path = np.asarray(loop(rule, X, y, chosen, rates), dtype=np.float64)
        excess[name] = np.maximum(losses(path) - floor_loss, 0.0)
        floor[name] = float(np.mean(excess[name][-max(1, steps // 10) :]))
    if set(only) != set(_NOISY_RUNS):  # a partial measurement (an exercise's floors) skips the noise estimate
        return NoisyRuns(int(batch_size), n, excess, floor, float("nan"))
    rng = np.random.default_rng(seed + 2)
    noise = [
        np.sum((X[i].T @ (X[i] @ best - y[i]) / batch_size) ** 2)
        for i in (rng.choice(n, batch_size, replace=False) for _ in range(200))
    ]
    return NoisyRuns(int(batch_size), n, excess, floor, float(np.mean(noise)))


@dataclass
class RangeTest:
    """A learning-rate range test (Smith, 2017): η grows geometrically each mini-batch step while the
    loss is recorded, until it blows up."""

    lrs: np.ndarray  # η at each step taken
    losses: np.ndarray  # the full-data loss after each step
    best_lr: float  # η where the loss was lowest
    blowup_lr: float  # first η after the lowest point whose loss exceeds 4× the lowest (nan if none)
    stable_limit: float  # 2/λ_max of the Hessian XᵀX/n: plain GD diverges above it
    full_batch_blowup_lr: float  # where the same test on full-batch GD blows up, in theory (nan if never)


def _blowup(losses: np.ndarray) -> tuple:
    """(last step the test takes, step of the lowest loss, step of the blow-up or None): the test
    stops at the first step whose loss exceeds 4× the lowest so far (as ``lr_find`` does) or is not
    finite; the blow-up is the first step after the lowest point above 4× the lowest."""
    finite = np.where(np.isfinite(losses), losses, np.inf)
    stop = np.flatnonzero(~(finite <= 4 * np.minimum.accumulate(finite)))  # inf and NaN included
    end = int(stop[0]) + 1 if len(stop) else len(losses)
    best = int(np.argmin(finite[:end]))
    over = np.flatnonzero(~(finite[best:end] <= 4 * finite[best])) + best
    return end, best, int(over[0]) if len(over) else None


def full_batch_losses(X, y, rates) -> np.ndarray:
    """L(θ_t) after each step of full-batch gradient descent from θ₀ = 0 with the rates η_t, in
    closed form: along each eigenvector of the Hessian H = XᵀX/n (eigenvalue λᵢ) the error
    eᵢ = θᵢ − θ̂ᵢ is multiplied by (1 − η_t λᵢ) each step, and L = L(θ̂) + ½ Σ λᵢ eᵢ². Past
    η = 2/λ_max the steepest factor exceeds 1 in size, but the loss grows only as fast as what
    is left of the error along that direction."""
    lam, vectors = np.linalg.eigh(X.T @ X / len(X))
    best = np.linalg.lstsq(X, y, rcond=None)[0]
    floor = 0.5 * np.mean((X @ best - y) ** 2)
    factors = np.cumprod(1.0 - np.outer(rates, lam), axis=0)  # [steps, d]: ∏_{s ≤ t} (1 − η_s λᵢ)
    errors = factors * (vectors.T @ (0.0 - best))
    return floor + 0.5 * np.sum(lam * errors * errors, axis=1)


def gd_stability_limit(hessian) -> float:
    """2/λ_max: gradient descent on a quadratic with this Hessian diverges for any larger η (along the
    steepest eigenvector each step multiplies the error by 1 − ηλ_max, below −1 past it)."""
    return 2.0 / float(np.linalg.eigvalsh(np.asarray(hessian, dtype=np.float64)).max())


@functools.lru_cache(maxsize=32)  # remembered per setting and per lesson function (an edited cell is a new one)
def lr_range_test(
    loop,
    rule,
    batch_size: int = 32,
    steps: int = 120,
    lr_min: float = 1e-4,
    lr_max: float = 30.0,
    n: int = 512,
    seed: int = 0,
) -> RangeTest:
    """The lesson's mini-batch ``loop`` with its ``rule`` on the least-squares problem of
    :func:`sgd_noise`, with η_t = lr_min·(lr_max/lr_min)^(t/steps). The test stops at the first
    step whose loss exceeds 4× the lowest seen (as ``lr_find`` does) or is not finite. Beside it,
    where the same ramp blows up full-batch GD in theory (:func:`full_batch_losses`)."""
    if not (isinstance(batch_size, (int, np.integer)) and 1 <= batch_size <= n):
        raise ValueError(f"lr_range_test: batch size must be an integer in [1, {n}], got {batch_size!r}")
    if not (isinstance(steps, (int, np.integer)) and 10 <= steps <= 2000):
        raise ValueError(f"lr_range_test: steps must be an integer in [10, 2000], got {steps!r}")
    if not (0 < lr_min < lr_max):
        raise ValueError(f"lr_range_test: need 0 < lr_min < lr_max, got {lr_min}, {lr_max}")
    X, y = _least_squares_data(n, seed)
    batches = epoch_batches(n, batch_size, steps, np.random.default_rng(seed + 1))
    growth = (lr_max / lr_min) ** (1.0 / steps)
    rates = np.array([lr_min * growth**t for t in range(steps)])
    with np.errstate(over="ignore", invalid="ignore"):
        path = np.asarray(loop(rule, X, y, batches, rates), dtype=np.float64)
        all_losses = 0.5 * np.mean((path[1:] @ X.T - y) ** 2, axis=1)
        _, _, theory = _blowup(full_batch_losses(X, y, rates))
    end, best, over = _blowup(all_losses)
    nan = float("nan")
    return RangeTest(
        rates[:end],
        all_losses[:end],
        float(rates[best]),
        nan if over is None else float(rates[over]),
        gd_stability_limit(X.T @ X / n),
        nan if theory is None else float(rates[theory]),
    )


# ----------------------------------------------------------------------------- condition number


@dataclass
class ConditionRates:
    """Gradient descent and heavy-ball momentum, each with its best constant setting, on
    f(θ) = ½(θ₁² + κθ₂²) (Hessian eigenvalues μ = 1 and L = κ), from θ₀ = (1, 1)."""

    kappa: float
    norms: dict  # 'gd' / 'momentum' -> ‖θ_t − θ*‖ for t = 0 … steps
    measured: dict  # per-step contraction (‖θ_T‖/‖θ_{T/2}‖)^(2/T), over the second half of the run
    theory: dict  # GD (κ − 1)/(κ + 1); momentum (√κ − 1)/(√κ + 1)
    settings: dict  # the (η, μ) each ran with


@functools.lru_cache(maxsize=16)  # the section's chart and exercise 4 both read κ = 100: computed once
def condition_rates(loop, gd_rule, momentum_rule, kappa: float = 100.0, steps: int = 300) -> ConditionRates:
    """Measure the linear rates of "Why Momentum Really Works" (Goh, 2017) with the lesson's race
    ``loop``, its gradient-descent rule and its momentum rule (keyword ``mu``).

    GD at its best η = 2/(L + μ) contracts by (κ − 1)/(κ + 1) per step. Momentum at its best
    η = (2/(√L + √μ))², μ_m = ((√κ − 1)/(√κ + 1))² contracts by √μ_m = (√κ − 1)/(√κ + 1).
    PyTorch's b ← μb + g, θ ← θ − ηb is exactly the heavy ball θ_{t+1} = θ_t − ηg_t + μ(θ_t − θ_{t−1}).
    The measurement skips the first half: at this setting momentum's extreme directions decay as
    t·rᵗ (a double root), which lifts a short window's rate slightly above r.
    """
    if not (math.isfinite(kappa) and 1.0 < kappa <= 1e4):
        raise ValueError(f"condition_rates: κ must be in (1, 10000], got {kappa}")
    if not (isinstance(steps, (int, np.integer)) and 10 <= steps <= 2000):
        raise ValueError(f"condition_rates: steps must be an integer in [10, 2000], got {steps!r}")
    root = math.sqrt(kappa)
    settings = {
        "gd": (2.0 / (kappa + 1.0), 0.0),
        "momentum": ((2.0 / (root + 1.0)) ** 2, ((root - 1.0) / (root + 1.0)) ** 2),
    }
    theory = {"gd": (kappa - 1.0) / (kappa + 1.0), "momentum": (root - 1.0) / (root + 1.0)}
    rules = {"gd": gd_rule, "momentum": functools.partial(momentum_rule, mu=settings["momentum"][1])}
    paths = constant_paths(
        loop,
        lambda t: 0.5 * (t[0] ** 2 + kappa * t[1] ** 2),
        rules,
        (1.0, 1.0),
        steps,
        {name: lr for name, (lr, _) in settings.items()},
    )
    norms, measured = {}, {}
    for name, path in paths.items():
        norms[name] = np.linalg.norm(path, axis=1)
        end = int(np.flatnonzero(norms[name] > 1e-250)[-1])  # a fast run may reach float64's floor
        half = end // 2
        measured[name] = float((norms[name][end] / norms[name][half]) ** (1.0 / max(end - half, 1)))
    return ConditionRates(float(kappa), norms, measured, theory, settings)


# ----------------------------------------------------------------------------- schedules


def plateau_metric(steps: int, seed: int = 0) -> np.ndarray:
    """A validation loss that falls, then stalls with noise: what ReduceLROnPlateau reacts to."""
    t = np.arange(steps)
    rng = np.random.default_rng(seed)
    return 0.3 + np.exp(-t / max(1, steps / 8)) + 0.01 * rng.standard_normal(steps)


@functools.lru_cache(maxsize=32)  # remembered per setting: the engine's schedulers do not change while a page runs
def schedule_curves(
    steps: int = 100,
    lr: float = 0.1,
    step_size: int = 25,
    gamma: float = 0.5,
    warmup: int = 10,
    pct_start: float = 0.3,
    factor: float = 0.5,
    patience: int = 5,
    seed: int = 0,
) -> dict:
    """{schedule name: learning rate at steps 0 … steps − 1} from the engine's schedulers."""
    if not (isinstance(steps, (int, np.integer)) and steps >= 2):
        raise ValueError(f"schedule_curves: steps must be an integer ≥ 2, got {steps!r}")
    warmup = int(min(max(1, warmup), steps - 1))
    sv = lr_scheduler.schedule_values
    return {
        "step": sv(lambda o: lr_scheduler.StepLR(o, step_size=max(1, step_size), gamma=gamma), steps, lr),
        "cosine": sv(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=steps), steps, lr),
        "warmup_cosine": sv(lambda o: lr_scheduler.warmup_cosine(o, warmup_steps=warmup, total_steps=steps), steps, lr),
        "onecycle": sv(
            lambda o: lr_scheduler.OneCycleLR(o, max_lr=lr, total_steps=steps, pct_start=pct_start), steps, lr
        ),
        "plateau": sv(
            lambda o: lr_scheduler.ReduceLROnPlateau(o, factor=factor, patience=patience),
            steps,
            lr,
            metrics=plateau_metric(steps, seed),
        ),
    }


# ----------------------------------------------------------------------------- weight decay


def _flat_direction_loss(t):
    """f(θ) = 5(θ₁ − 2)²: θ₂ does not affect the loss at all; only weight decay moves it."""
    return 5.0 * (t[0] - 2.0) ** 2


@dataclass
class WeightDecayPaths:
    adam_l2: np.ndarray  # Adam(weight_decay=λ): θ after each step, [steps + 1, 2]
    adamw: np.ndarray  # AdamW(weight_decay=λ)


@functools.lru_cache(maxsize=32)  # remembered per setting and per lesson function (an edited cell is a new one)
def l2_vs_decoupled(
    loop, rule, weight_decay: float = 0.1, lr: float = 0.05, steps: int = 200, start=(0.0, 2.0)
) -> WeightDecayPaths:
    """The lesson's Adam ``rule`` (keyword ``weight_decay``) in the lesson's ``loop``, two ways:
    with an L2 penalty, the loss f + ½λ‖θ‖², whose gradient g + λθ is then normalised by √v̂ (as
    ``engine.optim.Adam(weight_decay=λ)`` does), and with AdamW's decoupled decay
    (θ ← θ − ηλθ outside the adaptive step).

    On θ₂, which has no loss gradient, L2-Adam's normalised step is ≈ η·sign(θ₂) whatever λ is
    (it drives θ₂ to 0 in about |θ₂|/η steps), while AdamW shrinks it by (1 − ηλ) per step. On
    θ₁, whose loss gradient is large, L2's λθ₁ is drowned out; AdamW still pulls θ₁ toward 0 a little.
    Both race on f in one call of ``loop`` (the penalty's gradient λθ is added to the L2 racer's g).
    Returns both paths, each [steps + 1, 2].
    """

    def with_l2_penalty(theta, g, state, lr):  # ∇(f + ½λ‖θ‖²) = g + λθ, then Adam's step
        return rule(theta, g + weight_decay * theta, state, lr)

    rules = {"adam_l2": with_l2_penalty, "adamw": functools.partial(rule, weight_decay=weight_decay)}
    paths = constant_paths(loop, _flat_direction_loss, rules, start, steps, {"adam_l2": lr, "adamw": lr})
    return WeightDecayPaths(paths["adam_l2"], paths["adamw"])


# ----------------------------------------------------------------------------- the sections' charts
# Each is built once per measurement: a remembered measurement comes back as the same object when
# a slider returns to its value, and so does its chart (do not change a chart these return).


def condition_chart(cond: ConditionRates):
    """‖θ_t − θ*‖ of gradient descent and momentum (:func:`condition_rates`) on a log axis, every
    third step (the curves are smooth), with each theory rate √2·rᵗ dashed (a straight line on this
    axis, drawn from its two ends)."""

    def build():
        from engine.course import plot

        names = {"gd": "gradient descent", "momentum": "momentum"}
        t = np.arange(0, len(cond.norms["gd"]), 3)
        ends = np.array([0, len(cond.norms["gd"]) - 1])
        curves = {names[k]: np.maximum(v[t], 1e-300) for k, v in cond.norms.items()}
        curves.update({f"{names[k]}, theory rᵗ": (ends, np.sqrt(2) * cond.theory[k] ** ends) for k in cond.theory})
        return plot.curves(
            t,
            curves,
            x_title="step t",
            y_title="‖θ_t − θ*‖",
            log_y=True,
            height=240,
            colors={"gradient descent": "sgd", "gradient descent, theory rᵗ": "sgd", "momentum, theory rᵗ": "momentum"},
            dashed=["gradient descent, theory rᵗ", "momentum, theory rᵗ"],
            title=f"Best-tuned GD and momentum on a quadratic with κ = {cond.kappa:g}",
        )

    return _same_arrays_chart((cond,), ("condition",), build)


def bias_correction_chart(with_correction, without, engine_updates, betas):
    """The steps |Δθ_t|/η of the lesson's Adam with and without bias correction (lines, the latter
    dashed) and of ``engine.optim.Adam`` (dots), against t = 1, 2, …. Built once per set of values
    (the lesson's rule runs at every move; its chart only when the steps changed)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in (with_correction, without, engine_updates)]

    def build():
        from engine.course import plot

        t = np.arange(1, len(arrays[0]) + 1)
        chart = plot.curves(
            t,
            {"with correction": np.abs(arrays[0]), "without": np.abs(arrays[1])},
            dots={"engine.optim.Adam": np.abs(arrays[2])},
            n_dots=min(len(t), 40),
            colors={"with correction": "adam", "without": "error"},
            dashed=["without"],
            x_title="step t",
            y_title="|Δθ| / η",
            height=240,
            title=f"Adam's step size for gradients ≈ 1 (β₁ = {betas[0]:g}, β₂ = {betas[1]:g})",
        )
        return plot.compact_chart(chart, digits=3)  # 3 digits: under a pixel; short series codes

    settings = ("bias correction", tuple(a.tobytes() for a in arrays), tuple(float(b) for b in betas))
    return _same_arrays_chart((), settings, build)


def noise_chart(noisy: NoisyRuns):
    """The excess loss L(θ_t) − L(θ̂) of the runs of :func:`sgd_noise`, step by step, on a log axis
    (values below 10⁻¹² drawn at 10⁻¹²)."""

    def build():
        from engine.course import plot

        excess = {k: np.maximum(v, 1e-12) for k, v in noisy.excess.items()}
        curves = drawn_curves(np.arange(len(next(iter(excess.values())))), excess, log_y=True)  # a third of 3 x 401
        chart = plot.curves(
            None,
            curves,
            colors={"constant": "sgd", "decayed": "adam", "full batch": "autograd"},
            x_title="step",
            y_title="L(θ_t) − L(θ̂)",
            log_y=True,
            height=240,
            title=f"SGD with batches of {noisy.batch_size} of {noisy.n} (drawn at 10⁻¹² when below)",
        )
        return plot.compact_chart(chart, digits=3)

    return _same_arrays_chart((noisy,), ("noise",), build)


def range_chart(test: RangeTest, batch_size: int):
    """The loss of a range test (:func:`lr_range_test`) against η, both axes logarithmic, with a
    vertical line at the stability limit 2/λ_max."""

    def build():
        from engine.course import plot

        chart = plot.curves(
            test.lrs,
            {"loss": test.losses},
            x_title="learning rate η (growing each step)",
            y_title="L(θ)",
            log_x=True,
            log_y=True,
            height=230,
            colors={"loss": "sgd"},
            title=f"Range test, batches of {batch_size}",
        )
        return chart + plot.rule(test.stable_limit, orient="x")

    return _same_arrays_chart((test,), ("range", int(batch_size)), build)


def weight_decay_charts(paths: WeightDecayPaths) -> tuple:
    """(θ₂ chart, θ₁ chart): each coordinate of both runs of :func:`l2_vs_decoupled`, step by step."""

    def build():
        from engine.course import plot

        runs = {"Adam + L2": paths.adam_l2, "AdamW": paths.adamw}
        t = np.arange(len(paths.adamw))
        charts = (
            plot.curves(
                None,
                drawn_curves(t, {f"{k}: θ₂": p[:, 1] for k, p in runs.items()}),
                x_title="step",
                y_title="θ₂ (no loss gradient)",
                height=220,
                colors={"Adam + L2: θ₂": "adam", "AdamW: θ₂": "adamw"},
                title="The weight the loss ignores",
            ),
            plot.curves(
                None,
                drawn_curves(t, {f"{k}: θ₁": p[:, 0] for k, p in runs.items()}),
                x_title="step",
                y_title="θ₁ (loss minimum at 2)",
                height=220,
                colors={"Adam + L2: θ₁": "adam", "AdamW: θ₁": "adamw"},
                title="The weight the loss wants at 2",
            ),
        )
        return tuple(plot.compact_chart(c, digits=4) for c in charts)

    return _same_arrays_chart((paths,), ("weight decay",), build)


# ----------------------------------------------------------------------------- clipping


def clip_by_global_norm(grads, max_norm: float):
    """Clip gradients (a list of arrays, one per parameter) by their global norm √(Σ g²) with
    ``nn.utils.clip_grad_norm_``. Returns (clipped list, norm before, norm after)."""
    params = []
    for g in grads:
        p = Parameter(np.zeros_like(np.asarray(g, dtype=np.float64)))
        p.grad = np.array(g, dtype=np.float64)
        params.append(p)
    before = float(clip_grad_norm_(params, max_norm).data)
    clipped = [p.grad.numpy() for p in params]
    after = math.sqrt(sum(float(np.sum(g * g)) for g in clipped))
    return clipped, before, after


# ----------------------------------------------------------------------------- momentum's (η, μ) phase diagram


def momentum_rate(lr_times_curvature, mu) -> np.ndarray:
    """The per-step rate max |z| of heavy-ball momentum along one eigen-direction of a quadratic:
    the step there is θ_{t+1} = (1 + μ − ηλ)θ_t − μθ_{t−1}, whose roots solve
    z² − (1 + μ − ηλ)z + μ = 0. Complex roots (the error rings) have |z| = √μ; real ones
    (1 + μ − ηλ ± √disc)/2. Below 1 exactly when 0 < ηλ < 2(1 + μ) and 0 ≤ μ < 1."""
    a = 1.0 + np.asarray(mu, dtype=np.float64) - np.asarray(lr_times_curvature, dtype=np.float64)
    disc = a * a - 4.0 * np.asarray(mu, dtype=np.float64)
    ringing = np.sqrt(np.abs(np.asarray(mu, dtype=np.float64)))
    return np.where(disc < 0, ringing, (np.abs(a) + np.sqrt(np.maximum(disc, 0.0))) / 2.0)


@dataclass
class PhaseDiagram:
    """The lesson's momentum rule at every (η, μ) of a grid on f(θ) = ½(θ₁² + κθ₂²), from θ₀ = (1, 1)."""

    kappa: float
    steps: int
    x: np.ndarray  # ηλ_max of each column (λ_max = κ)
    mu: np.ndarray  # μ of each row
    ratio: np.ndarray  # f(θ_T)/f(θ₀), [rows, columns] (inf where it overflowed)
    rate: np.ndarray  # the theory's per-step rate max over both directions of max |z|
    best: tuple  # (ηλ_max, μ) of the cell with the lowest ratio
    optimum: tuple  # the theory's best (η*λ_max, μ*) (Polyak), where both directions ring at √μ*

    @property
    def stable(self) -> np.ndarray:
        """The cells left of the line ηλ_max = 2(1 + μ): the theory's rate is below 1."""
        return self.x[None, :] < 2.0 * (1.0 + self.mu[:, None])

    @property
    def grew(self) -> np.ndarray:
        """The cells whose loss after T steps is above the start (or overflowed)."""
        return ~(self.ratio < 1.0)


PHASE_X = (np.arange(32) + 0.5) * 4.2 / 32  # ηλ_max from 0.07 to 4.13: the line runs from 2 to 4
PHASE_MU = np.linspace(0.0, 0.99, 30)


@functools.lru_cache(maxsize=32)  # remembered per setting and per lesson function (an edited cell is a new one)
def phase_diagram(grid, rule, kappa: float = 100.0, steps: int = 100) -> PhaseDiagram:
    """The lesson's ``grid`` function (every (η, μ) of the grid at once) with its momentum ``rule``
    on f(θ) = ½(θ₁² + κθ₂²), the curvatures 1 and κ = λ_max, for ``steps`` steps; beside it the
    theory's rate (:func:`momentum_rate`) and best setting."""
    if not (math.isfinite(kappa) and 1.0 <= kappa <= 1e4):
        raise ValueError(f"phase_diagram: κ must be in [1, 10000], got {kappa}")
    if not (isinstance(steps, (int, np.integer)) and 1 <= steps <= 1000):
        raise ValueError(f"phase_diagram: steps must be an integer in [1, 1000], got {steps!r}")
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        ratio = np.asarray(grid(rule, [1.0, kappa], PHASE_X / kappa, PHASE_MU, steps), dtype=np.float64)
    if ratio.shape != (len(PHASE_MU), len(PHASE_X)):
        raise ValueError(
            f"phase_diagram: the grid function returned shape {ratio.shape}, "
            f"expected (len(mus), len(lrs)) = {(len(PHASE_MU), len(PHASE_X))}"
        )
    ratio = np.where(np.isfinite(ratio), ratio, np.inf)
    xx, mm = np.meshgrid(PHASE_X, PHASE_MU)
    rate = np.maximum(momentum_rate(xx / kappa, mm), momentum_rate(xx, mm))
    i, j = np.unravel_index(int(np.argmin(ratio)), ratio.shape)
    root = math.sqrt(kappa)
    optimum = (kappa * (2.0 / (1.0 + root)) ** 2, ((root - 1.0) / (root + 1.0)) ** 2)
    return PhaseDiagram(
        float(kappa), int(steps), PHASE_X, PHASE_MU, ratio, rate, (float(PHASE_X[j]), float(PHASE_MU[i])), optimum
    )


def phase_chart(phase: PhaseDiagram):
    """The phase diagram: each cell coloured by log₁₀ f(θ_T)/f(θ₀) (blue fell, red grew, clipped to
    ±20), the theory's stability line ηλ_max = 2(1 + μ), and its best setting as a diamond."""

    def build():
        import altair as alt

        from engine.course import plot

        dx, dmu = float(phase.x[1] - phase.x[0]) / 2, float(phase.mu[1] - phase.mu[0]) / 2
        xx, mm = np.meshgrid(phase.x, phase.mu)
        with np.errstate(divide="ignore"):
            shade = np.clip(np.log10(np.maximum(phase.ratio, 1e-300)), -20.0, 20.0)
        # the cells' centres only: Vega computes their edges (transform_calculate), a third of the data to send
        cells = plot.data(eta=xx.ravel(), mu=mm.ravel(), shade=shade.ravel(), digits=4)
        x_scale = alt.Scale(domain=[0.0, 4.2], nice=False, zero=False)
        y_scale = alt.Scale(domain=[-dmu, 0.99 + dmu], nice=False, zero=False)
        heat = (
            alt.Chart(cells)
            .mark_rect()
            .transform_calculate(
                x0=f"datum.eta - {dx!r}",
                x1=f"datum.eta + {dx!r}",
                y0=f"datum.mu - {dmu!r}",
                y1=f"datum.mu + {dmu!r}",
            )
            .encode(
                alt.X("x0:Q", title="η·λ_max", scale=x_scale),
                alt.X2("x1"),
                alt.Y("y0:Q", title="momentum μ", scale=y_scale),
                alt.Y2("y1"),
                alt.Color(
                    "shade:Q",
                    title="log₁₀ f(θ_T)/f(θ₀)",
                    scale=alt.Scale(scheme="redblue", reverse=True, domainMid=0, domain=[-20, 20]),
                ),
                [
                    alt.Tooltip("eta:Q", title="η·λ_max", format=".3f"),
                    alt.Tooltip("mu:Q", title="μ", format=".3f"),
                    alt.Tooltip("shade:Q", title="log₁₀ f(θ_T)/f(θ₀)", format=".2f"),
                ],
            )
        )
        line = (
            alt.Chart(plot.data(x=np.array([2.0, 2.0 * 1.995]), y=np.array([0.0, 0.995])))
            .mark_line(color=plot.color("reference"), strokeWidth=2.5, strokeDash=[6, 3])
            .encode(alt.X("x:Q", scale=x_scale), alt.Y("y:Q", scale=y_scale))
        )
        best = (
            alt.Chart(
                plot.data(
                    x=np.array([phase.optimum[0]]), y=np.array([phase.optimum[1]]), label="theory's best (η*, μ*)"
                )
            )
            .mark_point(shape="diamond", size=120, filled=True, color=plot.color("target"), stroke="white")
            .encode(alt.X("x:Q", scale=x_scale), alt.Y("y:Q", scale=y_scale), alt.Tooltip("label:N"))
        )
        return alt.layer(
            heat,
            line,
            best,
            width="container",
            height=300,
            title=f"Momentum on ½(θ₁² + {phase.kappa:g}θ₂²) after {phase.steps} steps "
            "(dashed: ηλ_max = 2(1 + μ); ◆ the theory's best)",
        )

    return _same_arrays_chart((phase,), ("phase",), build)


# ----------------------------------------------------------------------------- batch size and learning rate

CHECKPOINTS = {
    # the linear scaling sweep the page opens on, by the page's minibatch_descent and sgd
    "optimizers_batch_scaling": checkpoints.FromNotebook(
        notebook="04_optimizers", function="default_batch_scaling", code=("minibatch_descent", "sgd")
    ),
    # full-batch GD's sharpness on a small network, by the page's loss_grad, sharpness and loop
    "optimizers_edge": checkpoints.FromNotebook(
        notebook="04_optimizers", function="default_edge", code=("loss_grad", "sharpness", "gd_with_sharpness")
    ),
}

# the linear scaling rule on the least-squares problem of sgd_noise: 4 epochs at each batch size B,
# η = η₁·B (scaled) or η = η₁ (fixed), 5 shuffles; one η₁ per slider step
SCALING = {"batch_sizes": (1, 2, 4, 8, 16, 32, 64, 128, 256, 512), "base_lrs": (0.001, 0.003, 0.01, 0.03)}
SCALING.update(epochs=4, seeds=5, n=512)


_RETRAINED: dict = {}  # the runs a page's buttons made, by the code that made them (the last 4)


def _by_code(name: str, code: tuple, build):
    """``build()`` once per process for this ``name`` and the code of the lesson functions ``code``
    (a second press of a page's button, or the tests' second run, trains nothing new)."""
    from engine.course.plot import remember

    key = (name, checkpoints.code_fingerprint(*code))
    return _RETRAINED[key] if key in _RETRAINED else remember(_RETRAINED, key, build(), 4)


def batch_scaling(loop, rule, on_run=None) -> dict:
    """:func:`_batch_scaling`, remembered per process by the code of ``loop`` and ``rule``."""
    return _by_code("batch-scaling", (loop, rule), lambda: _batch_scaling(loop, rule, on_run))


def _batch_scaling(loop, rule, on_run=None) -> dict:
    """What the checkpoint ``optimizers_batch_scaling`` holds: the lesson's mini-batch ``loop``
    with its ``rule`` on L(θ) = ‖Xθ − y‖²/2n (:func:`sgd_noise`'s data), for :data:`SCALING`'s
    epochs at every batch size B (so n·epochs/B steps, batches by :func:`epoch_batches` from
    ``default_rng(100 + seed)``), once with η = η₁·B and once with η = η₁, for every base rate η₁:
    the excess loss L(θ_T) − L(θ̂) at the end, ``{"batch_sizes": (K,), "base_lrs": (R,),
    "scaled": (R, K, S), "fixed": (R, K, S), "start": L(0) − L(θ̂), "lambda_max": λ_max(XᵀX/n)}``.
    ``on_run(i)`` is called after each of the R base rates."""
    c = SCALING
    X, y = _least_squares_data(c["n"], 0)
    best = np.linalg.lstsq(X, y, rcond=None)[0]

    def excess(theta):
        return float(0.5 * np.mean((X @ theta - y) ** 2) - 0.5 * np.mean((X @ best - y) ** 2))

    sizes, bases = np.array(c["batch_sizes"]), np.array(c["base_lrs"], dtype=np.float64)
    scaled = np.zeros((len(bases), len(sizes), c["seeds"]))
    fixed = np.zeros_like(scaled)
    for r, base in enumerate(bases):
        for k, size in enumerate(sizes):
            steps = c["epochs"] * c["n"] // int(size)
            for s in range(c["seeds"]):
                batches = epoch_batches(c["n"], int(size), steps, np.random.default_rng(100 + s))
                with np.errstate(over="ignore", invalid="ignore"):
                    scaled[r, k, s] = excess(np.asarray(loop(rule, X, y, batches, [base * size] * steps))[-1])
                    fixed[r, k, s] = excess(np.asarray(loop(rule, X, y, batches, [base] * steps))[-1])
        if on_run is not None:
            on_run(r)
    return {
        "batch_sizes": sizes.astype(np.float64),
        "base_lrs": bases,
        "scaled": scaled,
        "fixed": fixed,
        "start": np.array([excess(np.zeros(X.shape[1]))]),
        "lambda_max": np.array([float(np.linalg.eigvalsh(X.T @ X / len(X)).max())]),
    }


def shipped_batch_scaling(*code) -> tuple[dict | None, str]:
    """``(state, "")``, the shipped :func:`batch_scaling`, when ``code`` (the page's
    ``minibatch_descent`` and ``sgd``) is the code that made it, else ``(None, reason)``."""
    state, reason = checkpoints.load_if_fits(_batch_scaling_checkpoint, *code)
    if state is None:
        return None, reason
    return {k: np.asarray(v, dtype=np.float64) for k, v in state.items()}, ""


def scaling_chart(state: dict, base_lr: float):
    """The excess loss after the epochs against B (both axes log) at base rate η₁ = ``base_lr``: the
    mean of the seeds with η = η₁·B and with η = η₁, a dashed rule where η₁·B = 2/λ_max. Losses
    above the start's (a diverged run) are cut off the view."""
    import altair as alt

    from engine.course import plot

    r = int(np.argmin(np.abs(state["base_lrs"] - base_lr)))
    sizes, top = state["batch_sizes"], float(state["start"][0]) * 10
    scaled, fixed = (np.exp(np.log(np.maximum(state[k][r], 1e-300)).mean(axis=1)) for k in ("scaled", "fixed"))
    lines = {"η = η₁·B (linear scaling)": scaled, "η = η₁ (fixed)": fixed}
    limit = 2.0 / float(state["lambda_max"][0]) / base_lr
    chart = plot.curves(
        sizes,
        lines,
        x_title="batch size B",
        y_title="L(θ) − L(θ̂) after 4 epochs",
        log_x=True,
        log_y=True,
        y_domain=(1e-4, top),
        colors={"η = η₁·B (linear scaling)": "model", "η = η₁ (fixed)": "reference"},
        height=220,
        title=f"η₁ = {base_lr:g}: the final loss against the batch size",
    )
    rule = (
        alt.Chart(plot.data(v=[limit], label=["η₁·B = 2/λ_max"]))
        .mark_rule(color=plot.color("error"), strokeDash=[4, 3])
        .encode(alt.X("v:Q"), alt.Tooltip("label:N", title=""))
    )
    return alt.layer(chart, rule) if limit <= sizes[-1] else chart


# ----------------------------------------------------------------------------- the edge of stability

# full-batch GD on a small tanh network (2 → 32 → 32 → 1, squared error) on the standardised moons
EDGE = {"width": 32, "lrs": (0.2, 0.3), "seeds": 5, "steps": 1000, "every": 50}


def edge_data() -> tuple[np.ndarray, np.ndarray]:
    """The edge-of-stability section's data: the 200 two-moons points of notebook 01 (noise 0.15),
    each coordinate standardised, and their labels 0 and 1 as regression targets."""
    from engine.data import make_moons

    X, y = make_moons(200, noise=0.15, seed=0)
    X = np.asarray(X, dtype=np.float64)
    return (X - X.mean(axis=0)) / X.std(axis=0), y.astype(np.float64)


def edge_start(width: int, seed: int) -> np.ndarray:
    """The initial weights of the network 2 → n → n → 1 as one flat float64 vector, layer by layer
    (W₁ stored (out, in), b₁, W₂, b₂, W₃, b₃), drawn as ``nn.Linear`` draws them from ``seed``."""
    from engine import nn
    from engine.random import fork_rng

    with fork_rng(seed):
        layers = [nn.Linear(2, width), nn.Linear(width, width), nn.Linear(width, 1)]
    return np.concatenate([p.data.astype(np.float64).ravel() for layer in layers for p in (layer.weight, layer.bias)])


def edge_runs(loss_grad, gd_with_sharpness, sharpness=None, on_run=None) -> dict:
    """:func:`_edge_runs`, remembered per process by the code of ``loss_grad``, ``gd_with_sharpness``
    and ``sharpness`` (the function the loop calls, passed for the key alone)."""
    code = tuple(f for f in (loss_grad, gd_with_sharpness, sharpness) if f is not None)
    return _by_code("edge", code, lambda: _edge_runs(loss_grad, gd_with_sharpness, on_run))


def _edge_runs(loss_grad, gd_with_sharpness, on_run=None) -> dict:
    """What the checkpoint ``optimizers_edge`` holds: the lesson's ``gd_with_sharpness`` on the
    lesson's ``loss_grad`` (bound to :func:`edge_data`) from :func:`edge_start` of seeds 0 … 4,
    for :data:`EDGE`'s steps at each of its learning rates: ``{"lrs": (R,), "steps": (M,),
    "sharpness": (R, S, M), "loss": (R, S, M)}``, measured every ``EDGE["every"]`` steps.
    ``on_run(i)`` is called after each of the R × S runs."""
    e = EDGE
    X, y = edge_data()
    sharp, loss = [], []
    for r, lr in enumerate(e["lrs"]):
        rows = []
        for s in range(e["seeds"]):
            with np.errstate(over="ignore", invalid="ignore"):
                rows.append(
                    gd_with_sharpness(
                        lambda theta: loss_grad(theta, X, y, e["width"]),
                        edge_start(e["width"], s),
                        lr,
                        e["steps"],
                        every=e["every"],
                    )
                )
            if on_run is not None:
                on_run(r * e["seeds"] + s)
        sharp.append([row[1] for row in rows])
        loss.append([row[2] for row in rows])
    return {
        "lrs": np.array(e["lrs"], dtype=np.float64),
        "steps": np.asarray(rows[0][0], dtype=np.float64),
        "sharpness": np.array(sharp, dtype=np.float64),
        "loss": np.array(loss, dtype=np.float64),
    }


def shipped_edge(*code) -> tuple[dict | None, str]:
    """``(runs, "")``, the shipped :func:`edge_runs`, when ``code`` (the page's ``loss_grad``,
    ``sharpness`` and ``gd_with_sharpness``) is the code that made them, else ``(None, reason)``."""
    state, reason = checkpoints.load_if_fits(_edge_checkpoint, *code)
    if state is None:
        return None, reason
    return {k: np.asarray(v, dtype=np.float64) for k, v in state.items()}, ""


def edge_chart(runs: dict, lr: float):
    """The sharpness λ_max(∇²L) of every seed's run at learning rate ``lr`` against the step, with
    2/η as a dashed line; and the loss of the same runs on a log axis, below it. The same chart
    object again for the same runs and rate (do not change it)."""
    arrays = (runs["sharpness"], runs["loss"], runs["steps"])
    return _same_arrays_chart(arrays, ("edge", float(lr)), lambda: _edge_chart(runs, lr))


def _edge_chart(runs: dict, lr: float):
    import altair as alt

    from engine.course import plot

    r = int(np.argmin(np.abs(runs["lrs"] - lr)))
    steps, seeds = runs["steps"], runs["sharpness"].shape[1]
    names = [f"seed {s}" for s in range(seeds)]
    colors = dict(zip(names, plot.SERIES_COLORS))
    # 2/η is a dashed series of the same chart (two points), not a layer: a layer costs the page
    # another copy and conversion of the chart at every change of η
    limit = "2/η"
    sharp = plot.curves(
        steps,
        {**dict(zip(names, runs["sharpness"][r])), limit: (steps[[0, -1]], np.full(2, 2.0 / lr))},
        colors={**colors, limit: "reference"},
        dashed=[limit],
        x_title="step t",
        y_title="sharpness λ_max",
        height=200,
        title=f"η = {lr:g}: the sharpness climbs or falls to 2/η = {2 / lr:.3g} and stays there",
    )
    loss = plot.curves(
        steps,
        dict(zip(names, runs["loss"][r])),
        colors=colors,
        x_title="step t",
        y_title="L(θ)",
        log_y=True,
        height=140,
        title="the loss, which keeps falling, not monotonically",
    )
    return alt.vconcat(sharp, loss)
