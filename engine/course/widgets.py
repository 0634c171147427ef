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

marimo, wigglystuff, drawdata, Matplotlib and Pillow are imported inside the functions:
``import engine`` and ``import engine.course`` load none of them (tests/engine/test_layers.py).
The pucks' chart is a Matplotlib ``Figure`` built without pyplot, drawn once (or beforehand, by
``puck_background`` in a cell of its own, when a slider re-creates the pucks); what depends on the
pucks is drawn by the cell that reads them.
"""

from __future__ import annotations

import base64
import functools
import io
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
# The background's resolution (pixels an inch): the image is shown at its size in pixels, so the
# widget is ``figsize`` x 100 pixels wide, as a Matplotlib figure is by default. Its margins, in
# inches, hold the tick labels, axis labels and a title at Matplotlib's default 10 points for any
# ``figsize`` (fixed, so that the box the pucks map through is known before the one draw; a layout
# engine would draw twice).
_DPI = 100
_MARGINS = {"left": 0.65, "right": 0.2, "bottom": 0.5, "top": 0.35}


def _figure(figsize):
    """An empty Matplotlib ``Figure`` of ``figsize`` inches whose axes will sit inside the margins."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=_DPI)
    (width, height), m = figsize, _MARGINS
    fig.subplots_adjust(
        left=m["left"] / width, right=1 - m["right"] / width, bottom=m["bottom"] / height, top=1 - m["top"] / height
    )
    return fig


def _background(draw, points, x_bounds, y_bounds, figsize):
    """A Matplotlib ``Figure`` (no pyplot: it never enters pyplot's list of open figures) with one
    axes at ``x_bounds`` x ``y_bounds``, on which ``draw(ax, points)`` drew the pucks' background."""
    fig = _figure(figsize)
    ax = fig.add_subplot()
    ax.set_xlim(x_bounds)
    ax.set_ylim(y_bounds)
    draw(ax, points)
    # the pucks map pixels to data through these limits: the callback may not move them
    ax.set_xlim(x_bounds)
    ax.set_ylim(y_bounds)
    return fig


class PuckBackground(NamedTuple):
    """A pucks' chart drawn once (:func:`puck_background`): its PNG and the box it maps through."""

    png: bytes  # the figure as Matplotlib saves it to PNG (what ChartPuck shows)
    x_bounds: tuple[float, float]
    y_bounds: tuple[float, float]
    figsize: tuple[float, float]


def puck_background(draw, *, x_bounds, y_bounds, figsize=(5.0, 3.6)) -> PuckBackground:
    """The chart ``draw(ax)`` draws on the axes of a ``figsize`` figure (limits fixed at the bounds),
    rendered once to pixels, for :func:`draggable_points` to show under its pucks.

    Drawn in a cell of its own that reads only what the chart shows, so that re-creating the pucks
    (a slider that places them) does not draw the chart again: the widget is then built over a
    figure whose canvas prints this chart's PNG, in the same box (a few ms instead of 35 to 50)."""
    import matplotlib

    (x0, x1), (y0, y1) = map(float, x_bounds), map(float, y_bounds)
    fig = _background(lambda ax, _points: draw(ax), np.empty((0, 2)), (x0, x1), (y0, y1), tuple(map(float, figsize)))
    png = io.BytesIO()
    with matplotlib.rc_context({"savefig.bbox": "standard"}):
        fig.savefig(png, format="png", dpi=fig.dpi)  # as ChartPuck saves its figure
    return PuckBackground(png.getvalue(), (x0, x1), (y0, y1), tuple(map(float, figsize)))


_IMAGE_FIGURES: dict = {}  # id(background) -> (background, its figure): a few, oldest dropped first


def _image_figure(background: PuckBackground):
    """:func:`_printed_figure` of ``background``, made once (its axes cost about 6 ms to build) and
    kept with the background while a few newer ones are not made."""
    from engine.course.plot import remember

    kept = _IMAGE_FIGURES.get(id(background))
    if kept is None or kept[0] is not background:
        kept = remember(_IMAGE_FIGURES, id(background), (background, _printed_figure(background)), size=8)
    return kept[1]


def _printed_figure(background: PuckBackground):
    """A figure with an empty, invisible axes in the box ``background`` was drawn in (what ChartPuck
    measures), whose canvas saves ``background``'s PNG as the figure's: Matplotlib's own PNG of
    the chart, drawn once. ChartPuck's constructor renders its figure to a PNG (a 500 x 360 image:
    about 12 ms to draw and 8 ms to encode); a canvas is Matplotlib's extension point for how a
    figure is printed, so the constructor runs as it is and gets the chart's PNG at once."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    class PrintedCanvas(FigureCanvasAgg):
        def print_png(self, filename_or_obj, **_kwargs):
            if not hasattr(filename_or_obj, "write"):  # ChartPuck saves to a BytesIO
                raise TypeError(f"the pucks' background figure prints to a file object, not {filename_or_obj!r}")
            filename_or_obj.write(background.png)

    fig = _figure(background.figsize)
    PrintedCanvas(fig)
    ax = fig.add_subplot()
    ax.set_xlim(background.x_bounds)
    ax.set_ylim(background.y_bounds)
    ax.set_axis_off()
    return fig


def draggable_points(draw, x, y, *, x_bounds=None, y_bounds=None, figsize=(5.0, 3.6), color="outlier", throttle=50):
    """Pucks at ``(x[i], y[i])`` over a Matplotlib chart that ``draw(ax, points)`` draws once.

    The widget is wigglystuff's ``ChartPuck`` made by its constructor from a Matplotlib ``Figure``
    of ``figsize`` inches at 100 pixels an inch, built without pyplot. ``ax`` is that figure's
    axes, its limits fixed at ``x_bounds``/``y_bounds`` (the pucks map pixels to data through
    them); ``points`` is a float64 [n, 2] array of the pucks' starting positions. The chart is the
    *background*: drawn once, as a PNG (Matplotlib takes about 0.05 to 0.1 s for one, 3 to 10
    times that in the browser), and never redrawn while a puck moves; the browser moves the pucks
    over it. Draw what depends on the pucks in the cell that reads them (an Altair chart of
    :func:`puck_points`), so a move re-runs only that.

    ``draw`` may also be a :func:`puck_background` drawn beforehand (its bounds and size are then
    the widget's): a cell that re-creates the pucks, from a slider that places them, then builds
    the widget without drawing the chart again.

    ``color``: the pucks' colour, a palette name (``plot.color``) or a hex string; by default the
    palette's "outlier" (points the learner moved). The pucks stay inside the bounds. The number
    of pucks is fixed when the widget is made: to add points, re-create it from a count control
    (its keyboard path, with a slider for the values that place them). Read it with
    :func:`puck_points`. ``throttle``: the pucks' position reaches Python at most every that many
    milliseconds while dragging (each time the cells that read it re-run); ``"dragend"`` only on
    release, for slow cells.

    Test values: every puck in the lower-left corner, every puck in the upper-right corner, the
    pucks alternating between the other two corners.
    """
    import matplotlib
    from wigglystuff import ChartPuck

    from engine.course.plot import color as palette_color

    x, y = [float(v) for v in np.atleast_1d(x)], [float(v) for v in np.atleast_1d(y)]
    if len(x) != len(y) or not x:
        raise ValueError(f"draggable_points: x and y need the same, non-zero length; got {len(x)} and {len(y)}")
    if isinstance(draw, PuckBackground):
        x_bounds, y_bounds = draw.x_bounds, draw.y_bounds
    (x0, x1), (y0, y1) = map(float, x_bounds), map(float, y_bounds)
    # The image must keep the figure's size, so that the axes' box is where ChartPuck measured it.
    # One figure per background serves every widget made over it, in every session (marimo run: a
    # thread per session). ChartPuck draws it only to measure its axes' box: its pixels (a blank page,
    # the axes are off) are never used, since its canvas prints the stored PNG, so two sessions
    # drawing it at once cannot change what either gets.
    with matplotlib.rc_context({"savefig.bbox": "standard"}):
        if isinstance(draw, PuckBackground):
            fig = _image_figure(draw)
        else:
            fig = _background(
                draw, np.column_stack([x, y]).astype(np.float64), (x0, x1), (y0, y1), tuple(map(float, figsize))
            )
        puck = ChartPuck(
            fig,
            x=x,
            y=y,
            puck_color=palette_color(color),
            throttle=throttle,
            drag_x_bounds=(x0, x1),
            drag_y_bounds=(y0, y1),
        )
    n = len(x)
    return _wrap(
        puck,
        [
            {"x": [x0] * n, "y": [y0] * n},
            {"x": [x1] * n, "y": [y1] * n},
            {"x": [(x0, x1)[i % 2] for i in range(n)], "y": [(y1, y0)[i % 2] for i in range(n)]},
        ],
    )


def puck_points(value) -> np.ndarray:
    """The pucks of a :func:`draggable_points` value as float64 [n, 2] (x, y) rows."""
    return np.column_stack([np.asarray(value["x"], np.float64), np.asarray(value["y"], np.float64)]).reshape(-1, 2)


# ----------------------------------------------------------------------------- a 2-D point
def point_2d(x=0.0, y=0.0, *, x_bounds=(-1.0, 1.0), y_bounds=(-1.0, 1.0), size=300):
    """A point dragged inside a ``size``-pixel square mapped to ``x_bounds`` x ``y_bounds``.

    Keyboard path: two sliders (or numbers) over the same bounds, passed as ``x`` and ``y``. Read
    it with :func:`point`. Test values: the four corners.
    """
    from wigglystuff import Slider2D

    (x0, x1), (y0, y1) = map(float, x_bounds), map(float, y_bounds)
    widget = Slider2D(
        x=float(np.clip(x, x0, x1)),
        y=float(np.clip(y, y0, y1)),
        width=size,
        height=size,
        x_bounds=(x0, x1),
        y_bounds=(y0, y1),
    )
    return _wrap(widget, [{"x": x0, "y": y0}, {"x": x1, "y": y1}, {"x": x0, "y": y1}, {"x": x1, "y": y0}])


def point(value) -> tuple[float, float]:
    """``(x, y)`` of a :func:`point_2d` value."""
    return float(value["x"]), float(value["y"])


# ----------------------------------------------------------------------------- drawing
# The drawings this module encoded (base64 PNG -> ink as uint8 opacity), so that reading a canvas
# the course itself drew, its start image or a test value, never decodes a PNG. A few, oldest
# dropped first: each canvas adds its start (its four test drawings are shared by size).
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


@functools.lru_cache(maxsize=4)
def _test_drawings(size: int) -> tuple:
    """A ``size`` canvas's test values as (PNG, ink) pairs: blank, inked everywhere, a dot at the
    centre, a vertical bar. The same for every canvas of that size: encoded once (a re-created
    canvas, such as one whose start a menu changes, skips four of its five PNGs)."""
    dot, bar = np.zeros((size, size)), np.zeros((size, size))
    dot[size // 2 - 1 : size // 2 + 2, size // 2 - 1 : size // 2 + 2] = 1
    bar[size // 8 : -size // 8, size // 2 - size // 16 : size // 2 + size // 16] = 1
    drawings = (np.zeros((size, size)), np.ones((size, size)), dot, bar)
    return tuple((_png(d), np.round(d * 255).astype(np.uint8)) for d in drawings)


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

    from engine.course.plot import remember

    size = int(size)
    first = np.zeros((size, size))
    if start is not None:
        start = np.clip(np.asarray(start, np.float64), 0, 1)
        rows = np.arange(size) * start.shape[0] // size
        cols = np.arange(size) * start.shape[1] // size
        first = start[np.ix_(rows, cols)]
    widget = Paint(width=size, height=size, brush=False, color_picker=False, store_background=True)
    widget.base64 = _png(first)
    tests = _test_drawings(size)
    for encoded, alpha in tests:  # remembered again, so that ink() reads them without decoding
        remember(_ENCODED, encoded, alpha, size=_ENCODED_MAX)
    return _wrap(widget, [{"base64": encoded} for encoded, _ in tests])


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
        drawing = drawing[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
        side = max(drawing.shape)
        square = np.zeros((side, side))
        top, left = (side - drawing.shape[0]) // 2, (side - drawing.shape[1]) // 2
        square[top : top + drawing.shape[0], left : left + drawing.shape[1]] = drawing
        drawing = square
    # Enlarge a drawing smaller than the scan first, so that every cell of the scan gets pixels.
    drawing = np.repeat(
        np.repeat(drawing, -(-DIGIT_SCAN // drawing.shape[0]), axis=0), -(-DIGIT_SCAN // drawing.shape[1]), axis=1
    )
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
    element = mo.ui.matrix(value.tolist(), min_value=min_value, max_value=max_value, step=step, label=label)
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
    return [
        {
            "x": float((a - x0) / (x1 - x0) * width),
            "y": float((b - y0) / (y1 - y0) * height),
            "color": SCATTER_COLORS[int(c)],
            "label": SCATTER_CLASSES[int(c)],
            "batch": 0,
        }
        for (a, b), c in zip(X, y)
    ]


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
    return _wrap(
        widget,
        [
            {"data": []},
            {"data": _scatter_rows(middle, [0], width, height, bounds)},
            {"data": _scatter_rows(one_class, [0] * 8, width, height, bounds)},
            {"data": _scatter_rows(corners, [0, min(1, n_classes - 1)], width, height, bounds)},
        ],
    )


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
        problem = (
            f"Draw points of at least {min_classes} classes (pick a colour above the canvas): "
            f"the canvas has class {have} only."
        )
    return Drawn(X.astype(np.float32), y, problem)
