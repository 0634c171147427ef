"""Notebook 02 in marimo's editor (issue 24): a learner changes a loss's code there, and the
figures that use it follow, without an error.

The test opens 02 in `marimo edit` on a copy of the course (browser_tools.notebook_in_editor), lets
it run, then types two of the page's own "change this cell" edits and runs each with Ctrl+Enter, as
a learner does:

- `huber` without the ½ of its quadratic branch: the largest gap between autograd and the formula,
  printed under section 1's charts, grows from rounding (below 1e-15) to δ = 1;
- `pinball` with its two weights swapped: the shipped fits were made by other code, so section 3
  says so in one line and shows dashes; its button fits with the edited loss, and at τ = 0.9 the
  constant becomes the 0.1-quantile of the targets (about 0.5);
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import re

import pytest
from browser_tools import assert_no_errors, edited_cell_code, editing, press_and_wait, replace_cell_code

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "notebooks/02_losses.py"


def test_editing_losses_in_the_editor_changes_their_figures_and_retires_the_shipped_fits(tmp_path):
    huber = edited_cell_code(NOTEBOOK, "huber", "0.5 * e * e, delta", "e * e, delta")
    pinball = edited_cell_code(
        NOTEBOOK, "pinball", "tau * F.relu(e) + (1 - tau) * F.relu(-e)", "(1 - tau) * F.relu(e) + tau * F.relu(-e)"
    )
    with editing(NOTEBOOK, tmp_path) as (page, log, outputs):
        gap = re.compile(r"Largest gap between the autograd dots and the formula: (\S+)\.")
        outputs.get_by_text(gap).first.wait_for()
        assert float(gap.search(outputs.get_by_text(gap).first.inner_text()).group(1)) < 1e-15
        outputs.get_by_text("fitted in advance by this page's fit_constant").first.wait_for()

        replace_cell_code(page, NOTEBOOK, "huber", huber)
        assert_no_errors(page, log, "02 after editing huber")
        outputs.get_by_text(re.compile(r"the formula: 1\.0e\+00\.")).first.wait_for()  # δ = 1

        replace_cell_code(page, NOTEBOOK, "pinball", pinball)
        assert_no_errors(page, log, "02 after editing pinball")
        outputs.get_by_text("trained with other code than this page's").first.wait_for()
        assert outputs.get_by_text("fitted in advance by this page's fit_constant").count() == 0

        press_and_wait(
            page,
            outputs.get_by_role("button", name="fit with this page's code").first,
            300_000,
            "fitting with the edited pinball",
        )
        outputs.get_by_text("fitted just now by your code").first.wait_for()
        row = outputs.get_by_text(re.compile(r"pinball τ = 0\.9 ↔ asymmetric Laplace")).first
        fitted = float(
            re.search(r"asymmetric Laplace\s+(\S+)", row.locator("xpath=ancestor::tr").inner_text()).group(1)
        )
        assert 0.45 < fitted < 0.6, fitted
        assert_no_errors(page, log, "02 after fitting with the edited pinball")
