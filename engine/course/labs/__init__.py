"""One module per notebook, named after it: the computations the notebook shows, tested in
tests/course/. Notebooks import theirs as ``from engine.course.labs import convolution as lab``.

``_generative`` holds what 07 (diffusion) and 08 (VAE) share. Every lab is imported below by name
(see ``engine/course/__init__.py`` for why).
"""

from . import activations, attention, backprop, convolution, diffusion, losses, optimizers, vae  # noqa: F401
