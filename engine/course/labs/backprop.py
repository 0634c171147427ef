"""Computations behind notebook 03 (backprop): the playground's data and runs, the gradient check.

The lesson itself (the multiplication op, the topological sort and the backward walk, the central
difference, the playground's MLP and its training loop) is code in the notebook; where a function
here needs one of them, the notebook passes it in.

- :func:`make_playground_data`, :func:`split_drawn`: the playground's 2-D data sets (presets or a
  drawing), split and standardised on the training part; :func:`playground_optimizer`, its optimizer menu;
  :func:`playground_run`, a trained (or untrained) model's history and its class probabilities
  over a grid for the decision boundary; :func:`regions_map`, its map, remembered per run.
- :func:`default_playground`: the model and the overfit check the page opens on, read from the
  checkpoint that the notebook's ``train_default_playground`` made (:data:`CHECKPOINTS`).
- :func:`mode_problem`, :func:`forward_vs_reverse`: the data of f(x) = v·tanh(Wx), and the page's
  forward mode (n Jacobian–vector products) and reverse mode (one vector–Jacobian product) run
  on it beside the engine's ``backward()``.
- :func:`finite_difference_errors`: |difference quotient − f'(x)| as the step h sweeps many
  decades, in float32 and float64, for the page's own difference quotient;
  :func:`step_rule_check`, the page's rule for the best step against that measured V.
- :func:`saved_for_backward`: one forward pass of the page's MLP on random points, with what the
  page's counting function finds kept for the backward pass.
- :func:`checkpointing_view`: plain backprop against the page's gradient checkpointing on a deep
  chain of its own, with the floats each holds at once.
- :func:`check_op`: an op written on the page (or one with a bug put in) graded by the page's
  gradient check, input by input, and by ``engine.gradcheck``; :func:`op_error_maps`, where in
  each input its gradient is wrong.
- :func:`stepper_graphs`, :func:`step_rule_view`, :func:`mode_view`: what a control of the page
  shows, remembered per setting and per lesson function (an edited cell is a new function, so it
  computes again), so that moving one slider does not redo the work the others' values fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import engine.functional as F
from engine import GradcheckError, Tensor, gradcheck, nn, no_grad, optim
from engine import data as toy
from engine.course import checkpoints
from engine.course.checkpoints import backprop_playground as playground_checkpoint  # noqa: F401  (the page loads it)

from ._checks import is_default

_VIEWS: dict = {}  # what -> {(the lesson functions, the settings): what the page shows for them}


def _remembered(key, make, size: int = 32):
    """``make()``, kept under ``key`` in the cache of its kind ``key[0]`` (the oldest entries of that
    kind forgotten beyond ``size``; ``marimo run`` serves every session from one process, so another
    session may evict meanwhile)."""
    cache = _VIEWS.setdefault(key[0], {})
    hit = cache.get(key)
    if hit is None:
        hit = make()
        while key not in cache and len(cache) >= size:
            try:
                cache.pop(next(iter(cache)), None)
            except (StopIteration, RuntimeError):
                break
        cache[key] = hit
    return hit


# ----------------------------------------------------------------------------- MLP playground

DATASETS = ("moons", "circles", "spirals", "blobs")
ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid, "silu": nn.SiLU}
OPTIMIZERS = ("sgd", "momentum", "adam")


def make_playground_data(name: str = "moons", n: int = 200, noise: float = 0.1, seed: int = 0):
    """A 2-D toy set from :mod:`engine.data`, split 75/25 into train and validation and standardised
    with the training part's statistics (:func:`standardise_on_train`). Returns (Xtr, ytr, Xva, yva)."""
    if name == "moons":
        X, y = toy.make_moons(n, noise=noise, seed=seed)
    elif name == "circles":
        X, y = toy.make_circles(n, noise=noise, factor=0.5, seed=seed)
    elif name == "spirals":
        X, y = toy.make_spirals(n, n_classes=2, noise=noise, seed=seed)
    elif name == "blobs":
        X, y = toy.make_blobs(n, centers=3, noise=max(noise, 0.05) * 10, seed=seed)
    else:
        raise ValueError(f"make_playground_data: data set must be one of {DATASETS}, got {name!r}")
    cut = int(0.75 * len(X))
    X = standardise_on_train(np.asarray(X, dtype=np.float64), cut)
    return X[:cut], np.asarray(y[:cut]), X[cut:], np.asarray(y[cut:])


def playground_preset(name: str, noise: float):
    """The playground's preset ``name`` at ``noise`` (:func:`make_playground_data` of
    :data:`PLAYGROUND_POINTS` points, seed 0), made once and kept, its arrays read-only since every
    session shares it: a page open, or a return to a data set seen before, re-uses it and the maps
    drawn of it (:func:`regions_map` remembers a map by its arrays)."""

    def make():
        split = make_playground_data(name, n=PLAYGROUND_POINTS, noise=noise, seed=0)
        for a in split:
            a.flags.writeable = False
        return split

    return _remembered(("preset", name, float(noise)), make)


def standardise_on_train(X, cut: int):
    """``X`` shifted and scaled by the mean and standard deviation of its first ``cut`` rows, the
    training part: the validation points are scaled as new points would be, unseen by the scaler.
    A feature with no spread in the training part is only shifted."""
    mean, std = X[:cut].mean(0), X[:cut].std(0)
    return (X - mean) / np.where(std > 0, std, 1.0)


CANVAS_BOUNDS = ((-3.5, 3.5), (-3.5, 3.5))  # the drawing canvas spans the standardised presets
CANVAS_CLASSES = 3  # blobs has three


def split_drawn(X, y, seed: int = 0):
    """A drawn labelled set as the playground's (Xtr, ytr, Xva, yva): float64, shuffled with
    ``default_rng(seed)`` (a drawing comes class by class), 75/25 with at least one point on each
    side, standardised like the presets with the training part's statistics."""
    X, y = np.asarray(X, dtype=np.float64).reshape(-1, 2), np.asarray(y, dtype=np.int64).reshape(-1)
    if len(X) < 2 or len(X) != len(y):
        raise ValueError(f"split_drawn: need at least 2 labelled points, got {len(X)} points and {len(y)} labels")
    order = np.random.default_rng(seed).permutation(len(X))
    X, y = X[order], y[order]
    cut = min(max(1, int(0.75 * len(X))), len(X) - 1)
    X = standardise_on_train(X, cut)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def playground_optimizer(name: str, params, lr: float):
    """The playground's optimizer menu: plain SGD, SGD with momentum 0.9, or Adam."""
    if name == "sgd":
        return optim.SGD(params, lr=lr)
    if name == "momentum":
        return optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return optim.Adam(params, lr=lr)
    raise ValueError(f"playground_optimizer: optimizer must be one of {OPTIMIZERS}, got {name!r}")


@dataclass
class PlaygroundRun:
    history: dict = field(default_factory=dict)  # train_loss, val_loss, train_acc, val_acc per epoch
    grid_x: np.ndarray = None
    grid_y: np.ndarray = None
    grid_probs: np.ndarray = None  # [G, G, C]
    diverged: bool = False
    model: object = None
    initial_loss: float = float("nan")  # training cross-entropy before any step: ≈ ln K at a sane init


def class_grid(model, X, size: int = 60, margin: float = 0.5):
    """Class probabilities of ``model`` over a size×size grid covering X (for decision boundaries)."""
    lo, hi = X.min(0) - margin, X.max(0) + margin
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], size), np.linspace(lo[1], hi[1], size))
    pts = np.stack([gx.ravel(), gy.ravel()], 1)
    with no_grad():
        probs = F.softmax(model(Tensor(pts)), dim=-1).data
    return gx, gy, probs.reshape(size, size, -1)


def playground_run(
    model, split, history: dict | None = None, initial_loss: float = float("nan"), grid_size: int = 60
) -> PlaygroundRun:
    """What the page draws of ``model`` (the notebook's MLP) on ``split`` = (Xtr, ytr, Xva, yva):
    its training ``history`` (none for an untrained model), flagged ``diverged`` when the last
    training loss is not finite, and its class probabilities over a grid unless it diverged."""
    history = {k: list(v) for k, v in (history or {}).items()}
    losses = history.get("train_loss", [])
    run = PlaygroundRun(
        history=history,
        model=model,
        initial_loss=float(initial_loss),
        diverged=bool(losses) and not math.isfinite(losses[-1]),
    )
    if not run.diverged:
        run.grid_x, run.grid_y, run.grid_probs = class_grid(model, np.concatenate([split[0], split[2]]), grid_size)
    return run


@dataclass
class InitialLoss:
    """Why an untrained network's cross-entropy is not ln K: expanded around equal logits, with
    z̃ = z − mean_j z_j a point's centred logits,
    L ≈ ln K − mean over points of z̃_y (the true class's share) + ½ mean over points of mean_j z̃_j²."""

    loss: float  # the cross-entropy measured
    classes: int
    true_class: float  # mean of z̃_y: positive when the random logits happen to favour the right class
    spread: float  # ½ mean of mean_j z̃_j²: always ≥ 0, zero only when every point's logits are equal

    @property
    def approximation(self) -> float:
        return math.log(self.classes) - self.true_class + self.spread


def initial_loss(model, X, y, classes: int) -> InitialLoss:
    """The cross-entropy of ``model`` on (X, y) beside its second-order expansion around equal logits."""
    with no_grad():
        z = model(Tensor(X)).data
    centred = z - z.mean(axis=1, keepdims=True)
    loss = float(F.cross_entropy(Tensor(z), y).data)
    return InitialLoss(
        loss,
        int(classes),
        float(np.mean(centred[np.arange(len(y)), y])),
        float(0.5 * np.mean(np.mean(centred**2, axis=1))),
    )


def overfitting_note(history: dict) -> str:
    """One line on the validation accuracy of a training ``history``: where it peaked and, when it
    ends more than a point below its peak, that the network overfits after that epoch (the
    training points are learnt at the expense of new ones) and that early stopping would keep the
    peak's network."""
    val = np.asarray(history["val_acc"], dtype=np.float64)
    peak = int(np.argmax(val))
    line = f"Validation accuracy peaked at **{100 * val[peak]:.1f} %** after epoch {peak + 1}"
    if val[peak] - val[-1] > 0.01:
        return (
            line + f" and ends {100 * (val[peak] - val[-1]):.1f} points lower: after that epoch the network "
            "fits its training points at the expense of new ones (overfitting). Stopping at the best "
            "validation epoch (early stopping) would keep the better network."
        )
    return line + ", and it ends within a point of that: no sign of overfitting."


_MAPS: dict = {}  # (ids of a run's grid probabilities and of its data, title, height) -> (those arrays, the map)


def regions_map(run: PlaygroundRun, split, title: str, height: int = 300):
    """The predicted class regions of ``run``'s grid (:func:`regions_chart`) with every point of
    ``split`` = (Xtr, ytr, Xva, yva), remembered for the last few runs: the optimizer, η and the
    epochs do not change the map the page shows until **train** is pressed, so moving them shows
    the same map without building it again."""
    arrays = (run.grid_probs, *split)
    key = tuple(id(a) for a in arrays) + (title, height)
    hit = _MAPS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], arrays)):
        return hit[1]
    chart = regions_chart(
        run.grid_x,
        run.grid_y,
        run.grid_probs,
        np.concatenate([split[0], split[2]]),
        np.concatenate([split[1], split[3]]),
        title=title,
        height=height,
    )
    from engine.course import plot

    return plot.remember(_MAPS, key, (arrays, chart), size=8)[1]


def regions_chart(xx, yy, probs, X, y, *, title=None, height: int = 300):
    """``plot.class_regions`` drawn as one image: each grid cell the class colours mixed by
    probability, paler where the model is unsure (the same colours), as a PNG of 4 × 4 pixels a
    cell stretched over the grid's box by Vega-Lite's image mark, with the data on top. One image
    mark where one rect per cell made the browser redraw 900 marks at every change of the data,
    the noise or the network (and send them: about 50 KB); the cells' tooltips are gone."""
    import base64

    import altair as alt
    from matplotlib.colors import to_rgb

    from engine.course import plot

    probs = np.asarray(probs, dtype=float)  # [rows (x₂ rising), columns (x₁ rising), K]
    k = probs.shape[-1]
    cols = np.array([to_rgb(plot.CLASS_COLORS[j % len(plot.CLASS_COLORS)]) for j in range(k)])
    conf = (probs.max(-1, keepdims=True) - 1 / k) / (1 - 1 / k)
    rgb = np.clip(1 - (1 - probs @ cols) * (0.15 + 0.55 * conf), 0, 1)
    pixels = np.round(255 * rgb[::-1]).astype(np.uint8).repeat(4, axis=0).repeat(4, axis=1)  # image row 0: top
    url = "data:image/png;base64," + base64.b64encode(plot.png(pixels)).decode("ascii")
    xs, ys = np.asarray(xx, dtype=float)[0], np.asarray(yy, dtype=float)[:, 0]
    dx, dy = (xs[-1] - xs[0]) / max(len(xs) - 1, 1) / 2, (ys[-1] - ys[0]) / max(len(ys) - 1, 1) / 2
    x_scale = alt.Scale(domain=[float(xs[0]), float(xs[-1])], nice=False, zero=False)
    y_scale = alt.Scale(domain=[float(ys[0]), float(ys[-1])], nice=False, zero=False)
    # each cell centred on its grid point, as the rects were: the box reaches half a cell past the extremes
    image = (
        alt.Chart(plot.data(x=[xs[0] - dx], x2=[xs[-1] + dx], y=[ys[0] - dy], y2=[ys[-1] + dy]))
        .mark_image(url=url, aspect=False, clip=True)
        .encode(
            alt.X("x:Q", title="x₁", scale=x_scale), alt.X2("x2"), alt.Y("y:Q", title="x₂", scale=y_scale), alt.Y2("y2")
        )
    )
    X, y = np.asarray(X, dtype=float), np.asarray(y).astype(int)
    names = [f"class {c}" for c in range(k)]
    dots = (
        alt.Chart(plot.data(x=X[:, 0], y=X[:, 1], label=np.asarray(names, dtype=object)[y], digits=4))
        .mark_circle(size=36, opacity=1, stroke="white", strokeWidth=1, clip=True)
        .encode(
            alt.X("x:Q", title="x₁", scale=x_scale),
            alt.Y("y:Q", title="x₂", scale=y_scale),
            plot.series_colors(
                names, field="label", palette=[plot.CLASS_COLORS[c % len(plot.CLASS_COLORS)] for c in range(k)]
            ),
        )
    )
    return alt.layer(image, dots, width="container", height=height, title=title or alt.Undefined)


# The playground's opening settings: the notebook's controls start here, and the page shows the
# model trained with them as soon as it opens (the train button retrains with the learner's).
PLAYGROUND_DEFAULTS = dict(
    data="moons", noise=0.15, width=16, depth=2, activation="tanh", optimizer="adam", lr=0.03, epochs=60
)
PLAYGROUND_POINTS = 240  # points in a preset data set
PLAYGROUND_GRID = 30  # the decision-boundary grid: 30×30 cells are what the browser redraws at each change
OVERFIT_STEPS = 300


def is_default_playground(settings: dict) -> bool:
    """Whether ``settings`` (any of :data:`PLAYGROUND_DEFAULTS`' keys) all hold their default value."""
    return is_default("is_default_playground", settings, PLAYGROUND_DEFAULTS)


@dataclass
class DefaultPlayground:
    """What the playground shows on open: its default data, the model trained on it, and the
    overfit-one-batch losses of the default network."""

    split: tuple  # (Xtr, ytr, Xva, yva)
    run: PlaygroundRun
    overfit_losses: np.ndarray


def overfit_width(width: int) -> int:
    """The overfit check's width: the playground's, at least 8 (a narrower net may not memorise 16 points)."""
    return max(int(width), 8)


# The notebook's train_default_playground trains the default model and its overfit check from a
# fixed seed with its lesson cells; `make checkpoints` runs it, and the page loads the result with
# checkpoints.load_if_fits(playground_checkpoint, *those cells).
CHECKPOINTS = {
    "backprop_playground": checkpoints.FromNotebook(
        notebook="03_backprop",
        function="train_default_playground",
        code=("mlp", "train_step", "evaluate", "train_playground", "overfit_one_batch", "train_default_playground"),
    )
}


def default_playground(state: dict) -> DefaultPlayground:
    """The playground's default run and overfit check from ``state``, the checkpoint
    ``backprop_playground`` as :func:`checkpoints.load_if_fits` gave it, on the default data."""
    d = PLAYGROUND_DEFAULTS
    split = make_playground_data(d["data"], n=PLAYGROUND_POINTS, noise=d["noise"], seed=0)
    run = PlaygroundRun(
        history={k: v.tolist() for k, v in state["history"].items()},
        grid_x=state["grid_x"],
        grid_y=state["grid_y"],
        grid_probs=state["grid_probs"],
        initial_loss=float(state["initial_loss"]),
    )
    return DefaultPlayground(split, run, state["overfit_losses"])


def load_default_playground(*code) -> tuple:
    """(:func:`default_playground` of the checkpoint, or None; the reason it was not loaded, or
    None): ``checkpoints.load_if_fits(playground_checkpoint, *code)``, checked and loaded once for
    each text of the page's lesson ``code`` and kept for every later page open (the fingerprint
    parses every lesson cell's source, and the archive is decoded), its arrays read-only since
    every session shares it. Code whose source cannot be read is checked every time."""
    import inspect

    def load():
        state, problem = checkpoints.load_if_fits(playground_checkpoint, *code)
        if state is None:
            return None, problem
        shown = default_playground(state)
        for a in (shown.run.grid_x, shown.run.grid_y, shown.run.grid_probs, shown.overfit_losses, *shown.split):
            a.flags.writeable = False
        return shown, problem

    try:
        key = ("default playground", tuple(inspect.getsource(c) for c in code))
    except (OSError, TypeError):
        return load()
    return _remembered(key, load, size=8)


# ----------------------------------------------------------------------------- gradient check


def _probe(t):
    """The function the gradient check probes: f(x) = sin(x)·eˣ / (1 + x²), smooth, no special points."""
    return t.sin() * t.exp() / (t * t + 1.0)


def probe_derivative_exact(x: float) -> float:
    """f'(x) of :func:`_probe` by the quotient and product rules, in float64 (the reference)."""
    u, v = math.sin(x) * math.exp(x), 1 + x * x
    du = (math.cos(x) + math.sin(x)) * math.exp(x)
    return (du * v - u * 2 * x) / (v * v)


def probe_value_and_third_derivative(x: float) -> tuple[float, float]:
    """f(x) and f‴(x) of :func:`_probe`, exactly in float64: with u = sin(x)·eˣ and v = 1 + x²,
    u = f·v differentiated three times (Leibniz, v‴ = 0) gives f′, f″ and f‴ in turn."""
    e, s, c = math.exp(x), math.sin(x), math.cos(x)
    u1, u2, u3 = e * (s + c), 2 * e * c, 2 * e * (c - s)
    v, v1, v2 = 1 + x * x, 2 * x, 2.0
    f = s * e / v
    f1 = (u1 - f * v1) / v
    f2 = (u2 - 2 * f1 * v1 - f * v2) / v
    return f, (u3 - 3 * f2 * v1 - 3 * f1 * v2) / v


@dataclass
class FiniteDifferenceErrors:
    """|central difference − f'(x)| over the steps ``h``, and autograd's own error, per dtype."""

    h: np.ndarray
    float32: np.ndarray
    float64: np.ndarray
    autograd_float32: float
    autograd_float64: float

    def error(self, dtype: str) -> np.ndarray:
        return getattr(self, _dtype_name(dtype))

    def autograd_error(self, dtype: str) -> float:
        return getattr(self, f"autograd_{_dtype_name(dtype)}")


def _dtype_name(dtype: str) -> str:
    if dtype not in ("float32", "float64"):
        raise ValueError(f"finite differences: dtype must be 'float32' or 'float64', got {dtype!r}")
    return dtype


FD_STEPS = np.logspace(-12, 0, 61)  # the steps h the page's V is drawn at, five a decade


def finite_difference_errors(difference, x0: float = 0.7, hs=None) -> FiniteDifferenceErrors:
    """For each step h: |difference(f, x, h) − f'(x)| in float32 and in float64, and the autograd
    error |autograd − f'(x)| in each dtype. ``difference`` is the page's difference quotient (the
    central difference (f(x+h) − f(x−h))/2h); f, x and h are evaluated in the dtype itself (the
    engine keeps float32 in float32), so round-off shows.

    Theory: error ≈ |f'''|h²/6 (truncation) + ε|f|/h (round-off), smallest at
    h* = (3ε|f|/|f'''|)^(1/3) (ε ≈ 1.2e−7 in float32, 2.2e−16 in float64; :func:`step_rule_check`).
    """
    hs = np.logspace(-12, 0, 49) if hs is None else np.asarray(hs, dtype=np.float64)
    exact = probe_derivative_exact(x0)
    out = {}
    for dtype in ("float32", "float64"):
        x = np.array(x0, dtype=dtype)
        errs = []
        with np.errstate(all="ignore"):
            for h in hs:
                est = difference(lambda a: _probe(Tensor(a)).data, x, np.array(h, dtype=dtype))
                errs.append(abs(float(est) - exact))
        t = Tensor(x, requires_grad=True)
        _probe(t).backward()
        out[dtype] = np.array(errs)
        out[f"autograd_{dtype}"] = abs(float(t.grad) - exact)
    return FiniteDifferenceErrors(hs, **out)


def best_step(errors: FiniteDifferenceErrors, dtype: str):
    """(h, error) at the bottom of the V for ``dtype``."""
    e = np.where(np.isfinite(errors.error(dtype)), errors.error(dtype), np.inf)
    i = int(np.argmin(e))
    return float(errors.h[i]), float(e[i])


@dataclass
class StepRule:
    """The rule's step h* for one dtype against the measured V: the error at h* and the V's lowest
    measured point. ``h`` is NaN where f(x) = 0 or f‴(x) = 0 (one of the two terms vanishes: the
    rule has nothing to balance)."""

    dtype: str
    h: float
    error_at_h: float
    best_h: float
    best_error: float

    @property
    def decades_from_best(self) -> float:
        """|log₁₀ h* − log₁₀ (the lowest measured point's h)|."""
        return abs(math.log10(self.h / self.best_h))

    def describe(self) -> str:
        """The page's line for this dtype."""
        if self.h != self.h:
            return f"{self.dtype}: one of the two terms vanishes at this x, so there is no h* to find"
        return (
            f"{self.dtype}: h* = **{self.h:.1e}**, error there **{self.error_at_h:.1e}**; the lowest dot: "
            f"{self.best_error:.1e} at h ≈ {self.best_h:.0e}, {self.decades_from_best:.1f} decades away"
        )


def step_rule_check(difference, rule, errors: FiniteDifferenceErrors, x0: float) -> dict:
    """{dtype: :class:`StepRule`} at ``x0``: ``rule(f, f‴, ε)`` is the page's formula for h*, fed
    the probe's exact f and f‴ and the dtype's ε; ``errors`` is the V the page draws (measured
    with ``difference``), whose lowest point h* is compared with."""
    f, f3 = probe_value_and_third_derivative(x0)
    out = {}
    for dtype in ("float32", "float64"):
        h = float(rule(f, f3, float(np.finfo(dtype).eps))) if f != 0 and f3 != 0 else float("nan")
        at_h = finite_difference_errors(difference, x0, hs=[h]).error(dtype)[0] if h == h else float("nan")
        out[dtype] = StepRule(dtype, h, float(at_h), *best_step(errors, dtype))
    return out


# ----------------------------------------------------------------------------- forward vs reverse mode


MODE_INPUTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)  # the sizes n the notebook offers and charts


@dataclass
class ModeCost:
    """The gradient of f(x) = v · tanh(W x) (x ∈ ℝⁿ, W stored (hidden, n)) by the page's forward
    mode and reverse mode, with the multiply-adds each counted, and the engine's ``backward()``."""

    n: int
    hidden: int
    forward_madds: int  # one plain evaluation of f (the page's closed form)
    jvp_passes: int  # forward mode: one Jacobian–vector product per input direction
    jvp_madds: int
    vjp_passes: int  # reverse mode: one forward pass, then one backward pass
    vjp_madds: int
    grad_forward_mode: np.ndarray
    grad_reverse_mode: np.ndarray
    grad_autograd: np.ndarray  # engine's backward(), the reference

    @property
    def forward_mode_in_forwards(self) -> float:
        return self.jvp_madds / self.forward_madds

    @property
    def reverse_mode_in_forwards(self) -> float:
        return self.vjp_madds / self.forward_madds


def mode_problem(n: int = 100, hidden: int = 64, seed: int = 0):
    """(W, v, x) of f(x) = v · tanh(W x): W (hidden, n) scaled by 1/√n, v and x standard normal."""
    if not (isinstance(n, (int, np.integer)) and 1 <= n <= 5000):
        raise ValueError(f"mode_problem: n must be an integer in [1, 5000], got {n!r}")
    if not (isinstance(hidden, (int, np.integer)) and 1 <= hidden <= 1024):
        raise ValueError(f"mode_problem: hidden must be an integer in [1, 1024], got {hidden!r}")
    rng = np.random.default_rng(seed)
    return rng.standard_normal((hidden, n)) / math.sqrt(n), rng.standard_normal(hidden), rng.standard_normal(n)


def forward_vs_reverse(
    forward_mode, reverse_mode, mode_costs, n: int = 100, hidden: int = 64, seed: int = 0
) -> ModeCost:
    """The page's ``forward_mode`` and ``reverse_mode`` (each ``(W, v, x) -> (gradient, multiply-adds)``)
    on :func:`mode_problem`, beside the engine's ``backward()``; a plain forward pass costs what
    the page's ``mode_costs(n, hidden)`` says."""
    W, v, x = mode_problem(n, hidden, seed)
    grad_fwd, jvp_madds = forward_mode(W, v, x)
    grad_rev, vjp_madds = reverse_mode(W, v, x)
    xt = Tensor(x.copy(), requires_grad=True)
    (Tensor(v) * (Tensor(W) @ xt).tanh()).sum().backward()
    return ModeCost(
        int(n),
        int(hidden),
        int(mode_costs(n, hidden)[0]),
        int(n),
        int(jvp_madds),
        2,
        int(vjp_madds),
        np.asarray(grad_fwd),
        np.asarray(grad_rev),
        xt.grad.numpy().copy(),
    )


# ----------------------------------------------------------------------------- what backward keeps


@dataclass
class SavedForBackward:
    """What one forward pass of the playground's MLP leaves for ``backward()``, as the page's
    counting function found it: the arrays its nodes saved beyond the parameters."""

    batch: int
    depth: int
    width: int
    activation_floats: int
    parameter_floats: int
    per_op: list  # (op name, floats it saved that no earlier op or parameter holds), in backward order

    @property
    def activation_bytes(self) -> int:
        return 8 * self.activation_floats  # float64


def saved_for_backward(
    count, model, batch: int = 32, depth: int = 2, width: int = 16, seed: int = 0
) -> SavedForBackward:
    """Run ``model`` (the page's MLP with 2 inputs, 2 classes, ``depth`` hidden layers of ``width``)
    forward on ``batch`` standard-normal points with a cross-entropy loss, and add up what the
    page's ``count(loss, parameters)`` (a list of (op, floats)) finds saved for the backward pass."""
    if not (isinstance(batch, (int, np.integer)) and 1 <= batch <= 100_000):
        raise ValueError(f"saved_for_backward: batch must be an integer in [1, 100000], got {batch!r}")
    params = list(model.parameters())
    x = np.random.default_rng(seed).standard_normal((batch, 2))
    loss = F.cross_entropy(model(Tensor(x)), np.zeros(batch, dtype=np.int64))
    per_op = [(str(op), int(floats)) for op, floats in count(loss, params)]
    return SavedForBackward(
        int(batch), depth, width, sum(f for _, f in per_op), int(sum(p.data.size for p in params)), per_op
    )


CHAIN_DEPTHS = (4, 16, 64)  # the chain lengths n the page offers
CHAIN_SEGMENTS = (1, 2, 4, 8, 16, 32, 64)  # its segment lengths k
CHAIN_BATCH, CHAIN_WIDTH = 16, 32


@dataclass(frozen=True)
class Checkpointing:
    """Plain backprop against gradient checkpointing on the page's chain: the most floats each
    held at once (as the page's counting function found them) and how far their gradients differ."""

    depth: int
    segment: int
    plain_floats: int
    checkpointed_floats: int
    max_difference: float  # largest |∂f/∂W plain − checkpointed| over every weight

    @property
    def activation(self) -> int:
        return CHAIN_BATCH * CHAIN_WIDTH  # the floats of one activation h_i


def chain_weights(depth: int, seed: int = 0) -> list:
    """``depth`` weight matrices W_i (width × width), N(0, 1/width) (Xavier-like: tanh keeps its scale)."""
    drawn = np.random.default_rng(seed).standard_normal((depth, CHAIN_WIDTH, CHAIN_WIDTH)) / np.sqrt(CHAIN_WIDTH)
    return [Tensor(w, requires_grad=True) for w in drawn]


def checkpointing_view(chain, checkpointed_backward, count, depth: int, segment: int, seed: int = 0) -> Checkpointing:
    """The page's ``chain`` of ``depth`` layers on a random batch, differentiated by ``backward()``
    on its whole graph (its saved floats counted by the page's ``count``) and by the page's
    ``checkpointed_backward`` with segments of ``segment`` layers (at most the chain). Remembered
    per setting and lesson function."""
    if depth not in CHAIN_DEPTHS or segment not in CHAIN_SEGMENTS:
        raise ValueError(
            f"checkpointing_view: depth must be one of {CHAIN_DEPTHS} and segment one of "
            f"{CHAIN_SEGMENTS}, got {depth!r} and {segment!r}"
        )

    x = Tensor(np.random.default_rng(seed + 1).standard_normal((CHAIN_BATCH, CHAIN_WIDTH)))

    def plain():  # the whole graph, once per chain: (its saved floats, ∂f/∂W_i)
        weights = chain_weights(depth, seed)
        out = chain(x, weights)
        floats = sum(n for _, n in count(out, weights))
        out.backward(np.ones(out.shape))
        return int(floats), [w.grad.numpy() for w in weights]

    def make():
        floats, grads = _remembered(("plain chain", depth, seed, chain, count), plain)
        weights = chain_weights(depth, seed)
        peak = checkpointed_backward(x, weights, min(segment, depth))
        diff = max(float(np.abs(g - w.grad.numpy()).max()) for g, w in zip(grads, weights))
        return Checkpointing(depth, segment, floats, int(peak), diff)

    return _remembered(("checkpointing", depth, segment, seed, chain, checkpointed_backward, count), make)


# ----------------------------------------------------------------------------- write your own op


OP_BUGS = ("no accumulation", "missing transpose", "broadcast not summed back")  # the bugs the page puts in


@dataclass(frozen=True)
class OpCheck:
    """One op's backward graded: the page's gradient check per input, and ``engine.gradcheck``'s
    verdict (True, or the message of the error it raised)."""

    bug: str | None  # None: the op as the page writes it
    errors: dict  # input name -> largest |autograd − central difference| over its elements
    gradcheck: str | bool

    @property
    def caught(self) -> bool:
        return max(self.errors.values()) > 1e-6


def op_inputs(n: int = 4, d: int = 3, seed: int = 0) -> dict:
    """The random inputs the page checks an op of Z = X + X Wᵀ + b on: X (n, d), W (d, d), b (d,)."""
    rng = np.random.default_rng(seed)
    return {
        "X": rng.standard_normal((n, d)),
        "W": rng.standard_normal((d, d)) / np.sqrt(d),
        "b": rng.standard_normal(d),
    }


def check_op(gradient_check, op, n: int = 4, d: int = 3, seed: int = 0, bug: str | None = None) -> OpCheck:
    """Grade ``op`` (a Function of (X, W, b)) on tanh(op(X, W, b)): the page's ``gradient_check`` run
    on each input alone (the others held as constants), and ``engine.gradcheck`` on all three."""
    inputs = op_inputs(n, d, seed)
    names = list(inputs)

    def on(name):  # f of one input, the others constants
        return lambda v: op.apply(*(v if k == name else Tensor(inputs[k]) for k in names)).tanh()

    errors = {k: float(gradient_check(on(k), [inputs[k]])) for k in names}
    try:
        verdict = gradcheck(lambda *t: op.apply(*t).tanh(), [inputs[k] for k in names])
    except GradcheckError as err:
        message = str(err).removeprefix("gradcheck: ")  # its worst element, and how many disagree
        verdict = message.split(" (|difference|")[0] + "; " + message.rsplit("; ", 1)[-1]
    return OpCheck(bug, errors, verdict)


def op_error_maps(difference, op, n: int = 4, d: int = 3, seed: int = 0, h: float = 1e-6) -> dict:
    """Element by element, autograd's gradient of Σ tanh(op(X, W, b)) minus the page's central
    ``difference`` of it with step ``h``: input name -> an array of the input's shape (what the
    page's gradient check takes the largest of). Remembered per op and difference."""

    def make():
        inputs = op_inputs(n, d, seed)
        tensors = [Tensor(v, requires_grad=True) for v in inputs.values()]
        op.apply(*tensors).tanh().sum().backward()
        maps = {}
        for (name, v), t in zip(inputs.items(), tensors):
            numeric = np.zeros_like(v)
            for i in np.ndindex(v.shape):

                def total(value, name=name, i=i):  # Σ tanh(op(...)) with element i of this input set to value
                    moved = {k: a.copy() for k, a in inputs.items()}
                    moved[name][i] = value
                    with no_grad():
                        return float(op.apply(*(Tensor(a) for a in moved.values())).tanh().sum().data)

                numeric[i] = difference(total, v[i], h)
            maps[name] = (np.zeros_like(v) if t.grad is None else t.grad.numpy()) - numeric
        return maps

    return _remembered(("op error maps", n, d, seed, h, op, difference), make)


# ----------------------------------------------------------------------------- what a control shows


def remembered(key, make, keep=None):
    """``make()``, remembered under ``key`` (which must name the lesson functions ``make`` calls, so
    that an edited cell computes again). ``keep`` is held with the entry: an ``id(keep)`` in the key
    then names that object for as long as the entry lives."""
    return _remembered(key, lambda: (keep, make()))[1]


def stepper_graphs(name: str, x: float, y: float, z: float, mul, sort, walk):
    """(graph, its input gradients, the engine's input gradients) of the stepper: expression ``name``
    built with the page's ``mul``, ordered and walked by its ``sort`` and ``walk``, beside the same
    expression through the engine's own ops and ``backward()``. Remembered per inputs and lesson
    functions: the step slider re-reads the same graph."""
    from engine.course import graph as graphs

    def make():
        g = graphs.expression_graph(name, x, y, z, mul=mul, sort=sort, walk=walk)
        return g, graphs.input_gradients(g), graphs.input_gradients(graphs.expression_graph(name, x, y, z))

    return _remembered(("stepper", name, float(x), float(y), float(z), mul, sort, walk), make)


def stepper_chart(graph, k: int, height: int = 260):
    """``plot.graph_chart`` of ``graph`` (a :func:`stepper_graphs` graph) at backward step ``k``,
    remembered per graph and step: moving back to a step, or to inputs seen before, draws the
    chart already built (building one costs about 20 ms)."""
    from engine.course import plot

    return remembered(
        ("stepper chart", id(graph), int(k), height),
        lambda: plot.graph_chart(**graph.drawing(k), height=height),
        keep=graph,
    )


def step_rule_view(difference, rule, x0: float):
    """The gradient check's V at ``x0`` as the page draws it: (:func:`finite_difference_errors` over
    :data:`FD_STEPS`, :func:`best_step` per dtype, :func:`step_rule_check`, the chart of the four
    error curves, without the step's marker). Remembered per point and lesson functions: the step
    slider only moves its marker."""

    def make():
        from engine.course import plot

        fd = finite_difference_errors(difference, x0, hs=FD_STEPS)
        best = {dt: best_step(fd, dt) for dt in ("float32", "float64")}
        floor = 1e-18  # the chart's floor: an error of exactly 0 has no place on a log axis
        curves = {dt: np.maximum(fd.error(dt), floor) for dt in ("float32", "float64")}
        curves.update(
            {
                f"autograd error, {dt}": np.full_like(fd.h, max(fd.autograd_error(dt), floor))
                for dt in ("float32", "float64")
            }
        )
        chart = plot.curves(
            fd.h,
            curves,
            x_title="step h",
            y_title="|error|",
            log_x=True,
            log_y=True,
            colors={"autograd error, float32": "float32", "autograd error, float64": "float64"},
            dashed=["autograd error, float32", "autograd error, float64"],
            height=260,
            title=f"Central difference against the exact derivative at x = {x0:g}",
        )
        return fd, best, step_rule_check(difference, rule, fd, x0), chart

    return _remembered(("v", difference, rule, float(x0)), make)


def mode_view(forward_mode, reverse_mode, mode_costs, n: int, seed: int = 0) -> ModeCost:
    """:func:`forward_vs_reverse` of the page's functions at ``n`` inputs, remembered per ``n`` and
    lesson functions (forward mode at n = 1000 runs a thousand passes)."""
    return _remembered(
        ("modes", forward_mode, reverse_mode, mode_costs, int(n), seed),
        lambda: forward_vs_reverse(forward_mode, reverse_mode, mode_costs, n, seed=seed),
    )
