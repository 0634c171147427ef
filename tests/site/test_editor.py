"""The course in marimo's editor (`make edit`), driven in Chromium with Playwright.

One `marimo edit` server (the command `make edit` prints, plus ``--headless --no-token``) serves a
copy of the repository's notebooks, cheat sheets and engine, so that nothing the editor might save
lands in the working tree. One browser page opens every notebook of the table of contents with
``?file=...`` (the cheat sheets, cheap pages with no expensive cells, are opened under `marimo run`
by test_browser.py, and left out here to keep the CI short), lets the editor run every cell on
open (the copy has the repository's pyproject.toml, which sets ``runtime.auto_instantiate``:
marimo 0.25's editor otherwise runs nothing until "Run all stale cells" is pressed, which
``editor_run_all`` then does), and checks that

- every cell ran, none shows an error output (other than marimo's deliberate stops) and none
  wrote a traceback to stderr;
- the page raised no JavaScript error;

and at the end that the editor sessions left every file as it was (marimo saves nothing on open).
The waits follow the kernel's websocket messages (tests/support/browser_tools.py), never sleeps.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from browser_tools import (
    INTENTIONAL_ERRORS,
    ROOT,
    editor_run_all,
    free_port,
    make_command,
    open_page,
    served,
)
from oracle import require_browser

from engine.course import toc

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 180_000  # every cell of one notebook on a busy 2-core machine
COPIED = ("engine", "notebooks", "cheatsheets")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for name in ("notebooks", "cheatsheets") for path in sorted((folder / name).rglob("*.py"))}


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    """Base URL of `make edit`'s server on a copy of the course, and the copy's folder."""
    require_browser()
    copy = tmp_path_factory.mktemp("editor") / "course"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "__marimo__")
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    before = _snapshot(copy)
    log = copy.parent / "edit.log"
    command = make_command("edit", free_port()) + ["--headless", "--no-token"]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # as `make edit`
    with served(command, copy, log, env=env) as base:
        yield {"base": base, "copy": copy, "before": before, "log": log}


@pytest.fixture(scope="module")
def editor_page():
    with open_page(require_browser()) as page:
        yield page


def _state(page) -> dict:
    return page.evaluate("() => window.__mw ? {status: __mw.status, cells: __mw.cells, "
                         "completed: __mw.completed, errors: __mw.errors, stderr: __mw.stderr} : null")


@pytest.mark.parametrize("entry", toc.notebooks(), ids=lambda e: e.id)
def test_editor_runs_every_cell_without_error(entry, editor, editor_page):
    """Opened as `make edit` opens it, the notebook runs every cell by itself, with no error."""
    assert (ROOT / entry.path).is_file(), f"{entry.path} is in the table of contents but missing"
    page = editor_page
    page.page_errors.clear()
    started = time.monotonic()
    page.goto("about:blank")
    page.goto(editor["base"] + f"?file={entry.path}", wait_until="commit")
    page.wait_for_function("() => window.__mw && __mw.kernelReady", timeout=RUN_TIMEOUT_MS, polling=100)
    completed = page.evaluate("() => __mw.completed")
    # pyproject.toml sets runtime.auto_instantiate: the kernel runs every cell on open by itself
    # (editor_run_all presses nothing), possibly before `completed` was read: count from 0.
    assert editor_run_all(page, RUN_TIMEOUT_MS) is None, (
        "the editor waits for 'Run all stale cells': pyproject.toml's runtime.auto_instantiate is not in effect")
    completed = 0
    # Every cell of the notebook reports a status and none is queued or running any more.
    try:
        page.wait_for_function(
            f"() => __mw.completed > {completed} && __mw.busy() === 0"
            " && __mw.cells.every(id => __mw.status[id] === 'idle')",
            timeout=RUN_TIMEOUT_MS, polling=100)
    except Exception as error:  # playwright's TimeoutError: say what the kernel was doing
        state = _state(page)
        not_idle = {c: state["status"].get(c) for c in state["cells"] if state["status"].get(c) != "idle"}
        raise AssertionError(f"{entry.id}: cells not run within {RUN_TIMEOUT_MS / 1000:.0f} s: "
                             f"{not_idle}") from error
    state = _state(page)
    errors = [e for e in state["errors"] if e["type"] not in INTENTIONAL_ERRORS]
    assert not errors, f"{entry.id}: error output in the editor: {errors}"
    tracebacks = [s for s in state["stderr"] if "Traceback" in s["text"]]
    assert not tracebacks, f"{entry.id}: a cell wrote a traceback to stderr: {tracebacks}"
    # The editor marks a cell whose output is an error with the class has-error.
    marked = page.locator(".marimo-cell.has-error").evaluate_all("els => els.map(e => e.dataset.cellId)")
    assert not marked, f"{entry.id}: cells marked as errors on the page: {marked}"
    assert not page.page_errors, f"{entry.id}: JavaScript page errors {page.page_errors}"
    print(f"{entry.id}: {len(state['cells'])} cells run in the editor in {time.monotonic() - started:.1f} s")


def test_editor_sessions_saved_nothing(editor, editor_page):
    """Opening and running every page in the editor left the files exactly as they were."""
    after = _snapshot(editor["copy"])
    changed = sorted(name for name in after if after[name] != editor["before"].get(name))
    assert not changed and set(after) == set(editor["before"]), (
        f"marimo edit rewrote {changed} or created {sorted(set(after) - set(editor['before']))}")
