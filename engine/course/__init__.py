"""The course layer: what only the notebooks and cheat sheets need, on top of the ``engine`` library.

    from engine.course import metadata, plot, toc, ui               # a notebook
    from engine.course.labs import convolution as lab
    from engine.course import formulas, plot, render, toc, ui     # a cheat sheet

- :mod:`.toc`: the table of contents (every page's id, title, file, topics) and the links between
  pages;
- :mod:`.labs`: one module per notebook, named after it, holding that notebook's computations;
- :mod:`.plot`: the one visual language (palette with meanings, the shared charts);
- :mod:`.ui` and :mod:`.exercises`: the verdict callout, the progress callback, answer checking;
- :mod:`.graph`: the computation graph a notebook draws and steps through;
- :mod:`.formulas`: every formula row of the cheat sheets, as data, checked against the engine;
- :mod:`.widgets`: the drag-and-draw controls (issue 15) and their values as NumPy;
- :mod:`.checkpoints`: the trained default models the pages show on open (``make checkpoints``).

The library never imports from here (tests/engine/test_layers.py checks it).

Every submodule is imported below, eagerly and by name, for the reason ``engine/__init__.py``
imports the library's: ``marimo export html-wasm`` bundles the files that Ruff's static import
graph reaches from a notebook, and all pages must share one wheel holding the whole package.
Ruff reaches this file only when a page imports a name defined here (``from engine.course import
plot`` resolves to plot.py alone), so the helpers every page uses are re-exported here and every
page imports at least one of them (``metadata``, for its METADATA) (tests/site/test_site.py resolves each page as marimo does).
None of this is heavy: marimo, Altair, Matplotlib, Pillow and the widget packages are imported inside
the functions that need them (a page imports Altair itself, in its setup cell).
"""

import gc

from . import checkpoints, exercises, formulas, graph, labs, plot, toc, ui, widgets  # noqa: F401
from .exercises import check_number
from .formulas import render
from .toc import metadata
from .ui import throttled, verdict

__all__ = ["check_number", "metadata", "render", "throttled", "verdict"]

# Speed: a page's setup cell imports marimo, Altair, NumPy and the engine before this package: some
# 130 000 objects that live as long as the server. Python's full garbage collection walks all of them
# (50-90 ms here), and it falls on whichever slider move happens to allocate past its threshold: a
# control's worst latency. Freezing them once, when the first page of a process imports the course,
# leaves the collector only what pages create afterwards (gc.freeze; frozen objects are never freed,
# which is what imported modules are anyway).
gc.freeze()
