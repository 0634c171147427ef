"""Every notebook follows docs/notebook-convention.md: it runs headless, passes marimo's checks,
exports, takes its METADATA from the table of contents, and survives every control at its extremes.

Nothing here lists a notebook's controls by hand: they are discovered (tests/support/
notebook_driver.py), so a new control is driven without touching this file.
"""

from __future__ import annotations

import re
import traceback

import pytest
from notebook_driver import (
    ROOT,
    assert_no_error_outputs,
    controls,
    export_html,
    exported_outputs,
    extreme_runs,
    load_app,
    load_module,
    marimo_check,
    notebook_path,
    output_text,
    run_app,
    run_buttons,
    run_headless,
    script_cells,
)

from engine.course import exercises, toc

NOTEBOOKS = [e.id for e in toc.notebooks()]


@pytest.mark.slow  # a subprocess per page
@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_runs_headless(nb):
    seconds = run_headless(notebook_path(nb))
    print(f"{nb}: headless run {seconds:.1f} s")


def test_marimo_check_strict_and_wasm_rules():
    paths = [notebook_path(nb) for nb in NOTEBOOKS]
    marimo_check(*paths)
    marimo_check(*paths, select="MW")


@pytest.mark.slow  # marimo export runs the page in a subprocess
@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_exports_to_html(nb, tmp_path):
    page = export_html(notebook_path(nb), tmp_path / f"{nb}.html")
    assert toc.entry(nb).title in page
    # Complete on open, as the static page shows it: no cell asks for a button press first.
    waiting = [cell for cell, data in exported_outputs(page).items() if re.search(r"\bPress\b", str(data))]
    assert not waiting, f"{nb}: the static page shows 'Press …' instead of a figure in cells {waiting}"


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_metadata_comes_from_the_toc_title_and_navigation(nb):
    module = load_module(notebook_path(nb))  # runs the setup cell only
    assert module.METADATA == toc.metadata(nb), "METADATA must be toc.metadata(id), in the setup cell"
    assert module.app._config.app_title.startswith(nb[:2])
    outputs, _ = run_app(load_app(notebook_path(nb)))
    assert_no_error_outputs(outputs)
    assert toc.entry(nb).title in output_text(outputs)
    html_outputs = " ".join(str(getattr(o, "text", "")) for o in outputs)
    for url in re.findall(r"\]\(([^)]+)\)", toc.nav_md(nb, mode="site")):
        assert url in html_outputs, f"{nb} does not link {url}"
    source = (ROOT / notebook_path(nb)).read_text()
    assert '__generated_with = "0.25.2"' in source and "with app.setup:" in source
    assert source.count("hide_code=True") >= 4


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_controls_and_graded_exercises(nb):
    """At least four controls and three graded exercises, each built once beside its answer box."""
    app = load_app(notebook_path(nb))
    found = controls(app)
    # one box (answer_<what>) or a section's boxes in one dictionary (answers_<section>)
    answers = sorted(n for n in found if n.startswith(("answer_", "answers_")))
    assert len(found) - len(answers) >= 4, sorted(found)
    boxes = sum(len(found[n].elements) if n.startswith("answers_") else 1 for n in answers)
    assert boxes >= 3, answers
    app._maybe_initialize()
    _, defs = run_app(app)

    def is_built(value):
        many = isinstance(value, dict) and value
        return isinstance(value, exercises.Exercise) or (many and all(map(is_built, value.values())))

    for cd in app._cell_manager.cell_data():
        names = set(cd.cell._cell.defs)
        for box in names & set(answers):
            built = [n for n in names if is_built(defs.get(n))]
            assert built, f"{nb}: the cell defining {box} must build its exercises (and read no answer)"
            assert box not in cd.cell._cell.refs


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_control_at_its_extremes(nb):
    app = load_app(notebook_path(nb))
    for values in extreme_runs(app):
        outputs, _ = run_app(app, **values)
        assert_no_error_outputs(outputs)


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_run_button_runs_to_the_end(nb):
    app = load_app(notebook_path(nb))
    for button in run_buttons(app):
        outputs, _ = run_app(app, **{button: True})
        assert_no_error_outputs(outputs)


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_the_same_in_your_own_script_runs_and_leaves_no_names(nb):
    app = load_app(notebook_path(nb))
    cells = script_cells(app)
    assert len(cells) == 1, f"{nb}: one 'same in your own script' cell (def _script(): ...)"
    cell = cells[0]
    assert not cell.cell._cell.defs, f"{nb}: the script cell leaves names {cell.cell._cell.defs}"
    assert not cell.config.hide_code, "the script cell's code is what the learner reads"
    outputs, _ = run_app(app)
    ids = [cd.cell_id for cd in app._cell_manager.cell_data() if cd.cell_id != "setup"]
    index = ids.index(cell.cell_id)  # outputs come one per cell, the setup cell excluded
    shown = output_text([outputs[index]])
    assert shown.strip(), f"{nb}: the script cell shows what it computed"


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_complete_on_open_no_cell_stops(nb, monkeypatch):
    """Every figure is on the page when it opens (issue 16). ``marimo run``, the static export and
    the WebAssembly page all run the cells with their defaults, so: no ``mo.stop`` fires (a stopped
    cell leaves its descendants showing marimo's "ancestor stopped" notice, or nothing, on the
    static pages), and no output asks the learner to press a button before the figure appears."""
    from marimo._runtime.control_flow import MarimoStopError

    stops = []
    original_init = MarimoStopError.__init__

    def record(self, *args, **kwargs):
        cell = [f for f in traceback.extract_stack() if "__marimo__" in f.filename][-1:]
        stops.append(
            f"cell {cell[0].filename.split('__marimo__')[-1]} line {cell[0].lineno}: {cell[0].line}" if cell else "?"
        )
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(MarimoStopError, "__init__", record)
    outputs, _ = run_app(load_app(notebook_path(nb)))
    assert not stops, f"mo.stop fires when the page opens, at {stops}: show a default result instead"
    pending = re.findall(r"[^.\n]*\bPress\b[^.\n]*", output_text(outputs))
    assert not pending, f"{nb} asks for a button press before showing a figure: {pending}"
