"""``engine.nn``: modules (layers and models), initialisers and gradient utilities, as ``torch.nn``."""

from . import functional, init, utils  # functional: engine.functional itself (PyTorch's path)
from .attention import MultiheadAttention
from .conv import AvgPool2d, Conv2d, ConvTranspose2d, MaxPool2d
from .layers import (
    ELU,
    GELU,
    BatchNorm1d,
    BatchNorm2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    SwiGLU,
    Tanh,
    Unflatten,
)
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, ModuleDict, ModuleList, Parameter, ParameterDict, ParameterList, Sequential
