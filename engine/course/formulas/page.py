"""What a focused cheat sheet shows below its live panel: its formula tables.

Every focused sheet ends the same way: a try-it panel (:func:`engine.course.ui.try_it`: a caption,
the controls, what they change) in the cell its controls re-run, then the sheet's tables in a cell
of their own that no control reaches. The tables are long (every row's formula and three spellings
of its code), so re-sending them with the panel at every slider move cost the page more than the
panel itself; converted once per sheet and reused.
"""

from __future__ import annotations

import functools

from . import render


@functools.lru_cache(maxsize=None)
def tables(sheet: str):
    """``mo.md`` of the sheet's legend and formula tables (5 to 50 ms to convert: done once a sheet)."""
    import marimo as mo

    return mo.md(render.sheet_md(sheet))
