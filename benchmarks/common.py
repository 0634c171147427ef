"""Pieces the benchmark files share (not a benchmark: ``run.py`` reads only ``bench_*.py``)."""

from __future__ import annotations

import numpy as np


def uniform_weights(sizes, rng) -> list:
    """(W, b) per layer of an MLP with these sizes, float32, drawn U(−1/√n_in, 1/√n_in) as
    PyTorch's ``nn.Linear`` does; W is stored (out, in). Every column copies these."""
    weights = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(n_in)
        weights.append(
            (
                rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32),
                rng.uniform(-bound, bound, n_out).astype(np.float32),
            )
        )
    return weights


def training_step(model, opt, loss_fn, x, y):
    """One step of ``model`` on (x, y): loss, zero the gradients, backward, update (engine and
    torch share the spelling)."""

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def backward_step(inputs, forward, upstream):
    """One forward and backward of ``forward(*inputs)`` with the upstream gradient ``upstream``,
    the inputs' gradients cleared first (engine and torch tensors alike)."""

    def step():
        for t in inputs:
            t.grad = None
        forward(*inputs).backward(upstream)

    return step


def engine_mlp(weights, activation: str = "relu"):
    """An engine ``nn.Sequential`` holding these (W, b): Linear, activation, ..., Linear."""
    from engine import nn

    layers = []
    for w, b in weights:
        lin = nn.Linear(w.shape[1], w.shape[0])
        lin.weight.data[...] = w
        lin.bias.data[...] = b
        layers += [lin, nn.ReLU() if activation == "relu" else nn.Tanh()]
    return nn.Sequential(*layers[:-1])


def torch_mlp(weights, activation: str = "relu"):
    """The same network in ``torch.nn``, from the same (W, b)."""
    import torch

    layers = []
    for w, b in weights:
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        layers += [lin, torch.nn.ReLU() if activation == "relu" else torch.nn.Tanh()]
    return torch.nn.Sequential(*layers[:-1])
