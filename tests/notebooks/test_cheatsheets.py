"""The cheat sheets (cheatsheets/*.py): they run headless with no error, export, pass marimo check,
follow the notebook conventions, show every formula row, link the course, and their controls
(including every extreme) never produce a traceback. The hub's filter box narrows the rows.
"""

from __future__ import annotations

import ast
import html
import re

import numpy as np
import pytest
from notebook_driver import (
    ROOT,
    assert_no_error_outputs,
    control_values,
    controls,
    export_html,
    extreme_runs,
    load_app,
    load_module,
    marimo_check,
    output_html,
    output_text,
    run_app,
    run_headless,
)
from oracle import TORCH_VERSION

from engine.course import formulas, toc
from engine.course.formulas import deep_learning as hub
from engine.course.formulas import render

SHEETS = [e.id for e in toc.cheatsheets()]
FOCUSED = [s for s in SHEETS if s != toc.HUB_ID]
HUB = "cheatsheets/deep_learning.py"


def path(sheet: str) -> str:
    return toc.entry(sheet).path


def run(sheet: str, **values):
    outputs, defs = run_app(load_app(path(sheet)), **values)
    assert_no_error_outputs(outputs)
    return outputs, defs


# ----------------------------------------------------------------------------- whole-file checks


@pytest.mark.slow  # a subprocess per sheet
@pytest.mark.parametrize("sheet", SHEETS)
def test_sheet_runs_headless(sheet):
    run_headless(path(sheet))


def test_marimo_check_strict_passes():
    marimo_check("cheatsheets/")


def test_marimo_check_wasm_rules_pass():
    marimo_check("cheatsheets/", select="MW")


@pytest.mark.slow
@pytest.mark.parametrize("sheet", SHEETS)
def test_sheet_exports_to_html(sheet, tmp_path):
    page = export_html(path(sheet), tmp_path / f"{sheet}.html")
    assert toc.entry(sheet).title in html.unescape(page)


@pytest.mark.parametrize("sheet", SHEETS)
def test_sheet_follows_the_notebook_conventions(sheet):
    source = (ROOT / path(sheet)).read_text(encoding="utf-8")
    module = load_module(path(sheet))
    assert '__generated_with = "0.25.2"' in source
    assert "with app.setup:" in source
    assert re.search(r'marimo\.App\([^)]*app_title="[^"]+"', source)
    meta = module.METADATA
    assert meta == toc.metadata(sheet), "METADATA must be toc.metadata(id): the table of contents is the one source"
    assert f'METADATA = metadata("{sheet}")' in source, "METADATA is built in the setup cell, from engine.course"
    tree = ast.parse(source)
    decorators = [
        ast.unparse(d) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for d in node.decorator_list
    ]
    assert "app.function" in decorators
    assert any(d == "app.cell(hide_code=True)" for d in decorators)
    outputs, _ = run(sheet)
    first = output_html(outputs)
    assert re.search(r"<h1[^>]*>[^<]*" + re.escape(meta["name"]), first), "no H1 title"


# ----------------------------------------------------------------------------- content


@pytest.mark.parametrize("sheet", FOCUSED)
def test_focused_sheet_shows_every_row_it_owns(sheet):
    outputs, _ = run(sheet)
    text = output_text(outputs)
    for title, rows in render.sheet_sections(sheet):
        assert title in text
        for r in rows:
            assert r.name in text, f"{sheet}: row {r.id} is not shown"
            assert r.numpy in text and r.engine in text, f"{sheet}: the code of {r.id} is not shown verbatim"
    assert render.LEGEND.split(".")[0] in text


def test_a_focused_sheets_tables_are_converted_once_and_drawn_under_its_panel():
    """formulas.tables converts a sheet's tables on its first run only (a second visitor's page
    reuses them), and the page draws them under the try-it panel."""
    from engine.course.formulas import page

    page.tables.cache_clear()
    for _ in range(2):
        outputs, _ = run("metrics")
        text = output_text(outputs)
        assert text.index("Move the threshold") < text.index(render.LEGEND.split(".")[0])
    assert page.tables.cache_info().misses == 1 and page.tables.cache_info().hits == 1


@pytest.mark.parametrize("sheet", FOCUSED)
def test_no_control_re_sends_a_focused_sheets_tables(sheet):
    """The tables are the longest output of a sheet: they stand in a cell that no control re-runs
    (the cell that makes the controls, placed under the panel), so a slider move sends only its panel."""
    from marimo._ast.app import InternalApp

    app = load_app(path(sheet))
    graph = InternalApp(app).graph
    shown = [cid for cid, cell in graph.cells.items() if "formulas.tables(" in cell.code]
    assert len(shown) == 1, f"{sheet}: one cell shows formulas.tables(...), found {len(shown)}"
    for name in controls(app):
        readers = {cid for cid, cell in graph.cells.items() if name in cell.refs}
        reached = readers.union(*(graph.descendants(cid) for cid in readers))
        assert shown[0] not in reached, f"{sheet}: moving {name} re-runs the cell with the tables"


@pytest.mark.parametrize("sheet", FOCUSED)
def test_focused_sheet_links_back_to_the_hub_and_its_notebooks(sheet):
    outputs, _ = run(sheet)
    page = output_html(outputs)
    assert toc.link(toc.HUB_ID, from_id=sheet, mode="site") in page
    for related in toc.entry(sheet).related:
        assert toc.link(related, from_id=sheet, mode="site") in page


def test_hub_links_all_eight_notebooks_and_every_focused_sheet():
    outputs, _ = run(toc.HUB_ID)
    page = output_html(outputs)
    for e in toc.notebooks():
        assert toc.link(e.id, from_id=toc.HUB_ID, mode="site") in page, e.id
    for sheet in FOCUSED:
        assert toc.link(sheet, from_id=toc.HUB_ID, mode="site") in page, sheet


def test_hub_shows_every_section_the_training_path_and_the_loops():
    outputs, _ = run(toc.HUB_ID)
    text = output_text(outputs)
    for number, section in enumerate(hub.HUB_SECTIONS, start=1):
        assert f"{number}. {section.title}" in text
        for i in section.rows:
            assert formulas.row(i).name in text
    assert "The training path" in text and "backpropagation" in text
    for tip in (
        "Overfit one batch",
        "validation loss climbs while the training loss keeps falling",
        "Check the initial loss",
        "Normalise the inputs",
        "gradcheck",
        "No gradient",
    ):
        assert tip in text
    code = html.unescape(re.sub(r"<[^>]+>", "", output_html(outputs)))  # highlighted code, tags dropped
    assert (
        "loss.backward()" in code
        and "params[name] -= lr * grads[name]" in code
        and "import torch.nn.functional as F" in code
    )


def test_hub_filter_narrows_the_rows_by_name():
    outputs, _ = run(toc.HUB_ID)
    assert "AdamW (decoupled decay)" in output_text(outputs)
    outputs, _ = run(toc.HUB_ID, query="relu")
    text = output_text(outputs)
    assert "ReLU" in text and "Leaky ReLU" in text
    assert "AdamW (decoupled decay)" not in text and "Batch normalisation" not in text
    assert "1. Neuron and dense layer" not in text and "2. Activations" in text
    found = render.search_found("relu")  # what the page's summary counts and lists
    assert [r.id for r in found["here"]] == ["act.relu", "act.leaky_relu"]
    assert found["on_page"] == len({i for s in hub.HUB_SECTIONS for i in s.rows})
    # only on the focused sheets: the derivatives of ReLU and Leaky ReLU, listed on the page
    assert [r.id for r in found["elsewhere"]] == ["act.relu.grad", "act.leaky_relu.grad"]
    assert all(r.name in text for r in found["elsewhere"])
    outputs, _ = run(toc.HUB_ID, query="adamw")
    text = output_text(outputs)
    assert "AdamW (decoupled decay)" in text and "5. Parameter updates" in text
    assert "Leaky ReLU" not in text and "SGD with momentum" not in text


@pytest.mark.parametrize("sheet", SHEETS)
def test_every_control_at_its_extremes_gives_no_traceback(sheet):
    """Every discovered control: all at their extremes together (run buttons pressed), then each
    alone through its minimum, maximum, default and, for text, a 200-character junk string."""
    app = load_app(path(sheet))
    found = controls(app)
    assert found, f"{sheet} has no live control"
    for values in extreme_runs(app):
        outputs, _ = run_app(app, **values)
        assert_no_error_outputs(outputs)
    for name, control in found.items():
        for value in control_values(control):
            outputs, _ = run_app(app, **{name: value})
            assert_no_error_outputs(outputs)


@pytest.mark.parametrize("sheet", SHEETS)
def test_controls_are_grouped_one_cell_per_section(sheet):
    """Two cells in a row that both create controls are one section split in two: a section's
    controls are created in one cell (docs/notebook-convention.md, rule 4)."""
    app = load_app(path(sheet))
    found = set(controls(app))
    app._maybe_initialize()
    per_cell = [set(cd.cell._cell.defs) & found for cd in app._cell_manager.cell_data() if cd.cell is not None]
    for here, after in zip(per_cell, per_cell[1:]):
        assert not (here and after), f"{sheet}: {sorted(here)} and {sorted(after)} are split across two cells"


# ----------------------------------------------------------------------------- live touches


def test_activation_chart_draws_the_rows_formulas_and_autograd_agrees():
    module = load_module(path("activation_functions"))
    x = np.linspace(-4, 4, 101)
    for name in module.CURVES:
        f, df, df_autograd = module.activation_curves(name, x, 0.1)
        assert f.shape == df.shape == df_autograd.shape == x.shape
        formulas.assert_close(df_autograd, df, rtol=1e-9, atol=1e-12, what=name)
    _, defs = run("activation_functions", choice="Leaky ReLU", slope=0.5)
    assert defs["choice"].value == "Leaky ReLU"


def test_loss_chart_gradients_are_bounded_for_robust_losses():
    module = load_module(path("loss_functions"))
    e = np.linspace(-10, 10, 201)
    losses, grads = module.regression_losses(e, 1.0)
    assert np.max(np.abs(grads["MAE"])) == pytest.approx(1.0)
    assert np.max(np.abs(grads["Huber (δ = 1)"])) == pytest.approx(1.0)
    assert np.max(np.abs(grads["MSE"])) == pytest.approx(20.0)
    np.testing.assert_allclose(losses["MSE"], e**2)


def test_derivatives_sheet_checks_every_row_it_shows():
    module = load_module(path("derivatives"))
    for name, row_id in module.SHEET_ROWS.items():
        check = module.run_snippets(row_id, seed=5, with_torch=False)
        assert check["agree"] and list(check["results"]) == ["numpy", "engine"], (
            row_id,
            check["failed"],
            check["disagreement"],
        )
    _, defs = run("derivatives", picked="deriv.log_base.grad", seed=99)
    shown = defs["row_check"]
    assert shown["row"].id == "deriv.log_base.grad" and shown["agree"] and len(shown["results"]) == 2


def test_derivatives_sheet_reports_a_failing_or_disagreeing_snippet():
    """The report draws what run_snippets found: a snippet that raised, or results that differ."""
    module = load_module(path("derivatives"))
    check = module.run_snippets("deriv.div.grad", seed=0, with_torch=False)
    assert check["agree"]
    wrong = {**check, "agree": False, "disagreement": "engine differs"}
    assert "engine differs" in output_text([module.check_report(wrong)])
    failed = {**check, "failed": ("engine", "ValueError: bad shape")}
    assert "ValueError: bad shape" in output_text([module.check_report(failed)])


def test_derivatives_sheet_without_pytorch_says_what_is_missing(monkeypatch):
    """Without PyTorch the button is disabled and names the missing package and its install."""
    monkeypatch.setattr(formulas, "torch_available", lambda: False)
    _, defs = run("derivatives")
    button = defs["torch_button"]
    assert button._component_args["disabled"] is True
    assert f"pip install torch=={TORCH_VERSION}" in button.text  # its label names the install command
    assert defs["row_check"]["agree"] and list(defs["row_check"]["results"]) == ["numpy", "engine"]  # both still run


@pytest.mark.oracle
def test_derivatives_sheet_runs_pytorch_on_request():
    from oracle import require_torch

    require_torch()
    module = load_module(path("derivatives"))
    check = module.run_snippets("deriv.div.grad", seed=1, with_torch=True)
    assert check["agree"] and list(check["results"]) == ["numpy", "engine", "torch"]


def test_optimizer_chart_lines_and_dots_agree():
    module = load_module(path("optimizers"))
    for steps in (10, 60, 200):
        formula, scheduler = module.schedule_curves(steps, 0.3)
        assert len(formula) == len(scheduler) == 5
        for (name, line), dots in zip(formula.items(), scheduler.values()):
            assert line.shape == (steps,)
            formulas.assert_close(dots, line, rtol=1e-7, atol=1e-12, what=f"{name} over {steps} steps")


def test_metrics_report_matches_the_threshold():
    module = load_module(path("metrics"))
    y, s = module.scored_examples()
    low, high = module.threshold_report(y, s, -10.0), module.threshold_report(y, s, 10.0)
    assert low["recall"] == 1.0 and low["predicted positives"] == len(y)
    assert high["predicted positives"] == 0 and high["precision"] == 0.0
    assert low["ROC-AUC"] == high["ROC-AUC"] > 0.8
    outputs, defs = run("metrics", threshold=4.5)  # the slider's top: nothing is called positive
    assert defs["shown_metrics"]["predicted positives"] == 0 and defs["shown_metrics"]["precision"] == 0.0
    assert "data-kind='&quot;warn&quot;'" in output_html(outputs)  # and the page warns that precision is 0/0


def test_tensor_shape_calculators_warn_instead_of_failing():
    module = load_module(path("tensor_shapes"))
    assert "= 16" in output_text([module.conv_report(32, 3, 2, 1, 1, 1)])
    bad = output_text([module.conv_report(1, 11, 1, 0, 1, 0)])
    assert "conv_output_size" in bad
    assert "divisible" in output_text([module.attention_report(2, 4, 100, 3)])
    assert "[2, 8, 4, 4]" in output_text([module.attention_report(2, 4, 64, 8)])


@pytest.mark.slow
def test_hub_run_buttons_train_the_loops_and_check_every_row():
    _, defs = run(toc.HUB_ID, loop_button=True, check_button=True)
    assert all(defs["loop_results"][backend]["loss"] < 0.1 for backend in ("numpy", "engine")), defs["loop_results"]
    assert defs["rows_agreeing"] == len(formulas.ROWS) and defs["rows_failing"] == []


@pytest.mark.parametrize("k, scale", [(2, 0.0), (10, 0.1), (1000, 10.0)])
def test_hub_initial_loss_check_shows_the_engines_value(k, scale):
    from engine.course.labs import losses as losses_lab

    outputs, defs = run("deep_learning", n_classes=k, logit_scale=scale)
    expected, ln_k = losses_lab.initial_loss(k, scale)
    assert defs["initial"] == pytest.approx(expected)
    assert f"initial loss {expected:.3f}" in output_text(outputs)
    if scale <= 0.1:
        assert abs(expected - ln_k) < 0.1 * ln_k  # small logits: the loss starts at ln K
    else:
        assert expected > 2 * ln_k  # large logits: confidently wrong from the start
