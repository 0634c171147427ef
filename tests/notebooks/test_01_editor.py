"""Notebook 01 in marimo's editor (issue 24): a learner changes a lesson cell's code there, and the
figures that use it follow, without an error.

The test opens 01 in `marimo edit` on a copy of the course, lets it run, then types a new body for
the `block` cell (the residual branch scaled by 0.2, the page's own "change this cell" prompt) and
runs it with Ctrl+Enter, as a learner does:

- the table of section 5, which runs every variant of the stack through `block`, changes its
  residual row (the plain row, which has no branch, stays as it was);
- the shipped weight-scale sweep, made by the page's own `block`, is no longer shown: the page
  says so in one line and offers the button that runs the sweep with the edited code; pressing it
  draws the sweep again;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import re

import pytest
from browser_tools import assert_no_errors, changed_reading, editing, press_run_button, replace_cell_code
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "notebooks/01_activations.py"
EDITED_BLOCK = '''def block(a, w, phi, residual=False, pre_norm=False):
    """One layer, its residual branch scaled by 0.2."""
    h = F.layer_norm(a, (a.shape[-1],)) if pre_norm else a
    z = h @ w.T
    out = phi(z)
    return z, (a + 0.2 * out if residual else out)'''


def _variant_rows(page) -> dict:
    """{variant: (first/last gradient ratio, fate)} as the page's table of section 5 shows them."""
    table = page.locator("table").filter(has_text="residual + pre-norm").first.inner_text()
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) >= 3 and cells[0] in ("plain", "residual", "pre-norm", "residual + pre-norm"):
            rows[cells[0]] = (float(cells[1]), cells[2])
    assert len(rows) == 4, f"the variants table reads {table!r}"
    return rows


def test_editing_block_in_the_editor_changes_the_table_and_the_sweep_falls_back(tmp_path):
    with editing(NOTEBOOK, tmp_path) as (page, log, outputs):
        outputs.get_by_text("shipped with the course, made by this page's").first.wait_for()
        before = _variant_rows(page)

        replace_cell_code(page, NOTEBOOK, "block", EDITED_BLOCK)
        assert_no_errors(page, log, "01 after editing block")
        after = changed_reading(page, _variant_rows, before)
        assert after["plain"] == before["plain"]  # no residual branch, nothing to scale
        assert after["residual"][0] < before["residual"][0] / 10, (before, after)
        assert after["residual"][1] == "stays in range"
        outputs.get_by_text(re.compile("the shipped sweep was made by other code than this page's")).first.wait_for()
        # One stays: section 6's dead-ReLU runs, whose network does not use `block`.
        expect(outputs.get_by_text("shipped with the course, made by this page's")).to_have_count(1, timeout=60_000)

        press_run_button(
            page,
            log,
            outputs,
            "run the sweep with your code",
            "computed just now with your code",
            180_000,
            "01's sweep with the edited block",
        )
