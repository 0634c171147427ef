"""The course layer: what only the notebooks and cheat sheets need, on top of the ``engine`` library.

    from engine.course import plot, toc, ui
    from engine.course.labs import convolution as lab

- :mod:`.toc`: the table of contents (every page's id, title, file, topics) and the links between
  pages;
- :mod:`.labs`: one module per notebook, named after it, holding that notebook's computations;
- :mod:`.plot`: the one visual language (palette with meanings, the shared charts);
- :mod:`.ui` and :mod:`.exercises`: the verdict callout, the progress callback, answer checking;
- :mod:`.graph`: the computation graph a notebook draws and steps through;
- :mod:`.formulas`: every formula row of the cheat sheets, as data, checked against the engine.

The library never imports from here (tests/engine/test_layers.py checks it). Every submodule is
imported below, eagerly and by name, for the same reason ``engine/__init__.py`` imports the
library's: ``marimo export html-wasm`` bundles what Ruff's static import graph reaches from a
notebook, and every notebook imports ``engine.course``, so every page gets the whole package in
one shared wheel. None of them is heavy: marimo, Altair and Matplotlib are imported inside the
functions that draw.
"""

from . import exercises, formulas, graph, labs, plot, toc, ui  # noqa: F401
