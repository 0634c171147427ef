"""Notebook 03 in marimo's editor (issue 24): a learner edits the training step, and the page no
longer shows the shipped model as if their code had made it.

One `marimo edit` server (as `make edit` starts it, ``--headless --no-token``) on a copy of the
course, so that what the editor saves never lands in the working tree. The test opens 03, lets it
run, then types the page's own "change this cell" edit of `train_step` (delete
``optimizer.zero_grad()``) and runs it with Ctrl+Enter, as a learner does:

- before, the playground says its figures come from the shipped checkpoint;
- after, it says in one line that the shipped model was trained with other code and offers
  **train**, in the playground and in the overfit check; pressed, **train** runs the edited loop;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import inspect
import os
import re
import shutil

import pytest
from browser_tools import (
    assert_no_errors,
    editor_run_all,
    free_port,
    make_command,
    open_page,
    served,
)
from notebook_driver import ROOT, load_app, load_module
from oracle import require_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 180_000  # every cell of the notebook on a busy 2-core machine
NOTEBOOK = "notebooks/03_backprop.py"
# the page's prompt made on the cell's own code (the editor shows it without its decorator)
SOURCE = "\n".join(line for line in inspect.getsource(load_module(NOTEBOOK).train_step).splitlines()
                   if not line.startswith("@"))
EDITED_TRAIN_STEP = SOURCE.replace("    optimizer.zero_grad()\n", "")


def _settle(page, completed: int) -> None:
    page.wait_for_function(f"() => __mw.idleAfter({completed})", timeout=RUN_TIMEOUT_MS, polling=100)


def test_editing_train_step_in_the_editor_falls_back_from_the_shipped_model(tmp_path):
    assert EDITED_TRAIN_STEP != SOURCE, "train_step no longer calls optimizer.zero_grad(): update the page's prompt"
    executable = require_browser()
    copy = tmp_path / "course"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "__marimo__")
    for name in ("engine", "notebooks"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    log = tmp_path / "edit.log"
    command = make_command("edit", free_port()) + ["--headless", "--no-token"]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    with served(command, copy, log, env=env) as base, open_page(executable) as page:
        page.goto(base + f"?file={NOTEBOOK}", wait_until="commit")
        page.wait_for_function("() => window.__mw && __mw.kernelReady", timeout=RUN_TIMEOUT_MS, polling=100)
        editor_run_all(page, RUN_TIMEOUT_MS)
        page.wait_for_function("() => __mw.completed > 0 && __mw.busy() === 0"
                               " && __mw.cells.every(id => __mw.status[id] === 'idle')",
                               timeout=RUN_TIMEOUT_MS, polling=100)
        assert_no_errors(page, log, "03 on open")
        page.get_by_text(re.compile(r"come from the shipped checkpoint")).first.wait_for()

        # marimo gives a cell the same id in the editor as when the file is loaded here
        cell_id = next(c.cell_id for c in load_app(NOTEBOOK)._cell_manager.cell_data() if c.name == "*train_step")
        cell = page.locator(f'[data-cell-id="{cell_id}"]')
        cell.scroll_into_view_if_needed()  # it draws a cell's code editor once the cell is in view
        code = cell.locator(".cm-content").first
        assert code.inner_text().lstrip().startswith("def train_step("), code.inner_text()[:200]
        code.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(EDITED_TRAIN_STEP)
        completed = page.evaluate("() => __mw.completed")
        page.keyboard.press("Control+Enter")
        _settle(page, completed)
        assert_no_errors(page, log, "03 after editing train_step")
        fallback = page.get_by_text(re.compile(r"The shipped model was trained with other code than this page"))
        fallback.first.wait_for()
        assert fallback.count() == 2  # under the playground's map and in the overfit check
        assert page.get_by_text(re.compile(r"come from the shipped checkpoint")).count() == 0

        train = page.get_by_role("button", name=re.compile(r"^\s*train\s*$"))
        train.scroll_into_view_if_needed()
        completed = page.evaluate("() => __mw.completed")
        train.click()
        _settle(page, completed)
        assert_no_errors(page, log, "03 after training with the edited train_step")
        page.get_by_text(re.compile(r"Trained just now by the lesson cells above")).first.wait_for()
