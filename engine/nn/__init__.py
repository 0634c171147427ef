"""``engine.nn``: modules (layers and models), initialisers and gradient utilities, as ``torch.nn``."""

from .module import Module, ModuleList, Parameter, Sequential

# layers, init and utils (written next) are imported below; other layer files add their own line.
