"""``import engine.nn.functional as F``: PyTorch's import path for :mod:`engine.functional`.

Every public name of ``engine.functional`` is bound here too (the same function objects, so
``engine.nn.functional.relu is engine.functional.relu``); nothing is defined twice.
"""

from .. import functional as _functional

globals().update({name: value for name, value in vars(_functional).items() if not name.startswith("_")})
