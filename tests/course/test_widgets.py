"""engine.course.widgets: each factory's value conversion at the extremes it hands the headless
tests, and those extremes driven through a small marimo app as the notebook tests drive them."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from notebook_driver import control_values, extreme_runs, load_app, output_text, run_app

from engine.course import widgets
from engine.data import load_digits

BOUNDS = ((-2.0, 2.0), (-1.0, 3.0))


# ----------------------------------------------------------------------------- draggable points
def _data_at(puck, px, py):
    """wigglystuff's chart-puck.js ``pixelToData`` (linear axes): where a press at pixel (px, py)
    of the widget's canvas puts a puck, in data coordinates."""
    (x0, x1), (y0, y1) = puck.x_bounds, puck.y_bounds
    left, top, right, bottom = puck.axes_pixel_bounds
    px, py = min(max(px, left), right), min(max(py, top), bottom)
    return x0 + (px - left) / (right - left) * (x1 - x0), y0 + (bottom - py) / (bottom - top) * (y1 - y0)


def _background_rgb(puck) -> np.ndarray:
    """The widget's background image (the PNG it shows under the pucks) as uint8 [H, W, 3]."""
    from PIL import Image

    prefix, _, encoded = puck.chart_base64.partition(",")
    assert prefix == "data:image/png;base64"
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(encoded))).convert("RGB"))


def test_draggable_points_are_a_chart_puck_made_by_its_constructor():
    from wigglystuff import ChartPuck

    from engine.course import plot

    calls = []
    pucks = widgets.draggable_points(
        lambda ax, pts: calls.append(pts), [0.5, -1.0], [0.0, 2.0], x_bounds=BOUNDS[0], y_bounds=BOUNDS[1], throttle=80
    )
    assert type(pucks).__name__ == "anywidget"
    # wigglystuff's own class (anywidget's add_traits gives each instance a subclass holding only
    # traits), made by ChartPuck.__init__: no subclass of ours in between, no __init__ replaced
    assert isinstance(pucks.widget, ChartPuck) and type(pucks.widget).__bases__ == (ChartPuck,)
    assert "__init__" not in vars(type(pucks.widget))
    puck = pucks.widget
    assert (puck.x_bounds, puck.y_bounds) == BOUNDS and (puck.drag_x_bounds, puck.drag_y_bounds) == BOUNDS
    assert puck.throttle == 80 and puck.puck_color == [plot.color("outlier")]
    assert widgets.draggable_points(
        lambda ax, pts: None, [0.0], [0.0], x_bounds=(0, 1), y_bounds=(0, 1), color="model"
    ).widget.puck_color == [plot.color("model")]
    assert len(calls) == 1 and calls[0].dtype == np.float64 and calls[0].tolist() == [[0.5, 0.0], [-1.0, 2.0]]


def test_draggable_points_read_as_n_by_2_and_reach_every_corner():
    pucks = widgets.draggable_points(
        lambda ax, pts: None, [0.5, -1.0, 1.5], [0.0, 2.0, 1.0], x_bounds=BOUNDS[0], y_bounds=BOUNDS[1]
    )
    default = widgets.puck_points(pucks.value)
    assert default.dtype == np.float64 and default.tolist() == [[0.5, 0.0], [-1.0, 2.0], [1.5, 1.0]]
    seen = set()
    for value in pucks.test_values:
        points = widgets.puck_points(value)
        assert points.shape == (3, 2)
        assert ((points[:, 0] >= -2) & (points[:, 0] <= 2) & (points[:, 1] >= -1) & (points[:, 1] <= 3)).all()
        seen |= {tuple(p) for p in points}
    assert seen == {(-2.0, -1.0), (2.0, 3.0), (-2.0, 3.0), (2.0, -1.0)}


def test_a_puck_move_reaches_python_without_redrawing_the_background():
    """The background is drawn once: a move (what the browser sends) changes the pucks' value and
    nothing else, so the cells that read it are all that re-run."""
    calls = []

    def draw(ax, pts):
        calls.append(pts.copy())
        ax.scatter(pts[:, 0], pts[:, 1])

    pucks = widgets.draggable_points(draw, [0.0], [1.0], x_bounds=BOUNDS[0], y_bounds=BOUNDS[1])
    before = pucks.widget.chart_base64
    pucks.widget.x = [1.75]  # what the browser sends when the puck is dragged
    pucks.widget.y = [-0.5]
    assert widgets.puck_points(pucks.value).tolist() == [[1.75, -0.5]]
    assert len(calls) == 1 and pucks.widget.chart_base64 == before


@pytest.mark.parametrize("bbox", ["standard", "tight"])
def test_a_press_on_the_background_maps_to_the_data_coordinates_drawn_there(bbox):
    """Marks drawn by the callback at known data points sit, in the PNG the widget shows, at the
    pixels chart-puck.js maps back to those points; the callback cannot move the limits, and a
    Matplotlib set to crop saved figures (savefig.bbox: tight) does not shift the image."""
    import matplotlib

    marks = np.array([[-1.0, 0.0], [1.5, 2.5], [0.0, -0.5]])

    def draw(ax, pts):
        ax.scatter(marks[:, 0], marks[:, 1], s=30, marker="s", color="#00ff00", linewidths=0)
        ax.set_xlim(-10, 10)  # ignored: the pucks' bounds are the axes' limits
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title("a title", fontsize=10)

    with matplotlib.rc_context({"savefig.bbox": bbox}):
        pucks = widgets.draggable_points(draw, [0.0], [1.0], x_bounds=BOUNDS[0], y_bounds=BOUNDS[1], figsize=(5.0, 3.2))
    puck = pucks.widget
    assert (puck.width, puck.height) == (500, 320) and (puck.x_bounds, puck.y_bounds) == BOUNDS
    rgb = _background_rgb(puck)
    assert rgb.shape == (320, 500, 3)  # the image is the canvas, pixel for pixel
    green = (rgb[..., 1] > 200) & (rgb[..., 0] < 80) & (rgb[..., 2] < 80)
    rows, cols = np.nonzero(green)
    found = []
    for mark in marks:  # the green square nearest where the mark should be: its centre
        left, top, right, bottom = puck.axes_pixel_bounds
        ex = left + (mark[0] - BOUNDS[0][0]) / 4 * (right - left)
        ey = bottom - (mark[1] - BOUNDS[1][0]) / 4 * (bottom - top)
        near = (np.abs(cols - ex) < 12) & (np.abs(rows - ey) < 12)
        assert near.sum() > 10, f"no mark drawn near {mark}"
        # pixel centres at +0.5: pixel column c spans [c, c + 1)
        found.append(_data_at(puck, cols[near].mean() + 0.5, rows[near].mean() + 0.5))
    np.testing.assert_allclose(found, marks, atol=0.02)  # within a pixel: 4 / 388 in x, 4 / 246 in y
    # the axes' frame (black spines) is where the widget maps pixels to data
    left, top, right, bottom = (int(v) for v in puck.axes_pixel_bounds)
    dark = rgb.sum(axis=-1) < 100
    middle, centre = (top + bottom) // 2, (left + right) // 2
    assert dark[middle, left - 1 : left + 2].any() and dark[middle, right - 1 : right + 2].any()
    assert dark[top - 1 : top + 2, centre].any() and dark[bottom - 1 : bottom + 2, centre].any()
    assert not dark[middle, left + 3 : right - 3].any() and not dark[top + 3 : bottom - 3, centre].any()
    # every label fits: nothing drawn on the image's outer two pixels, the title and the axis labels inside
    edge = np.ones_like(dark)
    edge[2:-2, 2:-2] = False
    assert not (dark & edge).any()
    assert dark[: top - 2].any() and dark[bottom + 12 :].any() and dark[:, : left - 20].any()


def test_the_course_makes_every_widget_through_its_constructor():
    """Issue 23: the drag widgets are made by their packages' public constructors; a widget made by
    ``cls.__new__`` and a base class's ``__init__`` holds only at one version of the package. No
    module of the course layer calls ``__new__``."""
    import ast
    from pathlib import Path

    course = Path(widgets.__file__).parent
    found = [
        f"{path.relative_to(course)}:{node.lineno}"
        for path in sorted(course.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "__new__"
    ]
    assert not found, f"widgets made around their constructors: {found}"


def test_pucks_over_a_background_drawn_beforehand_show_the_same_pixels_in_the_same_box():
    """A slider that re-creates the pucks re-uses a chart drawn once (widgets.puck_background): the
    widget shows the very PNG the chart drawn under it would give, and maps through the same box."""

    def draw(ax):
        ax.plot([-2, 2], [-1, 3], color="#1d4ed8")
        ax.scatter([0.5, -1.0], [0.0, 2.0], s=14)
        ax.set_xlabel("x")
        ax.set_title("a title", fontsize=10)

    size = {"x_bounds": BOUNDS[0], "y_bounds": BOUNDS[1], "figsize": (5.0, 3.2)}
    direct = widgets.draggable_points(lambda ax, _points: draw(ax), [0.0], [1.0], **size).widget
    calls = []
    background = widgets.puck_background(lambda ax: (calls.append(ax), draw(ax)), **size)
    for x in (0.0, 1.5):
        puck = widgets.draggable_points(background, [x], [1.0]).widget
        assert np.array_equal(_background_rgb(puck), _background_rgb(direct))
        assert (puck.axes_pixel_bounds, puck.x_bounds, puck.y_bounds) == (direct.axes_pixel_bounds, *BOUNDS)
        assert (puck.width, puck.height) == (500, 320) and puck.x == [x]
    assert len(calls) == 1


def test_the_background_figure_is_not_one_of_pyplots():
    """The figure is a matplotlib.figure.Figure made without pyplot, which would keep it open for
    good: after a widget is built, pyplot (imported first, so it would see any figure it made)
    lists no figure, and building one does not import pyplot."""
    import subprocess
    import sys

    build = (
        "from engine.course import widgets\n"
        "w = widgets.draggable_points(lambda ax, p: ax.scatter(p[:, 0], p[:, 1]), [0.0, 1.0], [0.0, 1.0],"
        " x_bounds=(-1, 2), y_bounds=(-1, 2))\n"
    )
    script = (
        "import sys\n" + build + "print('pyplot' if 'matplotlib.pyplot' in sys.modules else 'no pyplot')\n"
        "import matplotlib.pyplot as plt\n" + build + "print(plt.get_fignums())\n"
    )
    env = {**__import__("os").environ, "MPLBACKEND": "agg"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["no", "pyplot", "[]"]


def test_draggable_points_refuse_unequal_coordinates_by_name():
    with pytest.raises(ValueError, match="draggable_points: x and y need the same"):
        widgets.draggable_points(lambda ax, pts: None, [0.0, 1.0], [0.0], x_bounds=(0, 1), y_bounds=(0, 1))


# ----------------------------------------------------------------------------- 2-D point
def test_point_2d_clips_its_start_and_offers_the_four_corners():
    start = widgets.point_2d(0.25, 7.0, x_bounds=BOUNDS[0], y_bounds=BOUNDS[1])
    assert widgets.point(start.value) == (0.25, 3.0)  # y clipped to its bound
    corners = {widgets.point(v) for v in start.test_values}
    assert corners == {(-2.0, -1.0), (2.0, 3.0), (-2.0, 3.0), (2.0, -1.0)}


# ----------------------------------------------------------------------------- drawing
def _white_canvas_with_black_square(size=40):
    """A PNG as the browser stores it with store_background: opaque white, black strokes."""
    from PIL import Image

    rgb = np.full((size, size, 3), 255, np.uint8)
    rgb[10:20, 5:15] = 0
    buffer = io.BytesIO()
    Image.fromarray(rgb, "RGB").convert("RGBA").save(buffer, format="PNG")
    return {
        "base64": "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode(),
        "width": size,
        "height": size,
    }


def test_canvas_extremes_read_as_blank_full_dot_and_bar():
    pad = widgets.canvas(64)
    blank, full, dot, bar = (widgets.ink(v) for v in pad.test_values)
    for image in (blank, full, dot, bar):
        assert image.shape == (64, 64) and image.dtype == np.float32
    assert blank.max() == 0 and full.min() == 1
    assert dot.sum() == 9 and bar.sum() == 48 * 8
    digits = [widgets.to_digit(image) for image in (blank, full, dot, bar)]
    for d in digits:
        assert d.shape == (8, 8) and d.dtype == np.float32 and 0 <= d.min() and d.max() <= 1
    assert digits[0].max() == 0 and digits[1].min() == 1
    assert digits[2].min() == 1  # fit: a dot alone is cropped to fill the frame
    assert widgets.to_digit(dot, fit=False).sum() == pytest.approx(0.25)  # 9 pixels mark 4 cells
    # the bar, cropped and centred, is a vertical stroke: ink in the middle columns only
    assert digits[3][:, :2].max() == 0 and digits[3][:, 3:5].min() > 0.5
    assert widgets.ink(pad.value).max() == 0  # the default canvas is blank


def test_ink_counts_black_strokes_on_a_white_background():
    image = widgets.ink(_white_canvas_with_black_square())
    assert image[10:20, 5:15].min() == 1 and image.sum() == 100


def test_an_unreadable_drawing_is_a_blank_canvas_of_its_size():
    for data in ("not base64 at all!", base64.b64encode(b"not a PNG").decode()):
        image = widgets.ink({"base64": "data:image/png;base64," + data, "width": 12, "height": 7})
        assert image.shape == (7, 12) and image.dtype == np.float32 and image.max() == 0


def test_a_test_digit_shown_on_the_canvas_comes_back_unchanged():
    images, _ = load_digits("test")
    for k in (0, 1, 2):
        pad = widgets.canvas(256, start=images[k])
        back = widgets.to_digit(widgets.ink(pad.value), fit=False)
        np.testing.assert_allclose(back, images[k], atol=1 / 255)  # PNG keeps 8 bits


def test_reading_a_canvas_the_course_drew_looks_up_what_decoding_gives(monkeypatch):
    """A page reads its canvas's start image at load: the course remembers the ink of the PNGs it
    encoded rather than decoding them; decoding each (as a learner's drawing is) gives the same."""
    images, _ = load_digits("test")
    pad = widgets.canvas(64, start=images[0])
    values = [pad.value, *pad.test_values]
    assert all(value["base64"] in widgets._ENCODED for value in values)
    assert len(widgets._ENCODED) <= widgets._ENCODED_MAX
    remembered = [widgets.ink(value) for value in values]
    monkeypatch.setattr(widgets, "_ENCODED", {})  # forgotten: each is decoded
    decoded = [widgets.ink({**value, "base64": "data:image/png;base64," + value["base64"]}) for value in values]
    for a, b in zip(remembered, decoded):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_array_equal(a, b)
    assert remembered[0].max() == pytest.approx(images[0].max(), abs=1 / 255) and remembered[1].max() == 0


def test_to_digit_refuses_a_non_image_by_name():
    with pytest.raises(ValueError, match=r"to_digit: expected a 2-D drawing, got shape \(5,\)"):
        widgets.to_digit(np.ones(5))


# ----------------------------------------------------------------------------- matrix
def test_matrix_extremes_fill_every_entry():
    kernel = widgets.matrix(np.eye(3), min_value=-2, max_value=3)
    assert type(kernel).__name__ == "matrix"
    np.testing.assert_array_equal(widgets.as_array(kernel.value), np.eye(3))
    fills = [widgets.as_array(v) for v in kernel.test_values]
    assert [f.shape for f in fills] == [(3, 3)] * 3
    assert [float(np.unique(f)[0]) for f in fills] == [-2.0, 3.0, 0.0]
    assert len(widgets.matrix([[1.0]], min_value=1, max_value=2).test_values) == 2  # 0 is out of bounds


# ----------------------------------------------------------------------------- labelled data set
def test_scatter_extremes_are_typed_with_a_clear_problem():
    canvas = widgets.scatter(2, bounds=BOUNDS)
    empty, one, one_class, corners = (widgets.scatter_data(v, bounds=BOUNDS) for v in canvas.test_values)
    for drawn in (empty, one, one_class, corners):
        assert drawn.X.dtype == np.float32 and drawn.X.ndim == 2 and drawn.X.shape[1] == 2
        assert drawn.y.dtype == np.int64 and drawn.y.shape == (len(drawn.X),)
    assert empty.X.shape == (0, 2) and "the canvas has 0" in empty.problem
    assert len(one.y) == 1 and "the canvas has 1" in one.problem
    assert set(one_class.y) == {0} and "class a only" in one_class.problem
    assert corners.problem is None
    np.testing.assert_allclose(corners.X, [[-2, -1], [2, 3]])
    assert corners.y.tolist() == [0, 1]
    # a density model takes one class; one point is still too few for it
    assert widgets.scatter_data(canvas.test_values[2], bounds=BOUNDS, min_classes=1).problem is None
    assert widgets.scatter_data(canvas.test_values[1], bounds=BOUNDS, min_classes=1).problem


def test_scatter_maps_pixels_to_bounds_and_clips_the_spray_past_the_edge():
    X = np.array([[-1.5, 0.0], [1.0, 2.5], [0.0, -1.0]])
    canvas = widgets.scatter(3, bounds=BOUNDS, start=(X, [0, 2, 1]))
    drawn = widgets.scatter_data(canvas.value, bounds=BOUNDS)
    np.testing.assert_allclose(drawn.X, X, atol=1e-6)
    assert drawn.y.tolist() == [0, 2, 1] and drawn.problem is None
    sprayed = {**canvas.value, "data": [{"x": -30.0, "y": 900.0, "color": "#1f77b4", "label": "a", "batch": 0}]}
    assert widgets.scatter_data(sprayed, bounds=BOUNDS, min_points=1, min_classes=1).X.tolist() == [[-2.0, 3.0]]
    with pytest.raises(ValueError, match="scatter: n_classes must be 1 to 4, got 5"):
        widgets.scatter(5)


# ----------------------------------------------------------------------------- a probe notebook
# One control per widget and a cell that reads each, as docs/notebook-convention.md has it:
# (name, the expression that builds the control, what the reading cell shows).
PROBES = [
    (
        "start",
        "w.point_2d(0.0, 0.0, x_bounds=(-2.0, 2.0), y_bounds=(-1.0, 3.0))",
        'mo.md("start at ({:.2f}, {:.2f})".format(*w.point(start.value)))',
    ),
    (
        "drawing",
        "w.scatter(2)",
        "data = w.scatter_data(drawing.value)\n    "
        'mo.callout(data.problem, kind="warn") if data.problem else mo.md(f"{len(data.y)} points drawn")',
    ),
    ("pad", "w.canvas(128)", 'mo.md(f"ink total {float(w.to_digit(w.ink(pad.value)).sum()):.2f}")'),
    (
        "pucks",
        "w.draggable_points(lambda ax, p: ax.scatter(p[:, 0], p[:, 1]), [0.0], [1.0], "
        "x_bounds=(-2, 2), y_bounds=(-1, 3))",
        'mo.md(f"puck at {w.puck_points(pucks.value).round(2).tolist()}")',
    ),
]
PROBE_CELLS = """

@app.cell
def _(w):
    {name} = {build}
    {name}
    return ({name},)


@app.cell
def _({readers}):
    {show}
    return
"""
PROBE_NOTEBOOK = """
import marimo

__generated_with = "0.25.2"
app = marimo.App()


@app.cell
def _():
    import marimo as mo
    from engine.course import widgets as w
    return mo, w
""" + "".join(
    PROBE_CELLS.format(name=name, build=build, show=show, readers=", ".join(sorted(["mo", name, "w"])))
    for name, build, show in PROBES
)


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    path = tmp_path_factory.mktemp("widgets") / "probe.py"
    path.write_text(PROBE_NOTEBOOK, encoding="utf-8")
    return path


def test_the_driver_runs_every_widget_extreme_through_a_notebook(probe):
    app = load_app(probe)
    outputs, defs = run_app(app)
    assert "start at (0.00, 0.00)" in output_text(outputs)
    assert control_values(defs["start"])[-1] == defs["start"].value  # extremes, then the default
    runs = extreme_runs(app)
    assert len(runs) == 2 + 3  # first, second, then the other 3 of the 5 values (4 extremes + default)
    texts = [output_text(run_app(app, **r)[0]) for r in runs]
    for corner in ("(-2.00, -1.00)", "(2.00, 3.00)", "(-2.00, 3.00)", "(2.00, -1.00)"):
        assert any(f"start at {corner}" in t for t in texts), corner
    assert any("the canvas has 0" in t for t in texts) and any("class a only" in t for t in texts)
    assert any("2 points drawn" in t for t in texts)
    assert any("ink total 0.00" in t for t in texts) and any("ink total 64.00" in t for t in texts)
    assert any("puck at [[-2.0, -1.0]]" in t for t in texts) and any("puck at [[2.0, 3.0]]" in t for t in texts)


# ----------------------------------------------------------------------------- in Chromium
@pytest.mark.browser
@pytest.mark.slow
def test_dragging_each_widget_in_chromium_changes_its_dependent_output(chromium, probe, tmp_path):
    """browser_tools.drag_on_widget under `marimo run`: a 2-D point dragged to its corner, a spray
    on the scatter, a stroke on the canvas and a puck dragged each change the cell that reads them."""
    import os
    import re
    import sys
    from pathlib import Path

    import browser_tools as bt
    from playwright.sync_api import sync_playwright

    port = bt.free_port()
    marimo_bin = Path(sys.executable).parent / "marimo"
    env = dict(os.environ, PYTHONPATH=str(bt.ROOT))
    server, base = bt.serve(
        [str(marimo_bin), "run", str(probe), "--headless", "--port", str(port), "--host", "127.0.0.1", "--no-token"],
        tmp_path,
        tmp_path / "server.log",
        env=env,
    )
    try:
        with sync_playwright() as p:
            browser = bt.launch(p, chromium)
            page = browser.new_page(viewport=bt.VIEWPORT)
            page.add_init_script(bt.KERNEL_HOOK)
            page.goto(base)
            page.wait_for_function("() => window.__mw && __mw.idleAfter(0)", timeout=90_000)
            page.wait_for_function("() => document.querySelectorAll('marimo-anywidget').length === 4", timeout=30_000)

            def app_text():  # callouts draw in shadow roots: SNAPSHOT_JS walks them
                return "\n".join(area["text"] for area in page.evaluate(bt.SNAPSHOT_JS))

            first = app_text()
            for before in ("start at (0.00, 0.00)", "the canvas has 0", "ink total 0.00", "puck at [[0.0, 1.0]]"):
                assert before in first, before
            paths = [
                [(0.5, 0.75), (0.98, 0.02)],
                [(0.2, 0.5), (0.8, 0.5)],
                [(0.3, 0.2), (0.3, 0.8)],
                [(0.5, 0.5), (0.7, 0.3)],
            ]  # the puck starts near the middle of the chart
            for i, path in enumerate(paths):
                completed = page.evaluate("() => __mw.completed")
                bt.drag_on_widget(page, page.locator("marimo-anywidget").nth(i), path)
                page.wait_for_function(f"() => __mw.idleAfter({completed})", timeout=30_000)
            last = app_text()
            assert "start at (2.00, 3.00)" in last  # dragged past the corner: clamped to it
            assert "class a only" in last  # a spray of the first colour
            assert re.search(r"ink total [1-9]", last)
            # the puck lands at the data point under the mouse (chart-puck.js's mapping through
            # the axes' box, on a canvas shown at the image's size), within two pixels
            box = page.locator("marimo-anywidget").nth(3).evaluate_handle(bt._SURFACE_JS).as_element().bounding_box()
            puck = widgets.draggable_points(lambda ax, p: None, [0.0], [1.0], x_bounds=(-2, 2), y_bounds=(-1, 3)).widget
            assert (box["width"], box["height"]) == (puck.width, puck.height)
            expected = _data_at(puck, 0.7 * (box["width"] - 1), 0.3 * (box["height"] - 1))
            shown = []
            for _ in range(50):  # the run of a throttled sync mid-drag may end first: wait for the release's
                dropped = re.search(r"puck at \[\[([-\d.]+), ([-\d.]+)\]\]", app_text())
                shown = [float(v) for v in dropped.groups()] if dropped else []
                if shown == pytest.approx(expected, abs=0.035):
                    break
                page.wait_for_timeout(200)
            assert shown == pytest.approx(expected, abs=0.035)
            browser.close()
    finally:
        bt.stop_process_group(server)
