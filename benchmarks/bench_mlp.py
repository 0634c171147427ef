"""One SGD training step of two MLPs: engine vs hand-written NumPy vs PyTorch (issue 2's goals).

(a) 784-256-10, batch 128, ReLU, cross-entropy: the matrix products dominate, so this measures how
    little the engine adds on top of NumPy (goals: ≤ 1.3× the NumPy step, ≤ 1.1× PyTorch).
(b) 2-16-16-1, batch 64, tanh, MSE: the arrays are tiny, so this measures per-op overhead
    (goal: faster than PyTorch).
All three columns start from the same weights and data (float32).
"""

import numpy as np

from benchmarks.common import engine_mlp, torch_mlp, training_step, uniform_weights
from benchmarks.run import Case

LR = 0.05


def _problem(sizes, batch, classification, seed=0):
    rng = np.random.default_rng(seed)
    weights = uniform_weights(sizes, rng)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    if classification:
        y = rng.integers(0, sizes[-1], batch)
    else:
        y = rng.standard_normal((batch, sizes[-1])).astype(np.float32)
    return weights, x, y


def _engine(sizes, batch, classification, act):
    def setup():
        import engine.functional as F
        from engine import optim

        weights, x, y = _problem(sizes, batch, classification)
        model = engine_mlp(weights, act)
        opt = optim.SGD(model.parameters(), lr=LR)
        loss_fn = F.cross_entropy if classification else F.mse_loss
        return training_step(model, opt, loss_fn, x, y)

    return setup


def _numpy(sizes, batch, classification, act):
    def setup():
        weights, x, y = _problem(sizes, batch, classification)
        params = [[w.copy(), b.copy()] for w, b in weights]
        n = x.shape[0]
        rows = np.arange(n)

        def step():
            # forward, keeping each layer's input and pre-activation
            inputs, pre = [], []
            h = x
            for i, (w, b) in enumerate(params):
                inputs.append(h)
                z = h @ w.T + b
                pre.append(z)
                last = i == len(params) - 1
                h = z if last else (np.maximum(z, 0) if act == "relu" else np.tanh(z))
            if classification:
                e = np.exp(h - h.max(axis=1, keepdims=True))
                p = e / e.sum(axis=1, keepdims=True)
                loss = -np.log(p[rows, y]).mean()
                dz = p
                dz[rows, y] -= 1
                dz /= n
            else:
                diff = h - y
                loss = (diff * diff).mean()
                dz = 2 * diff / diff.size
            # backward: dW = dZᵀX, db = ΣdZ, dX = dZ W, then the activation's derivative
            for i in range(len(params) - 1, -1, -1):
                w, b = params[i]
                dw = dz.T @ inputs[i]
                db = dz.sum(axis=0)
                if i:
                    dh = dz @ w
                    dz = dh * (pre[i - 1] > 0) if act == "relu" else dh * (1 - inputs[i] ** 2)
                w -= LR * dw
                b -= LR * db
            return loss

        return step

    return setup


def _torch(sizes, batch, classification, act):
    def setup():
        import torch

        weights, x, y = _problem(sizes, batch, classification)
        model = torch_mlp(weights, act)
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        loss_fn = torch.nn.functional.cross_entropy if classification else torch.nn.functional.mse_loss
        return training_step(model, opt, loss_fn, xt, yt)

    return setup


def _case(name, sizes, batch, classification, act, torch_goal):
    args = (sizes, batch, classification, act)
    return Case(name, engine=_engine(*args), numpy=_numpy(*args), torch=_torch(*args), torch_goal=torch_goal)


CASES = [
    _case("MLP 784-256-10, batch 128, CE, SGD step", (784, 256, 10), 128, True, "relu", 1.1),
    _case("MLP 2-16-16-1, batch 64, MSE, SGD step", (2, 16, 16, 1), 64, False, "tanh", 1.0),
]
