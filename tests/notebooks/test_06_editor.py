"""Notebook 06 in marimo's editor (issue 24): a learner changes a model class and the attention
function there; the page falls back from the shipped models it no longer fits, and the figures
that use the function follow, without an error.

The notebook opens in `marimo edit` on a copy of the course (browser_tools.notebook_in_editor),
so that what the editor saves never lands in the working tree. Then, typed into the cells and run
with Ctrl+Enter as a learner does:

- `TinyAttention` with a residual connection (same parameter names and shapes): section 5 says in
  one line that the shipped model was trained with other code and shows no map; its Train button
  trains the edited class; section 6's Transformer and its ablations, which do not use the class,
  stay loaded;
- `attention` without `* scale` (the page's first prompt), after that training: section 1's mean
  row entropy changes, section 6 falls back too, and section 5 drops the model its button trained
  with the old code and offers the button again, without training on its own;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import re

import pytest
from browser_tools import (
    assert_no_errors,
    edited_cell_code,
    editing,
    press_run_button,
    replace_cell_code,
    wait_settled,
)
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK = "notebooks/06_attention.py"


def _entropy(page) -> float:
    """Section 1's mean row entropy, as the line above its heatmaps shows it."""
    texts = [area.inner_text() for area in page.locator(".output-area").filter(has_text="mean row entropy").all()]
    found = [m.group(1) for m in (re.search(r"mean row entropy\s*([0-9.]+)\s*nats \(uniform", t) for t in texts) if m]
    assert len(found) == 1, texts
    return float(found[0])


def test_editing_a_model_class_and_attention_in_the_editor(tmp_path):
    residual = edited_cell_code(
        NOTEBOOK, "TinyAttention", "return self.out(out), weights", "return self.out(out + h), weights"
    )
    unscaled = edited_cell_code(
        NOTEBOOK, "attention", "scores = q @ k.transpose(-2, -1) * scale", "scores = q @ k.transpose(-2, -1)"
    )
    not_loaded = "so it is not loaded: train with the button to see what your code does"
    with editing(NOTEBOOK, tmp_path) as (page, log, outputs):
        outputs.get_by_text("trained in advance by the cells above").first.wait_for()
        expect(outputs.get_by_text("trained in advance by the cells above")).to_have_count(
            3, timeout=60_000
        )  # 5, 6, ablations
        entropy = _entropy(page)

        replace_cell_code(page, NOTEBOOK, "TinyAttention", residual)
        assert_no_errors(page, log, "06 after editing TinyAttention")
        outputs.get_by_text(
            re.compile("other code than this page's .*TinyAttention`?, so it is not loaded")
        ).first.wait_for()
        expect(outputs.get_by_text("trained in advance by the cells above")).to_have_count(
            2, timeout=60_000
        )  # section 6's two

        press_run_button(
            page,
            log,
            outputs,
            "Train the attention model",
            "Trained just now by the cells above",
            180_000,
            "06's training of the edited TinyAttention",
        )

        # train, then edit: the model the button trained with the old code is dropped with it.
        # Section 5's form is made in the cell that reads the lesson code, so the edit makes a new,
        # unpressed form: the section falls back and offers its button again, and nothing retrains.
        replace_cell_code(page, NOTEBOOK, "attention", unscaled)
        assert_no_errors(page, log, "06 after editing attention")
        assert _entropy(page) < entropy
        outputs.get_by_text(re.compile("other code than this page's `?attention")).first.wait_for()
        expect(outputs.get_by_text("trained in advance by the cells above")).to_have_count(0, timeout=60_000)
        wait_settled(page)
        assert outputs.get_by_text("Trained just now by the cells above").count() == 0
        # section 5's own line (it names TinyAttention, section 6's does not): shown only while its
        # form is unpressed, never while it trains
        outputs.get_by_text(
            re.compile("other code than this page's .*TinyAttention`?, so it is not loaded")
        ).first.wait_for()
        assert outputs.get_by_text(re.compile(not_loaded)).count() >= 2  # section 5 and section 6
        expect(outputs.get_by_role("button", name="Train the attention model").first).to_be_enabled()
        assert_no_errors(page, log, "06 after the edit that follows a training")
