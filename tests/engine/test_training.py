"""End-to-end learning: an MLP trained by the engine separates the two-spirals set, reproducibly."""

from __future__ import annotations

import numpy as np

import engine
import engine.functional as F
from engine import nn, optim
from engine.data import DataLoader, make_spirals, train_test_split
from engine.metrics import accuracy


def _spirals():
    X, y = make_spirals(2000, n_classes=2, noise=0.05, seed=0)
    return train_test_split(X.astype(np.float32), y, test_size=0.25, seed=1)


def _fit(model, X, y, epochs, lr, batch_size=64):
    """Adam + OneCycleLR; the loader and any dropout draw from engine's global generator."""
    opt = optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(X, y, batch_size=batch_size, shuffle=True)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, epochs=epochs, steps_per_epoch=len(loader))
    losses = []
    model.train()
    for _ in range(epochs):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
    return losses


def test_mlp_learns_spirals_on_held_out_points():
    X_train, X_test, y_train, y_test = _spirals()
    engine.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    losses = _fit(model, X_train, y_train, epochs=30, lr=0.01)
    model.eval()
    with engine.no_grad():
        predicted = model(X_test).data.argmax(axis=1)
    held_out = accuracy(y_test, predicted)
    assert held_out >= 0.97, f"held-out accuracy {held_out:.3f}"
    assert np.mean(losses[-20:]) < 0.1 * np.mean(losses[:20])


def _seeded_run(seed):
    X_train, _, y_train, _ = _spirals()
    engine.manual_seed(seed)  # fixes the initialisation, the batch order and the dropout masks
    model = nn.Sequential(nn.Linear(2, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 2))
    return _fit(model, X_train[:512], y_train[:512], epochs=3, lr=0.02)


def test_same_seed_gives_bit_identical_losses():
    first, second = _seeded_run(7), _seeded_run(7)
    assert first == second  # exact equality of every float
    assert _seeded_run(8) != first  # and the seed matters
