"""What the labs of notebooks 07 (diffusion) and 08 (VAE) share: the standardised 2-D toy data
sets."""

from __future__ import annotations

import numpy as np

from engine import data as engine_data

from ._checks import _int

__all__ = ["DATASETS_2D", "toy_data_2d"]


# ----------------------------------------------------------------------------- data
DATASETS_2D = ("moons", "swiss roll", "8 Gaussians")


def toy_data_2d(name="moons", n=3000, seed=0, return_labels=False):
    """A 2-D data set from ``engine.data``, standardised (mean 0, std 1 per coordinate), so that
    it lives on the same scale as the N(0, I) noise the diffusion ends in. float64 [n, 2]; with
    ``return_labels`` also the int64 labels [n] (moon, Gaussian component, or segment of the
    roll), for colouring."""
    op = "toy_data_2d"
    n = _int(op, "n", n, 2)
    if name == "moons":
        X, y = engine_data.make_moons(n, noise=0.05, seed=seed)
    elif name == "swiss roll":
        X, y = engine_data.make_swiss_roll(n, noise=0.05, seed=seed)
    elif name == "8 Gaussians":
        X, y = engine_data.make_gaussian_mixture(n, seed=seed)[:2]
    else:
        raise ValueError(f"{op}: name must be one of {DATASETS_2D}, got {name!r}")
    X = np.asarray(X, dtype=np.float64)
    X = (X - X.mean(0)) / X.std(0)
    return (X, np.asarray(y, dtype=np.int64)) if return_labels else X
