"""The course's drag widgets in Chromium (issue 15): the mouse drags them in the real notebooks,
served by `make run`'s marimo server, and the output computed from them changes.

- 04_optimizers: dragging the start point (Slider2D) redraws the optimizers' race;
- 05_convolution: a stroke on the digit canvas (Paint) changes the 8x8 digit the CNN reads;
- 08_vae: after training, dragging the latent point (Slider2D) changes the decoded image.

A change counts only outside the widget itself (which redraws when dragged): in another cell's
output, or, where the widget shares its cell's output with the result (08), in that output's
images (the widget draws on a canvas; matplotlib results are <img>).
"""

from __future__ import annotations

import pytest

from browser_tools import ROOT, changed_areas, drag_on_widget, free_port, make_command, open_page, served
from engine.course import toc
from oracle import require_browser
# the gallery test's waits on the kernel and its error check (tests/site is on sys.path)
from test_browser import _assert_no_errors, _started, _wait_idle_after, _wait_settled

pytestmark = pytest.mark.browser

LOAD_TIMEOUT_MS = 180_000
RUN_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """One `marimo run` server and one Chromium page for every notebook below."""
    executable = require_browser()
    log_path = tmp_path_factory.mktemp("widgets") / "server.log"
    with served(make_command("run", free_port()), ROOT, log_path) as base, open_page(executable) as page:
        yield page, {"base": base, "log": log_path}


def _open(page, gallery, notebook: str) -> None:
    page.page_errors.clear()
    page.goto(gallery["base"] + toc.link(notebook, mode="server"), wait_until="domcontentloaded")
    _wait_idle_after(page, 0, LOAD_TIMEOUT_MS, f"{notebook}: first run")
    _assert_no_errors(page, gallery, f"{notebook} after loading")


def _widget_near(page, text: str):
    """The anywidget in the (single) output area that also shows ``text``."""
    widget = page.locator("#App .output-area", has_text=text).locator("marimo-anywidget")
    # the custom element is display: contents; wait for what it draws (Playwright pierces shadow roots)
    widget.first.locator("canvas, svg, img").first.wait_for(state="visible")
    assert widget.count() == 1, f"expected one widget next to {text!r}, found {widget.count()}"
    return widget


def _run(page, gallery, act, what: str):
    """Do ``act()``, wait for the run it starts; return its result."""
    completed = page.evaluate("() => __mw.completed")
    result = act()
    assert _started(page, completed), f"{what}: no cell ran"
    _wait_idle_after(page, completed, RUN_TIMEOUT_MS, what)
    _assert_no_errors(page, gallery, what)
    return result


def _drag(page, gallery, widget, path, what: str):
    """Drag after the page settled; the snapshots before and after and the widget's area id."""
    before = _wait_settled(page)
    area = _run(page, gallery, lambda: drag_on_widget(page, widget, path), what)
    return before, _wait_settled(page), area


def _images(snapshot, area_id) -> list[str]:
    """The <img> hashes drawn in one output area (matplotlib figures; widgets draw on canvases)."""
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
    canvas = _widget_near(page, "start from")
    before, after, own = _drag(page, gallery, canvas, [(0.05, 0.5), (0.95, 0.5), (0.95, 0.95)],
                               "05: canvas stroke")
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
