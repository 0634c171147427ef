"""The course's drag widgets in Chromium (issue 15): the mouse drags them in the real notebooks,
served by `make run`'s marimo server, and the output computed from them changes.

- 04_optimizers: dragging the start point (Slider2D) redraws the optimizers' race;
- 05_convolution: a stroke on the digit canvas (Paint) changes the 8x8 digit the CNN reads;
- 08_vae: after training, dragging the latent point (Slider2D) changes the decoded image;
- 02_losses: dragging an outlier puck (ChartPuck) refits the lines: the MSE row of the fit table changes;
- 03_backprop: spraying points on the playground's scatter (drawdata) grows the data set's count;
- 06_attention: dragging an entry of the query (mo.ui.matrix) changes the weights, which stay
  softmax(q) of the entries the matrix shows;
- 07_diffusion: points sprayed on the drawing are the ones the DDPM trains on (its count grows).

A change counts only outside the widget itself (which redraws when dragged): in another cell's
output, or, where the widget shares its cell's output with the result (08), in that output's
images (the widget draws on a canvas; images in the results are <img>).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from browser_tools import (
    assert_no_errors,
    changed_areas,
    drag_on_widget,
    run_started,
    wait_idle_after,
    wait_settled,
)

from engine.course import toc

# the gallery test's waits on the kernel and its error check (tests/site is on sys.path)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOAD_TIMEOUT_MS = 180_000
RUN_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def app(gallery, browser_page):
    """One `marimo run` server and one Chromium page for every notebook below (tests/site/conftest.py)."""
    return browser_page, gallery


def _open(page, gallery, notebook: str) -> None:
    page.page_errors.clear()
    page.goto(gallery["base"] + toc.link(notebook, mode="server"), wait_until="domcontentloaded")
    wait_idle_after(page, 0, LOAD_TIMEOUT_MS, f"{notebook}: first run")
    assert_no_errors(page, gallery["log"], f"{notebook} after loading")


def _widget_near(page, text: str):
    """The anywidget in the (single) output area that also shows ``text``."""
    widget = page.locator("#App .output-area", has_text=text).locator("marimo-anywidget")
    # the custom element is display: contents; wait for what it draws (Playwright pierces shadow roots)
    widget.first.locator("canvas, svg, img").first.wait_for(state="visible")
    assert widget.count() == 1, f"expected one widget next to {text!r}, found {widget.count()}"
    return widget


def _widget_after(page, text: str):
    """The anywidget of the first output area below the one that shows ``text`` (a control made in
    a cell of its own above the widget it drives)."""
    anchor = page.locator("#App .output-area", has_text=text).first
    anchor.wait_for(state="visible")
    top = anchor.bounding_box()["y"]
    areas = page.locator("#App .output-area").filter(has=page.locator("marimo-anywidget"))
    for i in range(areas.count()):
        box = areas.nth(i).bounding_box()
        if box and box["y"] > top:
            widget = areas.nth(i).locator("marimo-anywidget")
            widget.first.locator("canvas, svg, img").first.wait_for(state="visible")
            return widget
    raise AssertionError(f"no widget below the output that shows {text!r}")


def _run(page, gallery, act, what: str):
    """Do ``act()``, wait for the run it starts; return its result."""
    completed = page.evaluate("() => __mw.completed")
    result = act()
    assert run_started(page, completed), f"{what}: no cell ran"
    wait_idle_after(page, completed, RUN_TIMEOUT_MS, what)
    assert_no_errors(page, gallery["log"], what)
    return result


def _drag(page, gallery, widget, path, what: str):
    """Drag after the page settled; the snapshots before and after and the widget's area id."""
    before = wait_settled(page)
    area = _run(page, gallery, lambda: drag_on_widget(page, widget, path), what)
    return before, wait_settled(page), area


def _images(snapshot, area_id) -> list[str]:
    """The <img> hashes drawn in one output area (PNG images; widgets draw on canvases)."""
    return [d for a in snapshot if a["id"] == area_id for d in a["drawn"] if d.startswith("img ")]


def test_dragging_the_start_point_redraws_the_race(app):
    page, gallery = app
    _open(page, gallery, "04_optimizers")
    start = _widget_near(page, "start θ")
    before, after, own = _drag(page, gallery, start, [(0.5, 0.5), (0.15, 0.85)], "04: start point")
    changes = [c for c in changed_areas(before, after) if not c.startswith(f"{own}:")]
    assert changes, "04_optimizers: dragging the start point changed no other output"


def test_a_stroke_on_the_canvas_changes_the_digit_the_cnn_reads(app):
    page, gallery = app
    _open(page, gallery, "05_convolution")
    canvas = _widget_after(page, "start from")  # the menu has a cell of its own above the canvas
    before, after, own = _drag(page, gallery, canvas, [(0.05, 0.5), (0.95, 0.5), (0.95, 0.95)], "05: canvas stroke")
    changes = [c for c in changed_areas(before, after) if not c.startswith(f"{own}:")]
    assert changes, "05_convolution: drawing on the canvas changed no other output"
    assert any("img" in c for c in changes), f"05_convolution: the 8x8 digit image is unchanged: {changes}"


def test_dragging_the_latent_point_changes_the_decoded_image(app):
    page, gallery = app
    _open(page, gallery, "08_vae")
    train = page.locator("#App marimo-button button", has_text="Train the digit VAE")
    train.scroll_into_view_if_needed()
    _run(page, gallery, train.click, "08: training")
    point = _widget_near(page, "Latent explorer")
    before, after, own = _drag(page, gallery, point, [(0.5, 0.5), (0.9, 0.1)], "08: latent point")
    decoded_before, decoded_after = _images(before, own), _images(after, own)
    assert decoded_before, "08_vae: no decoded image next to the latent point"
    assert decoded_after != decoded_before, "08_vae: dragging the latent point left the decoded image unchanged"


def _area(page, area_id: str):
    return page.locator(f'[id="{area_id}"]')


def _number(pattern: str, text: str, what: str) -> int:
    found = re.search(pattern, text)
    assert found, f"{what}: no {pattern!r} in {text[:300]!r}"
    return int(found.group(1))


def _circles(widget) -> int:
    """The dots a drawdata scatter shows (SVG circles, through its shadow root)."""
    return widget.first.locator("svg circle").count()


def _fit_rows(area) -> dict[str, str]:
    """The fit table's rows (loss name: the row's text)."""
    rows = [line.split("\t") for line in area.locator("table").inner_text().splitlines()]
    return {row[0].strip(): " ".join(cell.strip() for cell in row[1:]) for row in rows if len(row) > 1}


def test_dragging_an_outlier_puck_refits_the_lines(app):
    page, gallery = app
    _open(page, gallery, "02_losses")
    area = page.locator("#App .output-area", has_text="slope w")
    pucks = _widget_near(page, "slope w")
    fits_before = _fit_rows(area)
    mse = next((name for name in fits_before if name.startswith("MSE")), None)
    assert mse, f"02_losses: no MSE row in the fit table: {fits_before}"
    # a press anywhere picks the nearest puck: the outliers sit high, the press pulls one to the bottom
    _drag(page, gallery, pucks, [(0.5, 0.9), (0.8, 0.95)], "02: outlier puck")
    fits_after = _fit_rows(area)
    assert fits_after[mse] != fits_before[mse], f"02_losses: the MSE fit stayed at {fits_before[mse]}"


def test_spraying_points_grows_the_playground_data(app):
    page, gallery = app
    _open(page, gallery, "03_backprop")
    canvas = _widget_near(page, "The data")
    dots_before = _circles(canvas)
    area = page.locator("#App .output-area", has_text="The data").filter(has=page.locator("marimo-anywidget"))
    count_before = _number(r"(\d+) points", area.inner_text(), "03 before")
    _, _, own = _drag(page, gallery, canvas, [(0.2, 0.2), (0.8, 0.2), (0.8, 0.8)], "03: spray")
    count_after = _number(r"(\d+) points", _area(page, own).inner_text(), "03 after")
    assert _circles(canvas) > dots_before, "03_backprop: the spray drew no points"
    assert count_after > count_before, f"03_backprop: the data set stayed at {count_before} points"


def _weights(page, area) -> np.ndarray:
    text = area.inner_text()
    found = re.search(r"Weights: ([-\d., ]+)\.", text)
    assert found, f"06_attention: no weights line in {text[:300]!r}"
    return np.array([float(v) for v in found.group(1).split(",")])


def test_dragging_a_query_entry_changes_the_attention_weights(app):
    page, gallery = app
    _open(page, gallery, "06_attention")
    area = page.locator("#App .output-area").filter(has=page.locator("marimo-matrix"))
    assert area.count() == 1, f"06_attention: expected one output with a matrix, found {area.count()}"
    entry = area.locator('[data-testid="matrix-cell-0-3"]')
    entry.scroll_into_view_if_needed()
    wait_settled(page)  # charts still drawing above would move the entry after its box is read
    weights_before = _weights(page, area)
    box = entry.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    def drag():
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + 120, y, steps=12)
        page.mouse.up()

    _run(page, gallery, drag, "06: query entry")
    wait_settled(page)
    query = np.array(
        [float(area.locator(f'[data-testid="matrix-cell-0-{j}"]').get_attribute("aria-valuenow")) for j in range(4)]
    )
    weights_after = _weights(page, area)
    assert query[3] > 0, f"06_attention: dragging key 3's entry right left it at {query[3]}"
    assert weights_after[3] > weights_before[3], f"06_attention: key 3's weight did not grow: {weights_after}"
    # the scaled score of key j is q_j (k_j = 2 e_j, d_k = 4): the weights are softmax(q)
    expected = np.exp(query - query.max()) / np.exp(query - query.max()).sum()
    np.testing.assert_allclose(weights_after, expected, atol=6e-4)


def test_the_ddpm_trains_on_the_points_sprayed_on_the_drawing(app):
    page, gallery = app
    _open(page, gallery, "07_diffusion")
    train = page.locator("#App marimo-button button", has_text="Train on my drawing")
    canvas = (
        page.locator("#App .output-area")
        .filter(has=page.locator("marimo-button button", has_text="Train on my drawing"))
        .locator("marimo-anywidget")
    )
    canvas.first.locator("svg").first.wait_for(state="visible")
    dots_before = _circles(canvas)
    _drag(page, gallery, canvas, [(0.1, 0.1), (0.9, 0.1), (0.9, 0.5)], "07: spray")
    dots_after = _circles(canvas)
    assert dots_after > dots_before, "07_diffusion: the spray drew no points"
    train.scroll_into_view_if_needed()
    _run(page, gallery, train.click, "07: training on the drawing")
    result = page.locator("#App .output-area", has_text="drawn points")
    trained_on = _number(r"(\d+) drawn points", result.first.inner_text(), "07")
    assert trained_on > dots_before > 0, f"07_diffusion: trained on {trained_on} points, the canvas had {dots_before}"
