"""Direct-manipulation controls (issue 15): drag points, draw a digit, paint a labelled data set.

Each factory returns a marimo UI element (``mo.ui.anywidget`` around a wigglystuff or drawdata
widget, or ``mo.ui.matrix``), and each has a converter from the element's ``.value`` to NumPy::

    widget                      factory             .value read by          gives
    draggable points on a chart draggable_points    puck_points(v)          float64 [n, 2]
    a 2-D point                 point_2d            point(v)                (x, y) floats
    a drawing canvas            canvas              ink(v), to_digit(ink)   float32 [H, W], [8, 8]
    an editable matrix          matrix              as_array(v)             float64 [rows, cols]
    a labelled 2-D data set     scatter             scatter_data(v)         Drawn(X, y, problem)

How a notebook uses one (docs/notebook-convention.md: one control per cell, read ``.value``
elsewhere)::

    @app.cell
    def _(mo, widgets):
        start = widgets.point_2d(x=start_x.value, y=start_y.value, x_bounds=(-2, 2), y_bounds=(-1, 3))
        return (start,)

    @app.cell
    def _(lab, start, widgets):
        x0, y0 = widgets.point(start.value)          # never start.x: the tests drive .value
        trajectories = lab.run_all(x0, y0)

**Keyboard path.** A widget that replaces a slider keeps one: build the widget *from* the keyboard
controls (two ``mo.ui.slider``/``mo.ui.number`` for a point, a ``mo.ui.dropdown`` of preset data
sets or test digits for a drawing), passed as the factory's initial value. Moving the slider
re-creates the widget there; dragging moves it from there. Downstream cells read only the widget.
``mo.ui.matrix`` is keyboard-editable itself (arrow keys, Enter to type a value).

**Headless tests.** Every element made here carries ``test_values``: the values (in ``.value``
space) the notebook tests drive it with, its extremes (an empty drawing, a full canvas, a point in
each corner, one point, one class). ``tests/support/notebook_driver.control_values`` reads them,
so ``extreme_runs(app)`` covers a widget with no extra test code. A cell must turn each of them
into a sensible result or a ``mo.callout(..., kind="warn")``, never an exception.

**Static pages.** A static export (``marimo export html``) draws each widget with its state at
export time, but no Python runs behind it: dragging moves the puck on screen and recomputes
nothing. The WebAssembly pages install these packages (scripts/build_site.py) and run fully.

marimo, wigglystuff, drawdata and Pillow are imported inside the functions: ``import engine`` and
``import engine.course`` load none of them (tests/engine/test_layers.py). No widget draws with
Matplotlib: the pucks' chart is an SVG (:class:`SvgAxes`), a canvas's start image a PNG written
with zlib, so a page that opens with them never imports it.
"""

from __future__ import annotations

import base64
import io
import math
from functools import cache
from html import escape
from typing import NamedTuple

import numpy as np

# The UCI digits: 32x32 binary scans, counted in 4x4 blocks (engine.data.load_digits).
DIGIT_SCAN = 32
DIGIT_SIZE = 8
# drawdata's ScatterWidget names its (at most four) classes "a".."d", drawn in these colours.
SCATTER_CLASSES = ("a", "b", "c", "d")
SCATTER_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")


def _wrap(widget, changes: list[dict]):
    """``mo.ui.anywidget(widget)`` with ``test_values``: its state with each of ``changes`` applied."""
    import marimo as mo

    element = mo.ui.anywidget(widget)
    state = element.value
    element.test_values = [{**state, **change} for change in changes]
    return element


# ----------------------------------------------------------------------------- draggable points
# The backdrop's geometry as Matplotlib lays out a figure: 100 pixels an inch, the axes from 12.5 %
# to 90 % of the width and from 12 % to 89 % of the height (from the top); its default colour,
# line width (1.5 points) and dot area (36 points²).
_DPI = 100
_AXES_BOX = (0.125, 0.12, 0.9, 0.89)  # left, top, right, bottom as fractions of the figure
_FIRST_COLOR = "#1f77b4"
_PX_PER_PT = _DPI / 72
_DASHES = {"-": None, "solid": None, "--": (3.7, 1.6), "dashed": (3.7, 1.6), ":": (1, 1.65), "dotted": (1, 1.65),
           "-.": (6.4, 1.6, 1, 1.6), "dashdot": (6.4, 1.6, 1, 1.6)}  # Matplotlib's, in line widths
_TICK = 3.5 * _PX_PER_PT  # a tick's length


def _nice_ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Round tick values inside [low, high], a step of 1, 2 or 5 times a power of ten, at most ``most`` + 1."""
    span = high - low
    if not span > 0:
        return [low]
    for step in (m * 10.0 ** e for e in range(math.floor(math.log10(span / most)), 400) for m in (1, 2, 5)):
        if span / step <= most:
            break
    first = math.ceil(low / step - 1e-9)
    return [round(k * step, 12) + 0.0 for k in range(first, math.floor(high / step + 1e-9) + 1)]


def _tick_label(value: float) -> str:
    """A tick value as Matplotlib writes it: shortest form, a true minus sign."""
    return f"{value:g}".replace("-", "\u2212")


class SvgAxes:
    """The backdrop of :func:`draggable_points` as an SVG: a Matplotlib-shaped axes, with exactly
    the calls its ``draw(ax, points)`` callbacks make, so no Matplotlib figure is drawn (a figure
    costs 0.1 s a redraw and Matplotlib's import 0.4 s):

    - ``ax.plot(x, y, color=, linestyle=, linewidth=)``: a line ('-', '--', ':', '-.');
    - ``ax.scatter(x, y, s=, color=)``: dots of area ``s`` points²;
    - ``ax.set_xlabel(text)``, ``ax.set_ylabel(text)``, ``ax.set_title(text, fontsize=)``.

    The limits are the widget's bounds, fixed (the pucks map pixels to data through them);
    ``svg()`` writes the frame, its ticks and tick labels, the labels, the title and the artists.
    """

    def __init__(self, x_bounds, y_bounds, figsize):
        self.x_bounds, self.y_bounds = tuple(map(float, x_bounds)), tuple(map(float, y_bounds))
        self.width, self.height = round(figsize[0] * _DPI), round(figsize[1] * _DPI)
        left, top, right, bottom = _AXES_BOX
        self.box = (left * self.width, top * self.height, right * self.width, bottom * self.height)
        self.artists: list[str] = []
        self.xlabel = self.ylabel = self.title = ""
        self.title_size = 12.0

    def _along(self, axis: str, values) -> np.ndarray:
        """Pixel positions of data ``values`` along the x axis (from the left) or the y axis (from the top)."""
        (low, high), (left, top, right, bottom) = (self.x_bounds if axis == "x" else self.y_bounds), self.box
        share = (np.asarray(values, np.float64).ravel() - low) / (high - low)
        return left + share * (right - left) if axis == "x" else bottom - share * (bottom - top)

    def _points(self, x, y) -> list[tuple[float, float]]:
        """The finite (x, y) data points in pixels."""
        return [(a, b) for a, b in zip(self._along("x", x), self._along("y", y)) if math.isfinite(a + b)]

    def plot(self, x, y, *, color=_FIRST_COLOR, linestyle="-", linewidth=1.5):
        if linestyle not in _DASHES:
            raise ValueError(f"SvgAxes.plot: linestyle must be one of {', '.join(_DASHES)}, got {linestyle!r}")
        width = linewidth * _PX_PER_PT
        dashes = _DASHES[linestyle]
        dash = f' stroke-dasharray="{",".join(f"{d * width:.2f}" for d in dashes)}"' if dashes else ""
        points = " ".join(f"{a:.2f},{b:.2f}" for a, b in self._points(x, y))
        self.artists.append(f'<polyline points="{points}" fill="none" stroke="{escape(color)}" '
                            f'stroke-width="{width:.2f}"{dash}/>')

    def scatter(self, x, y, *, s=36.0, color=_FIRST_COLOR):
        radius = math.sqrt(s) / 2 * _PX_PER_PT
        dots = "".join(f'<circle cx="{a:.2f}" cy="{b:.2f}" r="{radius:.2f}"/>' for a, b in self._points(x, y))
        # Matplotlib edges a dot in its own colour, one point wide
        self.artists.append(f'<g fill="{escape(color)}" stroke="{escape(color)}" '
                            f'stroke-width="{_PX_PER_PT:.2f}">{dots}</g>')

    def set_xlabel(self, text):
        self.xlabel = str(text)

    def set_ylabel(self, text):
        self.ylabel = str(text)

    def set_title(self, text, fontsize=12.0):
        self.title, self.title_size = str(text), float(fontsize)

    def _ticks(self) -> str:
        """Tick marks and their labels, below the x axis and left of the y axis."""
        left, _, _, bottom = self.box
        ticks = []
        xs = _nice_ticks(*self.x_bounds)
        for value, px in zip(xs, self._along("x", xs)):
            ticks.append(f'<line x1="{px:.2f}" y1="{bottom}" x2="{px:.2f}" y2="{bottom + _TICK:.2f}"/>'
                         f'<text x="{px:.2f}" y="{bottom + _TICK + 2:.2f}" text-anchor="middle" '
                         f'dominant-baseline="hanging" stroke="none">{_tick_label(value)}</text>')
        ys = _nice_ticks(*self.y_bounds)
        for value, py in zip(ys, self._along("y", ys)):
            ticks.append(f'<line x1="{left - _TICK:.2f}" y1="{py:.2f}" x2="{left}" y2="{py:.2f}"/>'
                         f'<text x="{left - _TICK - 2:.2f}" y="{py:.2f}" text-anchor="end" '
                         f'dominant-baseline="middle" stroke="none">{_tick_label(value)}</text>')
        return "".join(ticks)

    def svg(self) -> str:
        left, top, right, bottom = self.box
        frame = f'x="{left}" y="{top}" width="{right - left}" height="{bottom - top}"'
        font = 10 * _PX_PER_PT  # Matplotlib's 10 points
        middle_x, middle_y = (left + right) / 2, (top + bottom) / 2
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" font-family="DejaVu Sans, Arial, sans-serif" '
            f'font-size="{font:.1f}"><rect width="100%" height="100%" fill="white"/>'
            f'<clipPath id="axes"><rect {frame}/></clipPath><g clip-path="url(#axes)">{"".join(self.artists)}</g>'
            f'<rect {frame} fill="none" stroke="black" stroke-width="1.1"/>'
            f'<g stroke="black" stroke-width="1.1">{self._ticks()}</g>'
            f'<text x="{middle_x:.2f}" y="{self.height - 4}" text-anchor="middle">{escape(self.xlabel)}</text>'
            f'<text transform="translate({font:.2f},{middle_y:.2f}) rotate(-90)" text-anchor="middle" '
            f'dominant-baseline="hanging">{escape(self.ylabel)}</text>'
            f'<text x="{middle_x:.2f}" y="{top - 8:.2f}" text-anchor="middle" '
            f'font-size="{self.title_size * _PX_PER_PT:.1f}">{escape(self.title)}</text></svg>')

    def data_url(self) -> str:
        """The SVG as the ``data:`` URL the widget shows as its image."""
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg().encode()).decode("ascii")


@cache
def _puck_class():
    """wigglystuff's ``ChartPuck`` built from its traits instead of a Matplotlib figure: the
    browser side needs only the image (``chart_base64``, any URL an <img> reads), the axes' pixel
    box and the data bounds."""
    import anywidget
    from wigglystuff import ChartPuck

    class Puck(ChartPuck):
        def __init__(self, **traits):
            anywidget.AnyWidget.__init__(self, **traits)

    return Puck


def draggable_points(draw, x, y, *, x_bounds, y_bounds, figsize=(5.0, 3.6), color="#e63946", throttle=50):
    """Pucks at ``(x[i], y[i])`` over a chart that ``draw(ax, points)`` redraws as they move.

    ``points`` is a float64 [n, 2] array of the pucks' data coordinates; ``ax`` is an
    :class:`SvgAxes` (a small Matplotlib-shaped surface: ``plot``, ``scatter``, ``set_xlabel``,
    ``set_ylabel``, ``set_title``) whose limits are ``x_bounds``/``y_bounds``, ``figsize`` inches
    at 100 pixels an inch. The pucks stay inside the bounds. The number of pucks is fixed when the
    widget is made: to add points, re-create it from a count control (its keyboard path, with a
    slider for the values that place them). Read it with :func:`puck_points`. ``throttle``: the
    pucks' position reaches Python at most every that many milliseconds while dragging (each time
    the chart and the cells that read it re-run); ``"dragend"`` only on release, for slow cells.

    Test values: every puck in the lower-left corner, every puck in the upper-right corner, the
    pucks alternating between the other two corners.
    """
    x, y = [float(v) for v in np.atleast_1d(x)], [float(v) for v in np.atleast_1d(y)]
    if len(x) != len(y) or not x:
        raise ValueError(f"draggable_points: x and y need the same, non-zero length; got {len(x)} and {len(y)}")
    (x0, x1), (y0, y1) = map(float, x_bounds), map(float, y_bounds)

    def render(xs, ys) -> SvgAxes:
        ax = SvgAxes((x0, x1), (y0, y1), figsize)
        draw(ax, np.column_stack([xs, ys]).astype(np.float64))
        return ax

    ax = render(x, y)
    puck = _puck_class()(x=x, y=y, x_bounds=(x0, x1), y_bounds=(y0, y1), axes_pixel_bounds=ax.box,
                         width=ax.width, height=ax.height, chart_base64=ax.data_url(), puck_color=[color],
                         throttle=throttle, drag_x_bounds=(x0, x1), drag_y_bounds=(y0, y1))

    def redraw(_change):
        puck.chart_base64 = render(puck.x, puck.y).data_url()

    puck.observe(redraw, names=["x", "y"])
    n = len(x)
    return _wrap(puck, [
        {"x": [x0] * n, "y": [y0] * n},
        {"x": [x1] * n, "y": [y1] * n},
        {"x": [(x0, x1)[i % 2] for i in range(n)], "y": [(y1, y0)[i % 2] for i in range(n)]},
    ])


def puck_points(value) -> np.ndarray:
    """The pucks of a :func:`draggable_points` value as float64 [n, 2] (x, y) rows."""
    return np.column_stack([np.asarray(value["x"], np.float64),
                            np.asarray(value["y"], np.float64)]).reshape(-1, 2)


# ----------------------------------------------------------------------------- a 2-D point
def point_2d(x=0.0, y=0.0, *, x_bounds=(-1.0, 1.0), y_bounds=(-1.0, 1.0), size=300):
    """A point dragged inside a ``size``-pixel square mapped to ``x_bounds`` x ``y_bounds``.

    Keyboard path: two sliders (or numbers) over the same bounds, passed as ``x`` and ``y``. Read
    it with :func:`point`. Test values: the four corners.
    """
    from wigglystuff import Slider2D

    (x0, x1), (y0, y1) = map(float, x_bounds), map(float, y_bounds)
    widget = Slider2D(x=float(np.clip(x, x0, x1)), y=float(np.clip(y, y0, y1)), width=size,
                      height=size, x_bounds=(x0, x1), y_bounds=(y0, y1))
    return _wrap(widget, [{"x": x0, "y": y0}, {"x": x1, "y": y1}, {"x": x0, "y": y1},
                          {"x": x1, "y": y0}])


def point(value) -> tuple[float, float]:
    """``(x, y)`` of a :func:`point_2d` value."""
    return float(value["x"]), float(value["y"])


# ----------------------------------------------------------------------------- drawing
# The drawings this module encoded (base64 PNG -> ink as uint8 opacity), so that reading a canvas
# the course itself drew, its start image or a test value, never decodes a PNG. A few, oldest
# dropped first: each canvas adds five.
_ENCODED: dict[str, np.ndarray] = {}
_ENCODED_MAX = 40


def _png(ink: np.ndarray) -> str:
    """Base64 PNG (no ``data:`` prefix) of black ink with opacity ``ink`` on a transparent canvas
    (a grey + alpha PNG, :func:`engine.course.plot.png`), remembered for :func:`ink`."""
    from engine.course.plot import png, remember

    alpha = np.round(np.clip(ink, 0, 1) * 255).astype(np.uint8)
    encoded = base64.b64encode(png(np.stack([np.zeros_like(alpha), alpha], axis=-1))).decode("ascii")
    remember(_ENCODED, encoded, alpha, size=_ENCODED_MAX)
    return encoded


def canvas(size=256, start=None):
    """A ``size`` x ``size`` canvas to draw on in black (marker and eraser; no colour picker).

    ``start``: an optional image in [0, 1] (any shape, e.g. an 8x8 test digit) shown enlarged
    (nearest pixel) as the first drawing. Keyboard path: a dropdown of test digits (and "blank")
    passed as ``start``, so the classifier is reachable without drawing. Read it with
    :func:`ink`, then :func:`to_digit` for the 8x8 the digit models take.

    Test values: an empty canvas, a canvas inked everywhere, one dot (a 9-pixel square at the
    centre), a vertical bar down the middle (a "1").
    """
    from wigglystuff import Paint

    size = int(size)
    first = np.zeros((size, size))
    if start is not None:
        start = np.clip(np.asarray(start, np.float64), 0, 1)
        rows = np.arange(size) * start.shape[0] // size
        cols = np.arange(size) * start.shape[1] // size
        first = start[np.ix_(rows, cols)]
    widget = Paint(width=size, height=size, brush=False, color_picker=False, store_background=True)
    widget.base64 = _png(first)
    dot, bar = np.zeros((size, size)), np.zeros((size, size))
    dot[size // 2 - 1:size // 2 + 2, size // 2 - 1:size // 2 + 2] = 1
    bar[size // 8:-size // 8, size // 2 - size // 16:size // 2 + size // 16] = 1
    return _wrap(widget, [{"base64": _png(np.zeros((size, size)))},
                          {"base64": _png(np.ones((size, size)))},
                          {"base64": _png(dot)}, {"base64": _png(bar)}])


def ink(value) -> np.ndarray:
    """The drawing of a :func:`canvas` value as float32 [H, W] in [0, 1]: 0 blank, 1 full ink.

    Ink is opacity times darkness, so black strokes count whether the canvas stored a white
    background or a transparent one. An empty or unreadable value is a blank canvas of the
    value's size. A drawing this module encoded (the canvas's start, its test values) is looked
    up, not decoded; a learner's drawing is decoded with Pillow, imported here.
    """
    height, width = int(value.get("height", 0) or 1), int(value.get("width", 0) or 1)
    data = (value.get("base64") or "").split("base64,")[-1]
    if not data:
        return np.zeros((height, width), np.float32)
    if data in _ENCODED:
        return _ENCODED[data].astype(np.float32) / np.float32(255)
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(base64.b64decode(data))).convert("RGBA")
    except (OSError, ValueError):  # not base64, or not an image: as the docstring says, a blank canvas
        return np.zeros((height, width), np.float32)
    rgba = np.asarray(image, np.float32) / np.float32(255)
    darkness = 1 - rgba[..., :3] @ np.array([0.299, 0.587, 0.114], np.float32)
    return np.clip(rgba[..., 3] * darkness, 0, 1).astype(np.float32)


def to_digit(drawing, *, fit=True) -> np.ndarray:
    """A drawing (float [H, W] in [0, 1]) on ``engine.data.load_digits``' scale: float32 [8, 8].

    As the UCI scans were made: the drawing becomes a 32x32 scan (a cell holds the most ink of its
    pixels, so a thin stroke still marks the cells it crosses), and each 8x8 pixel is the mean of
    its 4x4 block of cells. An 8x8 image enlarged by :func:`canvas` comes back unchanged
    (``fit=False``). ``fit``: first crop to the ink's bounding box, centred in a square, so a small
    digit fills the frame as the scans' size-normalised digits do. A blank drawing gives zeros.
    """
    drawing = np.asarray(drawing, np.float64)
    if drawing.ndim != 2 or drawing.size == 0:
        raise ValueError(f"to_digit: expected a 2-D drawing, got shape {drawing.shape}")
    drawing = np.clip(drawing, 0, 1)
    if fit and (drawing > 0).any():
        rows, cols = np.flatnonzero(drawing.any(axis=1)), np.flatnonzero(drawing.any(axis=0))
        drawing = drawing[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
        side = max(drawing.shape)
        square = np.zeros((side, side))
        top, left = (side - drawing.shape[0]) // 2, (side - drawing.shape[1]) // 2
        square[top:top + drawing.shape[0], left:left + drawing.shape[1]] = drawing
        drawing = square
    # Enlarge a drawing smaller than the scan first, so that every cell of the scan gets pixels.
    drawing = np.repeat(np.repeat(drawing, -(-DIGIT_SCAN // drawing.shape[0]), axis=0),
                        -(-DIGIT_SCAN // drawing.shape[1]), axis=1)
    scan = np.zeros((DIGIT_SCAN, DIGIT_SCAN))
    rows = np.arange(drawing.shape[0]) * DIGIT_SCAN // drawing.shape[0]
    cols = np.arange(drawing.shape[1]) * DIGIT_SCAN // drawing.shape[1]
    np.maximum.at(scan, np.ix_(rows, cols), drawing)
    block = DIGIT_SCAN // DIGIT_SIZE
    return scan.reshape(DIGIT_SIZE, block, DIGIT_SIZE, block).mean(axis=(1, 3)).astype(np.float32)


# ----------------------------------------------------------------------------- matrix
def matrix(value, *, min_value=-5.0, max_value=5.0, step=0.1, label=""):
    """An editable matrix (``mo.ui.matrix``: drag an entry, or arrow keys / Enter to type one).

    wigglystuff's ``Matrix`` graduated into marimo as ``mo.ui.matrix``, which is keyboard-editable
    and needs no widget package. Read it with :func:`as_array`. Test values: every entry at
    ``min_value``, every entry at ``max_value``, all zeros (when 0 is within the bounds).
    """
    import marimo as mo

    value = np.asarray(value, np.float64)
    if value.ndim != 2:
        raise ValueError(f"matrix: expected a 2-D value, got shape {value.shape}")
    element = mo.ui.matrix(value.tolist(), min_value=min_value, max_value=max_value, step=step,
                           label=label)
    fills = [min_value, max_value] + ([0.0] if min_value <= 0 <= max_value else [])
    element.test_values = [np.full(value.shape, float(f)).tolist() for f in fills]
    return element


def as_array(value) -> np.ndarray:
    """A :func:`matrix` value as float64 [rows, cols]."""
    return np.atleast_2d(np.asarray(value, np.float64))


# ----------------------------------------------------------------------------- labelled data set
class Drawn(NamedTuple):
    """A drawn data set: X float32 [n, 2], y int64 [n] (class 0.. in the widget's colour order),
    and ``problem``: None, or why the set cannot be used (say it in a warn callout)."""

    X: np.ndarray
    y: np.ndarray
    problem: str | None


def _scatter_rows(X, y, width, height, bounds):
    (x0, x1), (y0, y1) = bounds
    X = np.asarray(X, np.float64).reshape(-1, 2)
    return [{"x": float((a - x0) / (x1 - x0) * width), "y": float((b - y0) / (y1 - y0) * height),
             "color": SCATTER_COLORS[int(c)], "label": SCATTER_CLASSES[int(c)], "batch": 0} for (a, b), c in zip(X, y)]


def scatter(n_classes=2, *, bounds=((-1.0, 1.0), (-1.0, 1.0)), size=(400, 400), start=None):
    """A canvas to spray a labelled 2-D data set on, in ``n_classes`` (1 to 4) colours.

    ``bounds``: the data coordinates the canvas spans, ``((x0, x1), (y0, y1))``; pass the same to
    :func:`scatter_data`. ``start``: an optional ``(X, y)`` shown first; keyboard path: a dropdown
    of preset data sets (the lab's) passed as ``start``.

    Test values: no points, one point, one class (eight points of class 0), two points of
    different classes in opposite corners.
    """
    from drawdata import ScatterWidget

    if not 1 <= n_classes <= len(SCATTER_CLASSES):
        raise ValueError(f"scatter: n_classes must be 1 to {len(SCATTER_CLASSES)}, got {n_classes}")
    width, height = map(int, size)
    data = [] if start is None else _scatter_rows(*start, width, height, bounds)
    widget = ScatterWidget(n_classes=n_classes, width=width, height=height, data=data)
    (x0, x1), (y0, y1) = bounds
    line = np.linspace(-0.5, 0.5, 8)
    one_class = np.column_stack([line * (x1 - x0) / 2 + (x0 + x1) / 2, line * (y1 - y0) / 2 + (y0 + y1) / 2])
    corners = np.array([[x0, y0], [x1, y1]])
    middle = np.array([[(x0 + x1) / 2, (y0 + y1) / 2]])
    return _wrap(widget, [
        {"data": []},
        {"data": _scatter_rows(middle, [0], width, height, bounds)},
        {"data": _scatter_rows(one_class, [0] * 8, width, height, bounds)},
        {"data": _scatter_rows(corners, [0, min(1, n_classes - 1)], width, height, bounds)},
    ])


def scatter_data(value, *, bounds=((-1.0, 1.0), (-1.0, 1.0)), min_points=2, min_classes=2) -> Drawn:
    """A :func:`scatter` value as :class:`Drawn`: X float32 [n, 2] in ``bounds`` (points sprayed
    past the edge are clipped to it), y int64 [n].

    ``problem`` names what is missing when the set has fewer than ``min_points`` points or
    ``min_classes`` classes (a classifier needs 2; a density model ``min_classes=1``); X and y
    are still returned, typed and shaped, possibly empty.
    """
    (x0, x1), (y0, y1) = bounds
    width, height = float(value.get("width") or 1), float(value.get("height") or 1)
    rows = [r for r in value.get("data") or [] if r.get("label") in SCATTER_CLASSES]
    X = np.array([[r["x"] / width, r["y"] / height] for r in rows], np.float64).reshape(-1, 2)
    X = np.column_stack([x0 + np.clip(X[:, 0], 0, 1) * (x1 - x0), y0 + np.clip(X[:, 1], 0, 1) * (y1 - y0)])
    y = np.array([SCATTER_CLASSES.index(r["label"]) for r in rows], np.int64)
    classes = np.unique(y)
    problem = None
    if len(y) < min_points:
        problem = f"Draw at least {min_points} point{'s' * (min_points != 1)}: the canvas has {len(y)}."
    elif len(classes) < min_classes:
        have = ", ".join(SCATTER_CLASSES[c] for c in classes) or "none"
        problem = (f"Draw points of at least {min_classes} classes (pick a colour above the canvas): "
                   f"the canvas has class {have} only.")
    return Drawn(X.astype(np.float32), y, problem)
