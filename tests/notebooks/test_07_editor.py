"""Notebook 07 in marimo's editor (issue 24): a learner changes the noise schedule's code there,
and the figures that use it follow, without an error.

The test opens 07 in `marimo edit` on a copy of the course, lets it run, then types the page's own
"change this cell" edit of `linear_schedule` (√β evenly spaced, the "scaled linear" schedule) and
runs it with Ctrl+Enter, as a learner does:

- section 1's end values change: ᾱ_T of the linear schedule at T = 100 rises from 2e-05 to
  0.00046, while the cosine schedule's stays as it was;
- every section that opens on a shipped model (made with the schedule as written) says in one line
  that the model was trained with other code and offers its button; pressing **Train the DDPM**
  trains with the edited schedule;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import re

import pytest
from browser_tools import assert_no_errors, changed_reading, editing, press_run_button, replace_cell_code
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "notebooks/07_diffusion.py"
EDITED_SCHEDULE = '''def linear_schedule(T, beta_start=1e-4, beta_end=0.02):
    """The scaled linear schedule: √β_t evenly spaced."""
    betas = np.linspace(beta_start ** 0.5, beta_end ** 0.5, T) ** 2
    return diffusion.Schedule.from_betas(betas, name="linear")'''
FALLBACK = "The shipped model was trained with other code than this page's"


def _end_values(page) -> str:
    """Section 1's line "linear: ᾱ_T = … · cosine: ᾱ_T = …"."""
    return page.locator(".output-area").get_by_text(re.compile(r"linear: ᾱ_T = .* · cosine: ᾱ_T = ")).first.inner_text()


def test_editing_the_schedule_in_the_editor_changes_its_figure_and_retires_the_shipped_models(tmp_path):
    with editing(NOTEBOOK, tmp_path) as (page, log, outputs):
        outputs.get_by_text("trained by the code above and shipped with the course").first.wait_for()
        before = _end_values(page)
        assert "linear: ᾱ_T = 2e-05" in before, before

        replace_cell_code(page, NOTEBOOK, "linear_schedule", EDITED_SCHEDULE)
        assert_no_errors(page, log, "07 after editing linear_schedule")
        after = changed_reading(page, _end_values, before)
        assert "linear: ᾱ_T = 0.00046" in after, after
        assert after.split("cosine")[1] == before.split("cosine")[1]  # the cosine schedule is not the edited cell
        # The sections redraw one after another once the kernel's run is over: wait for all five.
        expect(outputs.get_by_text(FALLBACK)).to_have_count(5, timeout=60_000)  # DDPM, drawing, 1-D, samplers, guidance
        expect(outputs.get_by_text("trained by the code above and shipped with the course")).to_have_count(0)

        press_run_button(
            page,
            log,
            outputs,
            "Train the DDPM",
            "Trained just now by the code above",
            300_000,
            "07's training of the DDPM with the edited schedule",
        )
