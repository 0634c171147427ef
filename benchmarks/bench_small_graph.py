"""The course's live controls: one autograd pass on a graph of about ten tiny ops (issue 28).

Notebook 04's optimizer race re-runs ~200 steps per racer at every move of a control, each step
one forward and backward through a ~10-op graph on arrays of a few elements; 01's and 03's
controls are similar. At these sizes NumPy's arithmetic is a small part of a step: the fixed
Python cost of each op (the Tensor, the graph node, the checks) and of each backward (the walk)
is what the learner waits for.

(a) the race's step: f = Rosenbrock's valley at 5 racers' θ at once (θ is [2, 5], one column per
    racer, the surfaces act elementwise), ∇f by backward, then θ ← θ − η∇f;
(b) a scalar expression of 12 ops on two 0-d inputs and its backward (03's graph pictures).

Every column computes the same values in float64 from the same start; the NumPy column writes the
derivatives out by hand (the floor).
"""

import numpy as np

from benchmarks.run import Case

RACERS = 5
LR = 1e-4


def _start():
    return np.tile(np.array([[-1.5], [2.0]]), (1, RACERS)) + np.linspace(0, 0.1, RACERS)


def _rosenbrock(t):
    x, y = t[0], t[1]  # as engine/course/labs/optimizers.py: index once, each index is a node
    return (1.0 - x) ** 2 + 100.0 * (y - x**2) ** 2


def race_engine():
    import engine

    theta = _start()

    def step():
        nonlocal theta
        x = engine.tensor(theta, requires_grad=True)
        loss = _rosenbrock(x)
        loss.sum().backward()  # column j of x.grad is ∇f at racer j's θ alone
        theta = theta - LR * x.grad.numpy()
        return loss

    return step


def race_numpy():
    theta = _start()

    def step():
        nonlocal theta
        x, y = theta
        r = y - x * x
        loss = (1.0 - x) ** 2 + 100.0 * r * r
        grad = np.stack([-2.0 * (1.0 - x) - 400.0 * x * r, 200.0 * r])
        theta = theta - LR * grad
        return loss

    return step


def race_torch():
    import torch

    theta = torch.from_numpy(_start())

    def step():
        nonlocal theta
        x = theta.clone().requires_grad_(True)
        loss = _rosenbrock(x)
        loss.sum().backward()
        theta = theta - LR * x.grad
        return loss

    return step


def _expression(x, y, tanh, sin, exp):
    """12 ops: the kind of expression 03 draws as a graph."""
    a = x * y
    b = a + sin(x)
    c = b * exp(y)
    d = c - x**2
    e = d / (y * y + 1.0)
    return tanh(e) + 2.0 * a


def _scalar_autograd(leaf, tanh, sin, exp):
    """The expression's forward and backward on two float64 leaves made by ``leaf(value)``."""
    x, y = leaf(0.5), leaf(-1.5)

    def step():
        x.grad = y.grad = None
        out = _expression(x, y, tanh, sin, exp)
        out.backward()
        return out

    return step


def scalar_engine():
    import engine

    return _scalar_autograd(
        lambda v: engine.tensor(v, dtype=np.float64, requires_grad=True), engine.tanh, engine.sin, engine.exp
    )


def scalar_numpy():
    x, y = np.float64(0.5), np.float64(-1.5)

    def step():
        # forward, keeping what the derivatives use, then the chain rule by hand
        a = x * y
        sx, ey = np.sin(x), np.exp(y)
        b = a + sx
        c = b * ey
        d = c - x * x
        q = y * y + 1.0
        e = d / q
        t = np.tanh(e)
        de = 1.0 - t * t
        dd, dq = de / q, -de * d / (q * q)
        dc = dd
        db, dy = dc * ey, dc * c + dq * 2.0 * y  # ∂c/∂y = b·eʸ = c
        da = db + 2.0
        gx = da * y + db * np.cos(x) - dd * 2.0 * x
        gy = da * x + dy
        return t + 2.0 * a, gx, gy

    return step


def scalar_torch():
    import torch

    return _scalar_autograd(
        lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True), torch.tanh, torch.sin, torch.exp
    )


CASES = [
    Case(
        f"04's race step: Rosenbrock at {RACERS} racers, f, grad, update",
        engine=race_engine,
        numpy=race_numpy,
        torch=race_torch,
        torch_goal=1.0,
    ),
    Case("scalar expression, 12 ops + backward", engine=scalar_engine, numpy=scalar_numpy, torch=scalar_torch),
]
