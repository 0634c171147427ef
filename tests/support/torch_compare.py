"""Shorthands over tests/support/oracle.py for the engine-core tests.

``check_op(engine_fn, torch_fn, inputs)`` runs both checks every op must pass:

1. ``engine.gradcheck`` (float64 central differences against autograd, random upstream vector);
2. the PyTorch oracle: forward value and every input gradient under a random upstream gradient,
   in float64 with a tight tolerance (1e-10 relative by default: the formulas are exact, so the
   two libraries should agree to rounding).

``torch_fn=SAME`` means "the same expression, written once": many ops have identical spellings
in both libraries (``a + b``, ``x.exp()``, ``x.sum(dim=1)``).
"""

from __future__ import annotations

import numpy as np
from oracle import check_against_torch, check_gradcheck

SAME = object()
RTOL = 1e-10
ATOL = 1e-12


def check_op(
    engine_fn, torch_fn, inputs, grad=True, rtol=RTOL, atol=ATOL, gradcheck=True, gradcheck_kwargs=None, seed=0
):
    """gradcheck (float64) and the torch oracle on the same float64 ``inputs``."""
    torch_fn = engine_fn if torch_fn is SAME else torch_fn
    inputs = [np.asarray(a) for a in inputs]
    if gradcheck:
        check_gradcheck(engine_fn, inputs, grad=grad, **(gradcheck_kwargs or {}))
    return check_against_torch(engine_fn, torch_fn, inputs, atol=atol, rtol=rtol, grad=grad, seed=seed)


def oracle(engine_fn, torch_fn, inputs, grad=True, rtol=RTOL, atol=ATOL, seed=0):
    """Only the torch comparison (for points where central differences are meaningless: kinks,
    ties, values next to a singularity)."""
    torch_fn = engine_fn if torch_fn is SAME else torch_fn
    return check_against_torch(
        engine_fn, torch_fn, [np.asarray(a) for a in inputs], atol=atol, rtol=rtol, grad=grad, seed=seed
    )


def draw(shape, domain="normal", seed=0):
    """A float64 array of ``shape`` from a named domain (keeps gradcheck away from kinks and poles).

    normal: N(0, 1); positive: U(0.5, 3); unit: U(0.05, 0.95) (probabilities);
    away: ±U(0.3, 2) (never near 0, where |x| and relu bend).
    """
    rng = np.random.default_rng(seed)
    if domain == "normal":
        return rng.standard_normal(shape)
    if domain == "positive":
        return rng.uniform(0.5, 3.0, shape)
    if domain == "unit":
        return rng.uniform(0.05, 0.95, shape)
    if domain == "away":
        return rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    raise ValueError(f"unknown domain {domain!r}")
