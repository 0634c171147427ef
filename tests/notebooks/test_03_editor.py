"""Notebook 03 in marimo's editor (issue 24): a learner edits the training step, and the page no
longer shows the shipped model as if their code had made it.

One `marimo edit` server on a copy of the course (``browser_tools.notebook_in_editor``), so that
what the editor saves never lands in the working tree. The test opens 03, lets it run, then types the page's own "change this cell" edit of `train_step` (delete
``optimizer.zero_grad()``) and runs it with Ctrl+Enter, as a learner does:

- before, the playground says its figures come from the shipped checkpoint;
- after, it says in one line that the shipped model was trained with other code and offers
  **train**, in the playground and in the overfit check; pressed, **train** runs the edited loop;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import re

import pytest
from browser_tools import assert_no_errors, edited_cell_code, editing, press_and_wait, replace_cell_code

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 180_000  # every cell of the notebook on a busy 2-core machine
NOTEBOOK = "notebooks/03_backprop.py"


def test_editing_train_step_in_the_editor_falls_back_from_the_shipped_model(tmp_path):
    edited = edited_cell_code(NOTEBOOK, "train_step", "    optimizer.zero_grad()\n", "")  # the page's prompt
    with editing(NOTEBOOK, tmp_path, RUN_TIMEOUT_MS) as (page, log, _):
        page.get_by_text(re.compile(r"come from the shipped checkpoint")).first.wait_for()

        replace_cell_code(page, NOTEBOOK, "train_step", edited, RUN_TIMEOUT_MS)
        assert_no_errors(page, log, "03 after editing train_step")
        fallback = page.get_by_text(re.compile(r"The shipped model was trained with other code than this page"))
        fallback.first.wait_for()
        assert fallback.count() == 2  # under the playground's map and in the overfit check
        assert page.get_by_text(re.compile(r"come from the shipped checkpoint")).count() == 0

        train = page.get_by_role("button", name=re.compile(r"^\s*train\s*$"))
        train.scroll_into_view_if_needed()
        press_and_wait(page, train, RUN_TIMEOUT_MS, "03: train with the edited train_step")
        assert_no_errors(page, log, "03 after training with the edited train_step")
        page.get_by_text(re.compile(r"Trained just now by the lesson cells above")).first.wait_for()
