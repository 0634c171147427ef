"""Notebook 05 in marimo's editor (issue 24): a learner changes the convolution and the CNN there,
as the page's two "change this cell" prompts say, and the page follows without an error.

The notebook opens in `marimo edit` on a copy of the course (browser_tools.notebook_in_editor), so
that what the editor saves never lands in the working tree. The test types each edit over its
cell's own code and runs it with Ctrl+Enter, as a learner does:

- `conv2d_loops` flipping its kernel: its difference to `F.conv2d`, shown under the cell, goes
  from rounding (below 1e-12) to the size of the outputs (above 1);
- `CNN.first_layer` with `F.tanh`: section 7 no longer says its CNN ships with the course but, in
  one line, that the shipped model was trained with other code; Train the CNN, above that line,
  then trains the edited CNN;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import re
import time

import pytest
from browser_tools import assert_no_errors, edited_cell_code, editing, replace_cell_code

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "notebooks/05_convolution.py"


def _loops_gap(page, above: float = 0.0, timeout_s: float = 30.0) -> float:
    """The difference shown under conv2d_loops, once it is above ``above`` (or after the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = page.get_by_text("against the engine's F.conv2d").first.inner_text()
        gap = float(re.search(r"largest difference\s*(\d\.\de[+-]\d+)", text).group(1))
        if gap > above or time.monotonic() > deadline:
            return gap
        page.wait_for_timeout(250)


def test_editing_the_convolution_and_the_cnn_in_the_editor(tmp_path):
    # the page's two prompts, made on the cells' current code
    flipped = edited_cell_code(
        NOTEBOOK,
        "conv2d_loops",
        "    c_out, _, k, _ = w.shape",
        "    w = w[:, :, ::-1, ::-1]\n    c_out, _, k, _ = w.shape",
    )
    tanh = edited_cell_code(NOTEBOOK, "CNN", "return F.relu(self.conv1(x))", "return F.tanh(self.conv1(x))")
    with editing(NOTEBOOK, tmp_path) as (page, log, _):
        assert _loops_gap(page) < 1e-12
        # the summary's words as drawn (in the cell's code they carry backticks, so only the output matches)
        shipped = page.get_by_text(re.compile(r"by this page's CNN and train_cnn and ships with the course"))
        shipped.first.wait_for()

        replace_cell_code(page, NOTEBOOK, "conv2d_loops", flipped)
        assert_no_errors(page, log, "05 after editing conv2d_loops")
        assert _loops_gap(page, above=1.0) > 1.0

        replace_cell_code(page, NOTEBOOK, "CNN", tanh)
        assert_no_errors(page, log, "05 after editing CNN")
        page.get_by_text(re.compile(r"The shipped model was trained with other code")).first.wait_for()
        assert shipped.count() == 0
        train = page.get_by_role("button", name="Train the CNN")
        train.scroll_into_view_if_needed()
        train.click()
        page.get_by_text(re.compile(r"trained just now with your settings")).first.wait_for(timeout=180_000)
        assert_no_errors(page, log, "05 after training the edited CNN")
