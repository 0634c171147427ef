"""One full training epoch: an MLP on 10,000 two-class spiral points, batch 128, Adam (issue 3).

Model 2-64-64-2 with ReLU, cross-entropy, Adam(lr=1e-3), float32; 79 mini-batches per epoch, in
a fresh shuffled order each epoch. The unit of work is the whole epoch (shuffle, forward, backward,
update). All three columns start from the same weights and data:

- engine: ``nn.Sequential``, ``engine.data.DataLoader``, ``F.cross_entropy``, ``optim.Adam``;
- numpy:  the same computation written by hand (forward, backward and Adam), the floor;
- torch:  ``torch.nn`` and ``torch.optim.Adam`` on the CPU with 2 threads, batches by indexing
  (faster than torch's DataLoader for in-memory tensors, so the comparison favours torch).

Run with the others via ``make bench``, or alone: ``python -m benchmarks.bench_training``.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import engine_mlp, torch_mlp, uniform_weights
from benchmarks.run import Case

N_POINTS = 10_000
BATCH = 128
SIZES = (2, 64, 64, 2)
LR = 1e-3
BETAS = (0.9, 0.999)
EPS = 1e-8


def _problem(seed=0):
    from engine.data import make_spirals

    X, y = make_spirals(N_POINTS, n_classes=2, noise=0.05, seed=seed)
    rng = np.random.default_rng(seed)
    weights = uniform_weights(SIZES, rng)
    return X.astype(np.float32), y.astype(np.int64), weights


def engine_epoch():
    import engine
    import engine.functional as F
    from engine import optim
    from engine.data import DataLoader

    X, y, weights = _problem()
    model = engine_mlp(weights)
    opt = optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    engine.manual_seed(1)
    loader = DataLoader(X, y, batch_size=BATCH)

    def epoch():
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss

    return epoch


def numpy_epoch():
    X, y, weights = _problem()
    params = [a.copy() for wb in weights for a in wb]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    rng = np.random.default_rng(1)
    step_count = [0]

    def train_step(xb, yb):
        w1, b1, w2, b2, w3, b3 = params
        z1 = xb @ w1.T + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2.T + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3.T + b3
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        rows = np.arange(len(yb))
        loss = -np.log(p[rows, yb]).mean()
        dz3 = p
        dz3[rows, yb] -= 1
        dz3 /= len(yb)
        dh2 = dz3 @ w3
        dz2 = dh2 * (z2 > 0)
        dh1 = dz2 @ w2
        dz1 = dh1 * (z1 > 0)
        grads = [dz1.T @ xb, dz1.sum(0), dz2.T @ h1, dz2.sum(0), dz3.T @ h2, dz3.sum(0)]
        step_count[0] += 1
        t = step_count[0]
        c1, c2 = 1 - BETAS[0] ** t, np.sqrt(1 - BETAS[1] ** t)
        for param, g, mi, vi in zip(params, grads, m, v):
            mi += (1 - BETAS[0]) * (g - mi)
            vi *= BETAS[1]
            vi += (1 - BETAS[1]) * (g * g)
            param -= (LR / c1) * (mi / (np.sqrt(vi) / c2 + EPS))
        return loss

    def epoch():
        order = rng.permutation(N_POINTS)
        for start in range(0, N_POINTS, BATCH):
            index = order[start : start + BATCH]
            loss = train_step(X[index], y[index])
        return loss

    return epoch


def torch_epoch():
    import torch

    X, y, weights = _problem()
    model = torch_mlp(weights)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    rng = np.random.default_rng(1)

    def epoch():
        order = torch.from_numpy(rng.permutation(N_POINTS))
        for start in range(0, N_POINTS, BATCH):
            index = order[start : start + BATCH]
            loss = torch.nn.functional.cross_entropy(model(Xt[index]), yt[index])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss

    return epoch


CASES = [
    Case(
        f"MLP 2-64-64-2 spirals {N_POINTS // 1000}k, batch {BATCH}, Adam: 1 epoch",
        engine=engine_epoch,
        numpy=numpy_epoch,
        torch=torch_epoch,
    ),
]


def main() -> int:
    from benchmarks.run import main as run_main

    return run_main(["--filter", "spirals"])


if __name__ == "__main__":
    raise SystemExit(main())
