"""What a focused cheat sheet shows under its header: its live panel, then its formula tables.

Every focused sheet ends the same way: a try-it panel (a caption, the controls, what they
change) and the sheet's tables. :func:`try_it_and_tables` draws both in the panel's cell, so a
sheet holds that layout once instead of repeating a closing cell. The tables are converted once
per sheet and reused: a control re-runs the panel's cell, and the tables never change.
"""

from __future__ import annotations

import functools

from . import render


@functools.lru_cache(maxsize=None)
def _tables(sheet: str):
    """``mo.md`` of the sheet's legend and tables (5 to 50 ms to convert: done once a sheet)."""
    import marimo as mo

    return mo.md(render.sheet_md(sheet))


def try_it_and_tables(sheet: str, caption: str, controls, *shown):
    """The try-it panel of ``sheet`` (``caption`` in markdown, the ``controls`` in a row, or a
    list of rows, and what they change below them), with the sheet's formula tables under it."""
    import marimo as mo

    from .. import ui

    return mo.vstack([ui.try_it(caption, controls, *shown), _tables(sheet)], gap=1.5)
