"""Notebook 04 in marimo's editor (issue 24): a learner changes an update rule's code there, and
every figure that uses it follows, without an error.

The notebook opens in `marimo edit` on a copy of the course (browser_tools.notebook_in_editor),
so that what the editor saves never lands in the working tree. The test opens 04, lets it
run, then types a new body for the `adam` cell (the page's own "change this cell" prompt: correct
only the first moment) and runs it with Ctrl+Enter, as a learner does:

- section 3 says Adam's first step is now 31.623 η "with the correction" (1.000 η before);
- the race's table changes its Adam row; its SGD row, which does not use `adam`, stays;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import re

import pytest
from browser_tools import assert_no_errors, edited_cell_code, editing, replace_cell_code

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "notebooks/04_optimizers.py"


def _race_rows(page) -> dict:
    """{optimizer: the rest of its row} in the race's table (η at step 0, final f(θ), distance)."""
    table = page.locator("table").filter(has_text="distance to θ*").first.inner_text()
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("\t")]
        if cells and cells[0] in ("SGD", "momentum", "Nesterov", "RMSprop", "Adam", "AdamW"):
            rows[cells[0]] = tuple(cells[1:])
    assert len(rows) == 5, f"the race's table reads {table!r}"  # AdamW joins only when picked
    return rows


def test_editing_adam_in_the_editor_changes_its_figures(tmp_path):
    edited_adam = edited_cell_code(NOTEBOOK, "adam", "v_hat / (1 - beta2**t)", "v_hat")  # the page's prompt
    with editing(NOTEBOOK, tmp_path) as (page, log, _):
        page.get_by_text(re.compile(r"First step: 1\.000 η with the correction")).first.wait_for()
        before = _race_rows(page)

        replace_cell_code(page, NOTEBOOK, "adam", edited_adam)
        assert_no_errors(page, log, "04 after editing adam")
        page.get_by_text(re.compile(r"First step: 31\.623 η with the correction")).first.wait_for()
        after = _race_rows(page)
        assert after["SGD"] == before["SGD"] and after["momentum"] == before["momentum"]
        assert after["Adam"] != before["Adam"], (before, after)
