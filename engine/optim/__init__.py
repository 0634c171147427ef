"""``engine.optim``: optimizers that update parameters in place, and learning-rate schedules."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "RMSprop", "Adam", "AdamW", "lr_scheduler"]
