"""Computations behind notebook 03 (backprop): the MLP playground and the gradient check.

- :func:`make_playground_data`, :func:`build_mlp`, :func:`train_playground`: a small MLP on 2-D
  toy data with a chosen width, depth, activation, optimizer and learning rate; loss and accuracy
  history, and the class probabilities over a grid for the decision boundary.
- :func:`default_playground`: the model and the overfit check the page opens on, trained with
  :data:`PLAYGROUND_DEFAULTS` by ``make checkpoints`` (:data:`CHECKPOINTS`) and read at load.
- :func:`overfit_one_batch`: the sanity check: a network must drive the loss on one small batch
  to (nearly) zero, or something is broken.
- :func:`forward_vs_reverse`: the gradient of f: ℝⁿ → ℝ by forward mode (n Jacobian–vector
  products) and by reverse mode (one vector–Jacobian product), with a multiply-add counter;
  :func:`mode_counts`, the same counts in closed form (the notebook's cost curves over n).
- :func:`finite_difference_errors`: |central difference − autograd| as the step h sweeps many
  decades, in float32 and float64: the V of truncation error (∝ h²) against round-off (∝ ε/h).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

import engine.functional as F
from engine import Tensor, nn, no_grad, optim
from engine import data as toy
from engine.course import checkpoints
from engine.course.checkpoints import backprop_playground as _playground_checkpoint
from engine.random import fork_rng

from ._checks import is_default

# ----------------------------------------------------------------------------- MLP playground

DATASETS = ("moons", "circles", "spirals", "blobs")
ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid, "silu": nn.SiLU}
OPTIMIZERS = ("sgd", "momentum", "adam")


def make_playground_data(name: str = "moons", n: int = 200, noise: float = 0.1, seed: int = 0):
    """A 2-D toy set from :mod:`engine.data`, standardised (zero mean, unit variance per feature,
    statistics of these points), split 75/25 into train and validation. Returns (Xtr, ytr, Xva, yva)."""
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
    X = np.asarray(X, dtype=np.float64)
    X = (X - X.mean(0)) / X.std(0)
    cut = int(0.75 * len(X))
    return X[:cut], np.asarray(y[:cut]), X[cut:], np.asarray(y[cut:])


CANVAS_BOUNDS = ((-3.5, 3.5), (-3.5, 3.5))  # the drawing canvas spans the standardised presets
CANVAS_CLASSES = 3  # blobs has three


def split_drawn(X, y, seed: int = 0):
    """A drawn labelled set as the playground's (Xtr, ytr, Xva, yva): float64, standardised like the
    presets, shuffled with ``default_rng(seed)`` (a drawing comes class by class), 75/25 with at
    least one point on each side."""
    X, y = np.asarray(X, dtype=np.float64).reshape(-1, 2), np.asarray(y, dtype=np.int64).reshape(-1)
    if len(X) < 2 or len(X) != len(y):
        raise ValueError(f"split_drawn: need at least 2 labelled points, got {len(X)} points and {len(y)} labels")
    std = X.std(0)
    X = (X - X.mean(0)) / np.where(std > 0, std, 1.0)  # one point or a line: nothing to scale
    order = np.random.default_rng(seed).permutation(len(X))
    X, y = X[order], y[order]
    cut = min(max(1, int(0.75 * len(X))), len(X) - 1)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def build_mlp(n_in: int, n_out: int, width: int = 16, depth: int = 2, activation: str = "tanh", seed: int = 0):
    """Linear(n_in, width) → φ → … (``depth`` hidden layers) → Linear(width, n_out), float64."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"build_mlp: activation must be one of {tuple(ACTIVATIONS)}, got {activation!r}")
    if not (1 <= depth <= 8 and 1 <= width <= 256):
        raise ValueError(f"build_mlp: need 1 ≤ depth ≤ 8 and 1 ≤ width ≤ 256, got depth={depth}, width={width}")
    rng = np.random.default_rng(seed)
    layers, fan_in = [], n_in
    with fork_rng(seed):  # nn.Linear's own init draws; the global stream stays where it was
        for _ in range(depth):
            layers += [nn.Linear(fan_in, width), ACTIVATIONS[activation]()]
            fan_in = width
        layers.append(nn.Linear(fan_in, n_out))
    model = nn.Sequential(*layers)
    # Our own seeded draws (the global generator stays untouched): He for ReLU-like, Xavier otherwise.
    for layer in layers:
        if isinstance(layer, nn.Linear):
            fi, fo = layer.weight.shape[1], layer.weight.shape[0]
            std = math.sqrt(2 / fi) if activation in ("relu", "gelu", "silu") else math.sqrt(2 / (fi + fo))
            layer.weight.data = rng.normal(0, std, layer.weight.shape)
            layer.bias.data = np.zeros(layer.bias.shape)
    return model


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


def train_playground(X, y, Xva, yva, width: int = 16, depth: int = 2, activation: str = "tanh",
                     optimizer: str = "adam", lr: float = 0.03, epochs: int = 100, batch_size: int = 32,
                     seed: int = 0, grid_size: int = 60, progress=None):
    """Mini-batch training with cross-entropy; ``progress(epoch)`` is called after every epoch
    (the notebook's progress bar). Stops early, flagged ``diverged``, if the loss becomes non-finite."""
    n_classes = int(max(y.max(), yva.max())) + 1
    model = build_mlp(X.shape[1], n_classes, width, depth, activation, seed)
    opt = playground_optimizer(optimizer, model.parameters(), lr)
    rng = np.random.default_rng(seed + 1)
    hist = {k: [] for k in ("train_loss", "val_loss", "train_acc", "val_acc")}
    run = PlaygroundRun(history=hist, model=model)
    with no_grad():
        run.initial_loss = float(F.cross_entropy(model(Tensor(X)), y).data)
    with np.errstate(over="ignore", invalid="ignore"):
        for epoch in range(epochs):
            order = rng.permutation(len(X))
            for start in range(0, len(X), batch_size):
                idx = order[start:start + batch_size]
                loss = F.cross_entropy(model(Tensor(X[idx])), y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            with no_grad():
                ztr, zva = model(Tensor(X)), model(Tensor(Xva))
                hist["train_loss"].append(float(F.cross_entropy(ztr, y).data))
                hist["val_loss"].append(float(F.cross_entropy(zva, yva).data))
                hist["train_acc"].append(float(np.mean(ztr.data.argmax(1) == y)))
                hist["val_acc"].append(float(np.mean(zva.data.argmax(1) == yva)))
            if progress is not None:
                progress(epoch)
            if not math.isfinite(hist["train_loss"][-1]):
                run.diverged = True
                break
    if not run.diverged:
        run.grid_x, run.grid_y, run.grid_probs = class_grid(model, np.concatenate([X, Xva]), grid_size)
    return run


def overfit_one_batch(X, y, width: int = 32, depth: int = 2, activation: str = "tanh", lr: float = 0.01,
                      steps: int = 300, batch: int = 16, seed: int = 0):
    """Train on the same ``batch`` examples only (Adam): a correct model and loss reach ≈ 0.
    Returns the loss per step."""
    model = build_mlp(X.shape[1], int(y.max()) + 1, width, depth, activation, seed)
    opt = optim.Adam(model.parameters(), lr=lr)
    xb, yb = Tensor(X[:batch]), y[:batch]
    losses = np.empty(steps)
    for i in range(steps):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[i] = float(loss.data)
    return losses


# The playground's opening settings: the notebook's controls start here, and the page shows the
# model trained with them as soon as it opens (the train button retrains with the learner's).
PLAYGROUND_DEFAULTS = dict(data="moons", noise=0.15, width=16, depth=2, activation="tanh", optimizer="adam",
                           lr=0.03, epochs=60)
PLAYGROUND_POINTS = 240  # points in a preset data set
PLAYGROUND_GRID = 40  # the decision-boundary grid: 40×40 cells are what the browser redraws
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


def _default_playground_state() -> dict:
    """What checkpoint ``backprop_playground`` holds: the playground's default model trained on its
    default data (loss and accuracy history, class probabilities over the grid, initial loss) and
    the overfit check of the default network, with the settings that made them."""
    d = PLAYGROUND_DEFAULTS
    split = make_playground_data(d["data"], n=PLAYGROUND_POINTS, noise=d["noise"], seed=0)
    run = train_playground(*split, width=d["width"], depth=d["depth"], activation=d["activation"],
                           optimizer=d["optimizer"], lr=d["lr"], epochs=d["epochs"], seed=0,
                           grid_size=PLAYGROUND_GRID)
    losses = overfit_one_batch(split[0], split[1], width=overfit_width(d["width"]), depth=d["depth"],
                               activation=d["activation"], steps=OVERFIT_STEPS)
    return {"settings": dict(d, points=PLAYGROUND_POINTS, grid=PLAYGROUND_GRID, overfit_steps=OVERFIT_STEPS),
            "history": {k: np.array(v) for k, v in run.history.items()}, "initial_loss": run.initial_loss,
            "grid_x": run.grid_x, "grid_y": run.grid_y, "grid_probs": run.grid_probs, "overfit_losses": losses}


# `make checkpoints` runs these (tests/course/test_checkpoints.py retrains and compares): training
# the default takes ~0.1 s of CPU, which the page would pay at every first open.
CHECKPOINTS = {"backprop_playground": _default_playground_state}


@functools.lru_cache(maxsize=1)
def default_playground() -> DefaultPlayground:
    """The playground's default model and overfit check as ``make checkpoints`` trained them
    (checkpoint ``backprop_playground``), on the default data, read once per process."""
    state = checkpoints.load(_playground_checkpoint)
    d = PLAYGROUND_DEFAULTS
    split = make_playground_data(d["data"], n=PLAYGROUND_POINTS, noise=d["noise"], seed=0)
    run = PlaygroundRun(history={k: v.tolist() for k, v in state["history"].items()}, grid_x=state["grid_x"],
                        grid_y=state["grid_y"], grid_probs=state["grid_probs"],
                        initial_loss=float(state["initial_loss"]))
    return DefaultPlayground(split, run, state["overfit_losses"])


# ----------------------------------------------------------------------------- gradient check


def _probe(t):
    """The function the gradient check probes: f(x) = sin(x)·eˣ / (1 + x²), smooth, no special points."""
    return t.sin() * t.exp() / (t * t + 1.0)


def probe_derivative_exact(x: float) -> float:
    """f'(x) of :func:`_probe` by the quotient and product rules, in float64 (the reference)."""
    u, v = math.sin(x) * math.exp(x), 1 + x * x
    du = (math.cos(x) + math.sin(x)) * math.exp(x)
    return (du * v - u * 2 * x) / (v * v)


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


def finite_difference_errors(x0: float = 0.7, hs=None) -> FiniteDifferenceErrors:
    """For each step h: |(f(x+h) − f(x−h))/2h − f'(x)| in float32 and in float64, and the
    autograd error |autograd − f'(x)| in each dtype. f and the differences are evaluated in the
    dtype itself (the engine keeps float32 in float32), so round-off shows.

    Theory: error ≈ |f'''|h²/6 (truncation) + ε|f|/h (round-off), smallest where the two
    meet, near h ≈ ε^(1/3) up to the function's scale (ε ≈ 1.2e−7 in float32, 2.2e−16 in float64).
    """
    hs = np.logspace(-12, 0, 49) if hs is None else np.asarray(hs, dtype=np.float64)
    exact = probe_derivative_exact(x0)
    out = {}
    for dtype in ("float32", "float64"):
        x = np.array(x0, dtype=dtype)
        errs = []
        with np.errstate(all="ignore"):
            for h in hs:
                hh = np.array(h, dtype=dtype)
                xp, xm = x + hh, x - hh
                fp, fm = _probe(Tensor(xp)).data, _probe(Tensor(xm)).data
                est = (fp - fm) / (2 * hh)
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


# ----------------------------------------------------------------------------- forward vs reverse mode


MODE_INPUTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)  # the sizes n the notebook offers and charts


@dataclass
class ModeCounts:
    """What the gradient of f(x) = v · tanh(W x) (x ∈ ℝⁿ, W stored (hidden, n)) costs in each mode
    of automatic differentiation, in multiply-adds: an (h, n) matrix–vector product costs h·n, an
    elementwise product or a length-h dot product h."""

    n: int
    hidden: int
    forward_madds: int  # one plain evaluation of f
    jvp_passes: int  # forward mode: one Jacobian–vector product per input direction
    jvp_madds: int
    vjp_passes: int  # reverse mode: one forward pass, then one backward pass
    vjp_madds: int

    @property
    def forward_mode_in_forwards(self) -> float:
        return self.jvp_madds / self.forward_madds

    @property
    def reverse_mode_in_forwards(self) -> float:
        return self.vjp_madds / self.forward_madds


@dataclass
class ModeCost(ModeCounts):
    """:class:`ModeCounts` as :func:`forward_vs_reverse` counted them while computing the gradient
    both ways, with the three gradients."""

    grad_forward_mode: np.ndarray = None
    grad_reverse_mode: np.ndarray = None
    grad_autograd: np.ndarray = None  # engine's backward(), the reference


def _check_mode_sizes(op: str, n, hidden) -> None:
    if not (isinstance(n, (int, np.integer)) and 1 <= n <= 5000):
        raise ValueError(f"{op}: n must be an integer in [1, 5000], got {n!r}")
    if not (isinstance(hidden, (int, np.integer)) and 1 <= hidden <= 1024):
        raise ValueError(f"{op}: hidden must be an integer in [1, 1024], got {hidden!r}")


def mode_counts(n: int = 100, hidden: int = 64) -> ModeCounts:
    """The multiply-adds :func:`forward_vs_reverse` counts, in closed form (no gradient computed):
    a forward pass is Wx, tanh and v·t (h·n + 2h); a JVP pass carries the tangent beside the
    values (W dx, (1 − t²) ⊙ da, v · dt: h·n + 3h more), n times; reverse mode is one forward
    pass and one backward pass (v ⊙ (1 − t²) and Wᵀ ∂f/∂a: 3h + h·n)."""
    _check_mode_sizes("mode_counts", n, hidden)
    h, n = int(hidden), int(n)
    forward = h * n + 2 * h
    return ModeCounts(n, h, forward, n, n * (forward + h * n + 3 * h), 2, forward + 3 * h + h * n)


def forward_vs_reverse(n: int = 100, hidden: int = 64, seed: int = 0) -> ModeCost:
    """Forward mode pushes a tangent dx through the graph with the values (a Jacobian–vector product
    J·dx) and needs one pass per input direction e₁ … eₙ; reverse mode runs f once, keeps its
    intermediate values, and pulls the scalar 1 back (a vector–Jacobian product 1·J) in one pass.
    Both are written out in NumPy with a counter (a matrix–vector product of an (h, n) matrix costs
    h·n multiply-adds, an elementwise product h) and checked against the engine's ``backward()``."""
    _check_mode_sizes("forward_vs_reverse", n, hidden)
    rng = np.random.default_rng(seed)
    W, v, x = rng.standard_normal((hidden, n)) / math.sqrt(n), rng.standard_normal(hidden), rng.standard_normal(n)
    h = hidden

    def evaluate(x):  # a = Wx, t = tanh a, f = v·t
        a = W @ x
        t = np.tanh(a)
        return a, t, float(v @ t), h * n + 2 * h

    _, _, _, forward_madds = evaluate(x)
    grad_fwd, jvp_madds = np.empty(n), 0
    for i in range(n):  # one JVP per direction: the values and their tangents side by side
        dx = np.zeros(n)
        dx[i] = 1.0
        _, t, _, cost = evaluate(x)
        da = W @ dx  # tangent of a
        dt = (1.0 - t * t) * da  # tangent of tanh a
        grad_fwd[i] = v @ dt  # tangent of f: ∂f/∂x_i
        jvp_madds += cost + h * n + 3 * h
    _, t, _, cost = evaluate(x)  # reverse: one forward pass, values kept for the backward pass
    dt = 1.0 * v  # ∂f/∂t
    da = dt * (1.0 - t * t)  # ∂f/∂a
    grad_rev = W.T @ da  # ∂f/∂x = Wᵀ ∂f/∂a: the vector–Jacobian product
    vjp_madds = cost + 3 * h + h * n
    xt = Tensor(x.copy(), requires_grad=True)
    (Tensor(v) * (Tensor(W) @ xt).tanh()).sum().backward()
    return ModeCost(n, h, forward_madds, n, jvp_madds, 2, vjp_madds, grad_forward_mode=grad_fwd,
                    grad_reverse_mode=grad_rev, grad_autograd=xt.grad.numpy().copy())


# ----------------------------------------------------------------------------- what backward keeps


@dataclass
class SavedForBackward:
    """What one forward pass of the playground's MLP leaves for ``backward()``: the arrays its nodes
    saved (found by walking autograd's own topological order), split into activations (new
    memory, one row per example) and views of the parameters (no new memory)."""

    batch: int
    depth: int
    width: int
    activation_floats: int
    parameter_floats: int
    per_op: list  # (op name, floats it saved that no earlier op or parameter holds), in backward order

    @property
    def activation_bytes(self) -> int:
        return 8 * self.activation_floats  # float64


def saved_for_backward(batch: int = 32, depth: int = 2, width: int = 16, activation: str = "tanh",
                       seed: int = 0) -> SavedForBackward:
    """Build the playground's MLP (2 inputs, 2 classes), run one forward pass on ``batch`` examples
    and add up what the recorded nodes saved for the backward pass."""
    from engine.autograd import topological_order

    if not (isinstance(batch, (int, np.integer)) and 1 <= batch <= 100_000):
        raise ValueError(f"saved_for_backward: batch must be an integer in [1, 100000], got {batch!r}")
    model = build_mlp(2, 2, width, depth, activation, seed)
    params = [p.data for p in model.parameters()]
    x = np.random.default_rng(seed).standard_normal((batch, 2))
    loss = F.cross_entropy(model(Tensor(x)), np.zeros(batch, dtype=np.int64))
    per_op, total, kept = [], 0, list(params)  # an array shared with one already counted is free
    for t in topological_order(loss):
        if t._ctx is None:
            continue
        fresh = 0
        for a in (a for a in (t._ctx.saved_tensors or ()) if isinstance(a, np.ndarray)):
            if not any(np.shares_memory(a, k) for k in kept):
                kept.append(a)
                fresh += a.size
        per_op.append((type(t._ctx).__name__, int(fresh)))
        total += fresh
    return SavedForBackward(int(batch), depth, width, int(total), int(sum(p.size for p in params)), per_op)
