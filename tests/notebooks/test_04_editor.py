"""Notebook 04 in marimo's editor (issue 24): a learner changes an update rule's code there, and
every figure that uses it follows, without an error.

One `marimo edit` server (as `make edit` starts it, ``--headless --no-token``) on a copy of the
course, so that what the editor saves never lands in the working tree. The test opens 04, lets it
run, then types a new body for the `adam` cell (the page's own "change this cell" prompt: correct
only the first moment) and runs it with Ctrl+Enter, as a learner does:

- section 3 says Adam's first step is now 31.623 η "with the correction" (1.000 η before);
- the race's table changes its Adam row; its SGD row, which does not use `adam`, stays;
- no cell shows an error, and nothing reached stderr.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

from browser_tools import assert_no_errors, editor_run_all, free_port, make_command, open_page, served
from notebook_driver import ROOT, load_app
from oracle import require_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 180_000  # every cell of the notebook on a busy 2-core machine
NOTEBOOK = "notebooks/04_optimizers.py"
EDITED_ADAM = '''def adam(theta, g, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, bias_correction=True):
    """Adam correcting only its first moment."""
    beta1, beta2 = betas
    t = state["t"] = state.get("t", 0) + 1
    state["m"] = beta1 * state.get("m", 0.0) + (1 - beta1) * g
    state["v"] = beta2 * state.get("v", 0.0) + (1 - beta2) * g * g
    m_hat, v_hat = state["m"], state["v"]
    if bias_correction:
        m_hat, v_hat = m_hat / (1 - beta1**t), v_hat
    return theta - lr * weight_decay * theta - lr * m_hat / (np.sqrt(v_hat) + eps)'''


def _race_rows(page) -> dict:
    """{optimizer: the rest of its row} in the race's table (η at step 0, final f(θ), distance)."""
    table = page.locator("table").filter(has_text="distance to θ*").first.inner_text()
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("\t")]
        if cells and cells[0] in ("SGD", "momentum", "Nesterov", "RMSprop", "Adam", "AdamW"):
            rows[cells[0]] = tuple(cells[1:])
    assert len(rows) == 6, f"the race's table reads {table!r}"
    return rows


def test_editing_adam_in_the_editor_changes_its_figures(tmp_path):
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
        assert_no_errors(page, log, "04 on open")
        page.get_by_text(re.compile(r"First step: 1\.000 η with the correction")).first.wait_for()
        before = _race_rows(page)

        # marimo gives a cell the same id in the editor as when the file is loaded here
        cell_id = next(c.cell_id for c in load_app(NOTEBOOK)._cell_manager.cell_data() if c.name == "*adam")
        cell = page.locator(f'[data-cell-id="{cell_id}"]')
        cell.scroll_into_view_if_needed()  # it draws a cell's code editor once the cell is in view
        code = cell.locator(".cm-content").first
        assert code.inner_text().lstrip().startswith("def adam("), code.inner_text()[:200]
        code.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(EDITED_ADAM)
        completed = page.evaluate("() => __mw.completed")
        page.keyboard.press("Control+Enter")
        page.wait_for_function(f"() => __mw.idleAfter({completed})", timeout=RUN_TIMEOUT_MS, polling=100)
        assert_no_errors(page, log, "04 after editing adam")

        page.get_by_text(re.compile(r"First step: 31\.623 η with the correction")).first.wait_for()
        after = _race_rows(page)
        assert after["SGD"] == before["SGD"] and after["momentum"] == before["momentum"]
        assert after["Adam"] != before["Adam"], (before, after)
