"""The course's one visual language: a palette with meanings, and the chart helpers notebooks share.

The same colour always means the same thing across every notebook (see :data:`PALETTE` and
:data:`MEANINGS`): a function is blue, its derivative orange, a formula ("analytic") is drawn as a
line and the engine's autograd values as dark dots on top of it, data is grey and a model purple,
training curves teal and validation pink, and each optimizer keeps its own colour.

Every chart is a Vega-Lite spec written as a dict (:class:`VegaLite`), which marimo draws itself:
writing the dict costs well under a millisecond, where building and validating Altair objects
cost tens (and importing Altair a quarter of a second), and a Matplotlib figure rendered to a PNG
0.1–0.2 s a redraw. Charts fill the notebook's width (``width: "container"``), put their legend
at the bottom, and layer with ``+`` as Altair's do (``chart + plot.rule(0.5)``). Images are PNGs
written with zlib (:func:`png`) in colour maps shipped as tables (:mod:`engine.course._colormaps`),
so no page needs Altair or Matplotlib. Data goes to the charts as records (no pandas needed),
with NaN and ±inf sent as missing values so that a chart never fails on them; marimo is imported
inside the functions, so ``import engine`` needs only NumPy.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import struct
import zlib

import numpy as np

from engine._checks import positive_int
from engine.course import _colormaps

# ----------------------------------------------------------------------------- palette

PALETTE = {
    # curves of a function and its slope
    "function": "#2563eb",
    "derivative": "#ea580c",
    "analytic": "#6b7280",
    "autograd": "#111827",
    "error": "#dc2626",
    "reference": "#9ca3af",
    # data against what a model makes of it
    "data": "#64748b",
    "model": "#7c3aed",
    "target": "#16a34a",
    "outlier": "#dc2626",
    # learning curves
    "train": "#0d9488",
    "validation": "#db2777",
    # numerical precision
    "float32": "#ea580c",
    "float64": "#2563eb",
    # optimizers
    "sgd": "#6b7280",
    "momentum": "#2563eb",
    "nesterov": "#0891b2",
    "rmsprop": "#16a34a",
    "adam": "#ea580c",
    "adamw": "#be123c",
    # losses
    "mse": "#0369a1",
    "mae": "#92400e",
    "huber": "#15803d",
    "pseudo_huber": "#a21caf",
    "cross_entropy": "#ca8a04",
    # the two directions of a KL fit
    "kl_forward": "#0284c7",
    "kl_reverse": "#d97706",
}

MEANINGS = {
    "function": "the function itself, f(x)",
    "derivative": "its derivative f'(x), from the formula",
    "analytic": "a closed-form formula (drawn as a line)",
    "autograd": "values computed by the engine's autograd (drawn as dots over the formula)",
    "error": "an error or a difference between two computations",
    "reference": "a reference level (zero line, target value, bound)",
    "data": "observed data points",
    "model": "what the model predicts",
    "target": "the target or the true value",
    "outlier": "points the learner moved away from the trend",
    "train": "computed on the training set",
    "validation": "computed on held-out data",
    "float32": "single precision",
    "float64": "double precision",
    "sgd": "plain SGD", "momentum": "SGD with momentum", "nesterov": "SGD with Nesterov momentum",
    "rmsprop": "RMSprop", "adam": "Adam", "adamw": "AdamW (decoupled weight decay)",
    "mse": "mean squared error", "mae": "mean absolute error", "huber": "Huber loss",
    "pseudo_huber": "pseudo-Huber loss", "cross_entropy": "cross-entropy",
    "kl_forward": "fitted by minimising KL(p‖q) (mode-covering)",
    "kl_reverse": "fitted by minimising KL(q‖p) (mode-seeking)",
}

# Class colours for labelled points and decision regions (class k -> CLASS_COLORS[k]).
CLASS_COLORS = ("#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#4b5563")

# A second set of distinct colours for curves that have no fixed meaning (several activations).
SERIES_COLORS = ("#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#ca8a04", "#db2777",
                 "#4b5563", "#65a30d", "#be123c")

HEIGHT = 260


def color(name: str) -> str:
    """The hex colour for a palette name (e.g. 'derivative', 'adam'); a hex string passes through."""
    if isinstance(name, str) and name.startswith("#"):
        return name
    try:
        return PALETTE[name]
    except KeyError:
        raise ValueError(f"plot.color: unknown palette name {name!r}; known: {', '.join(PALETTE)}") from None


# ----------------------------------------------------------------------------- data helpers


def _clean(v, digits: int = 6):
    """A JSON-safe Python scalar: NaN/inf -> None (a gap in the chart), floats rounded."""
    if isinstance(v, (np.floating, float)):
        v = float(v)
        if not math.isfinite(v):
            return None
        return float(f"{v:.{digits}g}")
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def records(**columns) -> list:
    """Chart rows (one dict per point) from equal-length columns (arrays, lists or scalars broadcast)."""
    n = max((len(np.atleast_1d(c)) for c in columns.values() if not np.isscalar(c)), default=1)
    cols = {}
    for k, c in columns.items():
        a = np.atleast_1d(c) if not np.isscalar(c) else np.full(n, c, dtype=object)
        if len(a) != n:
            raise ValueError(f"plot.records: column {k!r} has {len(a)} values, the others {n}")
        cols[k] = a
    keys = list(cols)
    return [{k: _clean(cols[k][i]) for k in keys} for i in range(n)]


def _csv_data(rows: list) -> dict:
    """Chart data as inline CSV text, with each field's type stated: a header and one line of
    values per row, where JSON would repeat every key in every row (and a base64 data URL add a
    third): about a quarter of the bytes to build, send and parse, for a chart redrawn at every
    slider move. A row's ``None`` is an empty value, which Vega reads as null (a gap)."""
    fields = list(dict.fromkeys(key for row in rows for key in row))
    columns = [[row.get(field) for row in rows] for field in fields]
    parse = {field: _csv_type(column) for field, column in zip(fields, columns)}
    texts = [_csv_column(column, parse[field]) for field, column in zip(fields, columns)]
    lines = [",".join(map(_csv_field, fields)), *map(",".join, zip(*texts))]
    # Text columns are left out of the directive: Vega then keeps them as strings (a null entry
    # is an error in Vega, where Vega-Lite's schema allows it).
    return {"values": "\n".join(lines),
            "format": {"type": "csv", "parse": {f: kind for f, kind in parse.items() if kind}}}


def _csv_column(values: list, kind) -> list:
    """One column's CSV fields (numbers and booleans written directly: the common, fast case)."""
    if kind == "number":
        return ["" if v is None else repr(v) for v in values]
    if kind == "boolean":
        return ["" if v is None else "true" if v else "false" for v in values]
    return [_csv_field(v) for v in values]


def _csv_type(values: list):
    """The Vega parse directive of a column: "boolean", "number", or None (text, left as it is)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "boolean"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "number"
    return None


def _csv_field(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    text = str(v)
    if any(c in text for c in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def chart_rows(part) -> list:
    """The records of a chart, or of one part of its ``to_dict()`` spec (for tests and debugging):
    the rows :func:`records` made, numbers back as int or float as they were written."""
    if hasattr(part, "to_dict"):
        part = part.to_dict()
    data = part.get("data", {})
    values, form = data.get("values"), data.get("format", {})
    if isinstance(values, list):
        return values
    if not isinstance(values, str) or form.get("type") != "csv":
        raise ValueError("plot.chart_rows: this chart part holds no inline data")
    table = list(csv.reader(io.StringIO(values)))
    parse = form.get("parse", {})

    def read(field, text):
        kind = parse.get(field)
        if kind is None:
            return text
        if text == "":
            return None
        if kind == "boolean":
            return text == "true"
        number = float(text)
        return int(text) if text.lstrip("-").isdigit() else number

    return [{f: read(f, t) for f, t in zip(table[0], row)} for row in table[1:]]


class VegaLite:
    """A chart given as its Vega-Lite spec (a dict), which marimo draws itself (``_mime_``).

    Every chart of this module is one: writing the dict costs almost nothing, where building
    Altair objects and validating them against the schema cost tens of milliseconds a chart.
    ``VegaLite(layers)`` holds a layered chart that fills the notebook's width;
    :meth:`from_spec` any other spec (one mark, a facet, a concatenation). ``to_dict()`` returns
    the spec, so :func:`chart_rows` and the tests read it as they read an Altair chart's, and
    ``chart + other`` layers two charts as Altair does (below).
    """

    SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
    # What belongs to a whole chart rather than to its marks: ``+`` keeps the left chart's.
    _WHOLE_CHART = ("$schema", "width", "height", "title", "config")

    def __init__(self, layers: list, *, title=None, height=HEIGHT):
        self.spec = {"$schema": self.SCHEMA, "width": "container", "height": height, "layer": layers}
        if title:
            self.spec["title"] = title

    @classmethod
    def from_spec(cls, spec: dict) -> VegaLite:
        """The chart of any Vega-Lite ``spec`` (its ``$schema`` added)."""
        chart = cls.__new__(cls)
        chart.spec = {"$schema": cls.SCHEMA, **spec}
        return chart

    def to_dict(self) -> dict:
        return self.spec

    def _mime_(self):
        return "application/vnd.vegalite.v6+json", json.dumps(self.spec, allow_nan=False)

    def __add__(self, other: VegaLite) -> VegaLite:
        """One chart with the layers of both, in order (``chart + plot.rule(0.5)``), and the size,
        title and config of the left one, as Altair's ``+`` gives it."""
        if not isinstance(other, VegaLite):
            return NotImplemented
        left, right = self._body(), other._body()
        if "layer" not in left:  # a single mark becomes the first layer
            left = {"layer": [left]}
        on_top = right.pop("layer", None)
        if on_top is None:
            on_top = [right]
        elif set(right) - {"data"}:  # shared encodings or transforms: keep it a layer of its own
            on_top = [{**right, "layer": on_top}]
        elif "data" in right:  # its layers read its data, not the left chart's
            on_top = [{"data": right["data"], **layer} for layer in on_top]
        kept = {k: v for k, v in self.spec.items() if k in self._WHOLE_CHART}
        return VegaLite.from_spec({**kept, **left, "layer": left["layer"] + on_top})

    def _body(self) -> dict:
        """The spec without the whole chart's properties: a unit ({data, mark, encoding}) or a layer."""
        if not {"facet", "hconcat", "vconcat", "concat", "repeat"}.isdisjoint(self.spec):
            raise ValueError("plot.VegaLite: a faceted or concatenated chart cannot be layered with '+'")
        return {k: v for k, v in self.spec.items() if k not in self._WHOLE_CHART}


def _chart(body: dict, title=None, height=HEIGHT) -> VegaLite:
    """A chart of the notebook's width from ``body``, one mark ({data, mark, encoding}) or a layer."""
    return VegaLite.from_spec({**body, "width": "container", "height": height, **({"title": title} if title else {})})


# Vega-Lite's measurement types, in Altair's shorthand (``"x:Q"``): quantitative, nominal, ordinal.
_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal"}


def _field(shorthand: str, title=None, **more) -> dict:
    """An encoding channel from Altair's shorthand: ``_field("y:Q", "loss", format=".4g")``."""
    name, kind = shorthand.split(":")
    enc = {"field": name, "type": _TYPES[kind]}
    if title is not None:
        enc["title"] = title
    return {**enc, **more}


def _series_colors(names, colors=None, *, field="series", title="", palette=None) -> dict:
    """The colour channel of named series with their legend at the bottom: each name in its
    colour (``palette``, else ``colors[name]``, its palette colour or the next series colour)."""
    names = list(names)
    return _field(f"{field}:N", title, sort=names, legend={"orient": "bottom"},
                  scale={"domain": names, "range": list(palette or _color_range(names, colors))})


def _color_range(names, colors=None) -> list:
    """The colour of each series name: ``colors[name]``, else its palette colour, else the next series colour."""
    colors = colors or {}
    return [color(colors.get(n, n if n in PALETTE else SERIES_COLORS[i % len(SERIES_COLORS)]))
            for i, n in enumerate(names)]


def _scale(domain=None, **more) -> dict:
    """``{"scale": ...}`` for an encoding: a fixed ``domain`` and other scale properties, if any."""
    scale = ({"domain": [float(v) for v in domain]} if domain is not None else {}) | more
    return {"scale": scale} if scale else {}


# ----------------------------------------------------------------------------- charts


def _subsample(x, y, n_dots):
    step = max(1, len(x) // max(1, n_dots - 1))
    idx = np.arange(0, len(x), step)
    return np.asarray(x, dtype=float)[idx], np.asarray(y, dtype=float)[idx]


def _mask(yv, y_domain, log_y):
    yv = np.asarray(yv, dtype=float)
    if y_domain is not None:
        yv = np.where((yv < y_domain[0]) | (yv > y_domain[1]), np.nan, yv)
    if log_y:
        yv = np.where(yv > 0, yv, np.nan)
    return yv


def curves(x, ys: dict, *, x_title: str = "x", y_title: str = "y", title=None, colors=None,
           dashed=(), y_domain=None, height=HEIGHT, legend_title: str = "", log_y: bool = False,
           dots: dict | None = None, n_dots: int = 41, log_x: bool = False) -> VegaLite:
    """Several curves y(x) on one chart with one legend; optionally dots on top.

    ``ys`` maps a series name to its values over ``x`` (or to ``(x_i, y_i)`` for its own x);
    a name found in :data:`PALETTE` gets its colour unless ``colors`` says otherwise; names in
    ``dashed`` are drawn dashed. ``dots`` maps more series to values over ``x`` drawn as dots
    (about ``n_dots`` of them), dark 'autograd' unless ``colors`` names another colour: the
    engine's values laid over a formula's line. ``y_domain=(lo, hi)`` clips the view (values
    outside are cut); ``log_y`` draws a log axis (non-positive values become gaps), ``log_x`` a
    log x axis.
    """
    dots = dots or {}
    colors = dict(colors or {})
    for name in dots:
        colors.setdefault(name, "autograd")
    rows = []
    for name, v in ys.items():
        xs, yv = (v if isinstance(v, tuple) else (x, v))
        rows += records(x=np.asarray(xs, dtype=float), y=_mask(yv, y_domain, log_y), series=name,
                        dash=name in dashed)
    dot_rows = []
    for name, v in dots.items():
        xs, yv = _subsample(x, v, n_dots)
        dot_rows += records(x=xs, y=_mask(yv, y_domain, log_y), series=name)
    names = list(ys) + list(dots)
    encoding = {
        "x": _field("x:Q", x_title, **_scale(type="log") if log_x else {}),
        "y": _field("y:Q", y_title, **_scale(y_domain, **{"type": "log"} if log_y else {})),
        "color": _series_colors(names, colors, title=legend_title),
        "tooltip": [_field("series:N"), _field("x:Q", format=".4g"), _field("y:Q", format=".6g")],
    }
    dash = _field("dash:N", legend=None, scale={"domain": [False, True], "range": [[1, 0], [5, 4]]})
    lines = {"data": _csv_data(rows), "mark": {"type": "line", "clip": True},
             "encoding": {**encoding, "strokeDash": dash}}
    if not dot_rows:
        return _chart(lines, title, height)
    marks = {"data": _csv_data(dot_rows), "mark": {"type": "point", "filled": True, "size": 24, "opacity": 1,
                                                   "clip": True}, "encoding": encoding}
    return _chart({"layer": [lines, marks]}, title, height)


def function_and_derivative(x, f, df_analytic, df_autograd, *, name: str = "f", var: str = "x",
                            x_title=None, title=None, y_domain=None, n_dots: int = 41, height=HEIGHT) -> VegaLite:
    """A function (blue), its derivative from the formula (orange line), and the derivative
    computed by the engine's autograd (dark dots, every few points) drawn over the formula."""
    f_name, d_name, a_name = f"{name}({var})", f"{name}′({var}), formula", f"{name}′({var}), autograd"
    return curves(x, {f_name: f, d_name: df_analytic}, dots={a_name: df_autograd}, n_dots=n_dots,
                  x_title=x_title or var, y_title="value", colors={f_name: "function", d_name: "derivative"},
                  y_domain=y_domain, title=title, height=height)


def _label_axis(labels, title) -> dict:
    """The x channel of bar charts: one category per label, in the given order, labels upright."""
    return _field("label:N", title, sort=labels, axis={"labelAngle": 0})


def bars(labels, values, *, x_title: str = "", y_title: str = "", title=None, color_name: str = "model",
         y_domain=None, height=200, text_format: str = ".3f", dots: dict | None = None,
         bar_label: str | None = None) -> VegaLite:
    """Vertical bars with their value written on top (probabilities, per-layer shares...).

    ``dots`` maps a name to one value per label, drawn as dark 'autograd' dots on the bars (the
    engine's values over a formula's bars); ``bar_label`` names the bars in the legend then.
    """
    labels = [str(s) for s in labels]
    name = bar_label or "value"
    rows = records(label=np.asarray(labels, dtype=object), value=np.asarray(values, dtype=float), series=name)
    encoding = {"x": _label_axis(labels, x_title), "y": _field("value:Q", y_title, **_scale(y_domain)),
                "tooltip": [_field("label:N"), _field("value:Q", format=".4g")]}
    if not dots:
        text = {**encoding, "text": _field("value:Q", format=text_format)}
        return _chart({"data": _csv_data(rows), "layer": [
            {"mark": {"type": "bar", "color": color(color_name)}, "encoding": encoding},
            {"mark": {"type": "text", "dy": -6, "fontSize": 11}, "encoding": text}]}, title, height)
    names = [name] + list(dots)
    paint = _series_colors(names, {name: color_name, **{n: "autograd" for n in dots}})
    dot_rows = []
    for n, v in dots.items():
        dot_rows += records(label=np.asarray(labels, dtype=object), value=np.asarray(v, dtype=float), series=n)
    return _chart({"layer": [
        {"data": _csv_data(rows), "mark": {"type": "bar"}, "encoding": {**encoding, "color": paint}},
        {"data": _csv_data(dot_rows), "mark": {"type": "point", "filled": True, "size": 60, "opacity": 1},
         "encoding": {**encoding, "color": paint,
                      "tooltip": [_field("series:N"), _field("value:Q", format=".6g")]}}]}, title, height)


def grouped_bars(labels, series: dict, *, x_title: str = "", y_title: str = "", title=None, colors=None,
                 y_domain=None, height=200) -> VegaLite:
    """Bars side by side per label, one colour per series (e.g. predicted p and target q per class)."""
    labels = [str(s) for s in labels]
    rows = []
    for name, vals in series.items():
        rows += records(label=np.asarray(labels, dtype=object), value=np.asarray(vals, dtype=float), series=name)
    names = list(series)
    return _chart({"data": _csv_data(rows), "mark": {"type": "bar"}, "encoding": {
        "x": _label_axis(labels, x_title), "xOffset": _field("series:N", sort=names),
        "y": _field("value:Q", y_title, **_scale(y_domain)), "color": _series_colors(names, colors),
        "tooltip": [_field("label:N"), _field("series:N"), _field("value:Q", format=".4g")]}}, title, height)


def heatmap(z, *, x_labels=None, y_labels=None, x_title: str = "", y_title: str = "", color_title: str = "",
            title=None, scheme: str = "viridis", domain=None, annotate: bool = False, fmt: str = ".2f",
            height=HEIGHT) -> VegaLite:
    """A matrix as coloured cells (row 0 at the top), optionally with each value written in."""
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"plot.heatmap: needs a 2-D array, got shape {z.shape}")
    rows, cols = z.shape
    xl = [str(s) for s in (x_labels if x_labels is not None else range(cols))]
    yl = [str(s) for s in (y_labels if y_labels is not None else range(rows))]
    ii, jj = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    data = _csv_data(records(x=np.asarray(xl, dtype=object)[jj.ravel()], y=np.asarray(yl, dtype=object)[ii.ravel()],
                             z=z.ravel()))
    cells = {"x": _field("x:O", x_title, sort=xl), "y": _field("y:O", y_title, sort=yl)}
    rect = {"mark": {"type": "rect"}, "encoding": {
        **cells, "color": _field("z:Q", color_title, **_scale(domain, scheme=scheme)),
        "tooltip": [_field("y:O"), _field("x:O"), _field("z:Q", format=".4g")]}}
    if not annotate:
        return _chart({"data": data, **rect}, title, height)
    text = {"mark": {"type": "text", "fontSize": 11}, "encoding": {**cells, "text": _field("z:Q", format=fmt)}}
    return _chart({"data": data, "layer": [rect, text]}, title, height)


def scatter_classes(X, y, *, x_title: str = "x₁", y_title: str = "x₂", title=None, height=HEIGHT,
                    class_names=None) -> VegaLite:
    """2-D points coloured by class (class k in CLASS_COLORS[k])."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y).astype(int)
    names = class_names or [f"class {k}" for k in range(int(y.max()) + 1 if y.size else 1)]
    lab = np.asarray(names, dtype=object)[y]
    return _chart({"data": _csv_data(records(x1=X[:, 0], x2=X[:, 1], label=lab)),
                   "mark": {"type": "circle", "size": 28, "opacity": 0.8},
                   "encoding": {"x": _field("x1:Q", x_title), "y": _field("x2:Q", y_title),
                                "color": _series_colors(names, field="label",
                                                        palette=CLASS_COLORS[:len(names)])}}, title, height)


def loss_curves(history: dict, *, x_title: str = "epoch", y_title: str = "loss", title=None, log_y: bool = False,
                colors=None, height=HEIGHT) -> VegaLite:
    """Learning curves: ``history`` maps a series ('train', 'validation', an optimizer...) to values per step."""
    rows = []
    for name, vals in history.items():
        v = np.asarray(vals, dtype=float)
        if log_y:
            v = np.where(v > 0, v, np.nan)
        rows += records(step=np.arange(1, len(v) + 1), y=v, series=name)
    return _chart({"data": _csv_data(rows), "mark": {"type": "line"}, "encoding": {
        "x": _field("step:Q", x_title), "y": _field("y:Q", y_title, **_scale(type="log") if log_y else {}),
        "color": _series_colors(history, colors),
        "tooltip": [_field("series:N"), _field("step:Q"), _field("y:Q", format=".4g")]}}, title, height)


def histogram_grid(panels: dict, *, bins: int = 30, x_title: str = "value", columns: int = 4,
                   range_=None, color_name: str = "function", panel_width: int = 150, panel_height: int = 90,
                   title=None, flags: dict | None = None) -> VegaLite:
    """Small multiples of histograms, one per entry of ``panels`` (name -> samples), on one shared x range.

    ``flags`` may map a panel name to a short note shown in its header (e.g. '62% dead').
    (Faceted charts cannot use the container width, so panels have a fixed size.)
    """
    names = list(panels)
    finite = [np.asarray(v, dtype=float)[np.isfinite(v)] for v in panels.values()]
    if range_ is None:
        lo = min((a.min() for a in finite if a.size), default=-1.0)
        hi = max((a.max() for a in finite if a.size), default=1.0)
        range_ = (lo, hi) if hi > lo else (lo - 1, hi + 1)
    edges = np.linspace(range_[0], range_[1], bins + 1)
    rows = []
    labels = [f"{n} · {flags[n]}" if flags and n in flags else n for n in names]
    for label, a in zip(labels, finite):
        counts, _ = np.histogram(np.clip(a, range_[0], range_[1]), bins=edges)
        rows += records(lo=edges[:-1], hi=edges[1:], share=counts / max(1, a.size), panel=label)
    panel = {"mark": {"type": "rect", "color": color(color_name)}, "width": panel_width, "height": panel_height,
             "encoding": {"x": _field("lo:Q", x_title, **_scale(range_)), "x2": {"field": "hi"},
                          "y": _field("share:Q", "share"),
                          "tooltip": [_field("lo:Q", format=".3g"), _field("share:Q", format=".3f")]}}
    return VegaLite.from_spec({"data": _csv_data(rows), "facet": _field("panel:N", None, sort=labels) | {"title": None},
                               "columns": columns, "spec": panel, "resolve": {"scale": {"y": "independent"}},
                               **({"title": title} if title else {})})


def rule(value: float, orient: str = "y", color_name: str = "reference") -> VegaLite:
    """A horizontal (orient='y') or vertical ('x') reference line to layer over a chart."""
    if orient not in ("x", "y"):
        raise ValueError(f"plot.rule: orient must be 'x' (a vertical line) or 'y' (a horizontal one), got {orient!r}")
    return VegaLite.from_spec({"data": _csv_data([{"v": _clean(value)}]),
                               "mark": {"type": "rule", "color": color(color_name), "strokeDash": [3, 3]},
                               "encoding": {orient: _field("v:Q")}})


def points(x, y, *, color_name: str = "data", size: int = 40, label: str | None = None,
           filled: bool = True) -> VegaLite:
    """A layer of points (data, outliers, minima) in one palette colour, to add to a chart with ``+``."""
    rows = records(x=np.asarray(x, float), y=np.asarray(y, float), label=label or color_name)
    return VegaLite.from_spec({"data": _csv_data(rows),
                               "mark": {"type": "point", "filled": filled, "size": size, "color": color(color_name)},
                               "encoding": {"x": _field("x:Q"), "y": _field("y:Q"),
                                            "tooltip": [_field("x:Q", format=".4g"), _field("y:Q", format=".4g")]}})


def _axis(field: str, title: str, values) -> dict:
    """A quantitative position channel whose domain is exactly the extent of ``values``."""
    return {"field": field, "type": "quantitative", "title": title,
            "scale": {"domain": [float(np.min(values)), float(np.max(values))], "nice": False, "zero": False}}


def _grid_cells(data: dict, xx, yy, x_enc: dict, y_enc: dict, mark: dict, **encoding) -> dict:
    """A layer of one rect per point of a regular ``meshgrid`` (rows ``x, y`` at the centres in
    ``data``); the browser computes the edges, half a spacing each way (two columns sent, not four)."""
    xs, ys = np.asarray(xx, dtype=float)[0], np.asarray(yy, dtype=float)[:, 0]
    dx = float((xs[-1] - xs[0]) / max(len(xs) - 1, 1) / 2)
    dy = float((ys[-1] - ys[0]) / max(len(ys) - 1, 1) / 2)
    return {"data": data, "mark": mark,
            "transform": [{"calculate": f"datum.{v} {sign} {d!r}", "as": f"{v}{i}"}
                          for v, d in (("x", dx), ("y", dy)) for i, sign in ((0, "-"), (1, "+"))],
            "encoding": {"x": {**x_enc, "field": "x0"}, "x2": {"field": "x1"}, "y": {**y_enc, "field": "y0"},
                         "y2": {"field": "y1"}, **encoding}}


def remember(cache: dict, key, value, size: int):
    """Keep ``value`` under ``key`` in ``cache`` (returned), forgetting the oldest entries beyond
    ``size``. ``marimo run`` gives every session a thread in one process, so another session may
    evict at the same moment: an entry it removed first is no error."""
    while key not in cache and len(cache) >= size:
        try:
            cache.pop(next(iter(cache)), None)
        except (StopIteration, RuntimeError):  # emptied, or resized by another thread meanwhile
            break
    cache[key] = value
    return value


_SURFACE_DATA: dict = {}  # grid bytes -> its CSV data: a surface is encoded once, not at every redraw


def _surface_data(xx, yy, z, shade) -> dict:
    """The grid's records (centres, f and shade, 4 significant digits: a picture, not a table) as
    Vega-Lite data, remembered for the last few grids."""
    key = hashlib.sha1(b"".join(np.ascontiguousarray(a, dtype=float).tobytes() for a in (xx, yy, z))).hexdigest()
    if key in _SURFACE_DATA:
        return _SURFACE_DATA[key]
    return remember(_SURFACE_DATA, key, _csv_data(_rounded(records(
        x=np.asarray(xx, dtype=float).ravel(), y=np.asarray(yy, dtype=float).ravel(), f=z.ravel(),
        shade=shade.ravel()))), size=16)


def _rounded(rows: list, digits: int = 4) -> list:
    """Records with their numbers cut to ``digits`` significant digits (smaller pages for pictures)."""
    return [{k: _clean(v, digits) for k, v in row.items()} for row in rows]


def _path_rows(path, max_points: int) -> tuple:
    """(step, x, y) of a path cut at its first non-finite point, thinned to at most ``max_points``
    (the first and the last point always kept)."""
    p = np.asarray(path, dtype=float).reshape(-1, 2)
    ok = np.all(np.isfinite(p), axis=1)
    if not ok.all():
        p = p[: np.argmin(ok)]
    steps = np.arange(len(p))
    if len(p) > max_points:
        steps = np.unique(np.linspace(0, len(p) - 1, max_points).round().astype(int))
    return steps, p[steps, 0], p[steps, 1]


def surface_paths(xx, yy, zz, trajectories: dict, *, start=None, minimum=None, title=None, colors=None,
                  x_title: str = "θ₁", y_title: str = "θ₂", log_levels: bool = True, max_points: int = 200,
                  height=HEIGHT) -> VegaLite:
    """A loss surface as shaded cells (darker is lower; log-spaced shades by default) with one
    optimizer path per entry of ``trajectories`` (name -> [N, 2]), cheap enough to redraw at every
    slider move.

    Pass a coarse grid (40×40 is plenty); each path is cut at its first non-finite point and
    thinned to ``max_points``, its last position drawn as a dot; the view is the grid's box.
    """
    z = np.asarray(zz, dtype=float)
    finite = z[np.isfinite(z)]
    shade = np.log10(z - finite.min() + 1e-3) if (log_levels and finite.size) else z
    x_enc, y_enc = _axis("x", x_title, xx), _axis("y", y_title, yy)
    layers = [_grid_cells(_surface_data(xx, yy, z, shade), xx, yy, x_enc, y_enc, {"type": "rect", "opacity": 0.7},
                          color={"field": "shade", "type": "quantitative", "legend": None,
                                 "scale": {"scheme": "greys", "reverse": True}},
                          tooltip=[{"field": "f", "type": "quantitative", "title": "f(θ)", "format": ".4g"}])]
    rows, ends = [], []
    for name, path in trajectories.items():
        steps, px, py = _path_rows(path, max_points)
        rows += _rounded(records(step=steps, x=px, y=py, series=name)) if len(steps) else []
        ends += rows[-1:] if len(steps) else []
    names = list(trajectories)
    paint = _series_colors(names, colors)
    tooltip = [{"field": "series", "type": "nominal"}, {"field": "step", "type": "quantitative"},
               {"field": "x", "type": "quantitative", "format": ".3g"},
               {"field": "y", "type": "quantitative", "format": ".3g"}]
    if rows:
        layers.append({"data": _csv_data(rows), "mark": {"type": "line", "strokeWidth": 1.8, "clip": True},
                       "encoding": {"x": x_enc, "y": y_enc, "order": {"field": "step", "type": "quantitative"},
                                    "color": paint, "tooltip": tooltip}})
        layers.append({"data": _csv_data(ends), "mark": {"type": "circle", "size": 60, "opacity": 1,
                                                         "stroke": "white", "clip": True},
                       "encoding": {"x": x_enc, "y": y_enc, "color": {**paint, "legend": None},  # the lines' legend
                                    "tooltip": tooltip}})
    marks = [(start, "start", "square", "#111827", 70), (minimum, "minimum", "diamond", PALETTE["target"], 120)]
    for where, label, shape, fill, size in marks:
        if where is not None:
            layers.append({"data": _csv_data(records(x=[where[0]], y=[where[1]], label=label)),
                           "mark": {"type": "point", "shape": shape, "filled": True, "color": fill, "size": size,
                                    "opacity": 1},
                           "encoding": {"x": x_enc, "y": y_enc, "tooltip": [{"field": "label", "type": "nominal"}]}})
    return VegaLite(layers, title=title, height=height)


def class_regions(xx, yy, probs, X, y, *, title=None, height=HEIGHT) -> VegaLite:
    """Predicted class regions of a 2-D classifier (each cell the class colours mixed by probability,
    paler where the model is unsure) with the data on top. ``probs`` is [G, G, C] over the grid
    ``xx, yy``; 40×40 is plenty."""
    probs = np.asarray(probs, dtype=float)
    k = probs.shape[-1]
    cols = np.array([[int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)] for c in
                     (CLASS_COLORS[j % len(CLASS_COLORS)] for j in range(k))])
    conf = (probs.max(-1, keepdims=True) - 1 / k) / (1 - 1 / k)
    rgb = np.clip(1 - (1 - probs @ cols) * (0.15 + 0.55 * conf), 0, 1).reshape(-1, 3)
    fills = np.array(["#%02x%02x%02x" % tuple(v) for v in (rgb * 255).round().astype(int)], dtype=object)
    x_enc, y_enc = _axis("x", "x₁", xx), _axis("y", "x₂", yy)
    flat = probs.reshape(-1, k)
    grid = _csv_data(_rounded(records(x=np.asarray(xx, dtype=float).ravel(), y=np.asarray(yy, dtype=float).ravel(),
                                      fill=fills, cls=flat.argmax(1), p=flat.max(1))))
    cells = _grid_cells(grid, xx, yy, x_enc, y_enc, {"type": "rect"},
                        color={"field": "fill", "type": "nominal", "scale": None},
                        tooltip=[{"field": "cls", "type": "quantitative", "title": "class"},
                                 {"field": "p", "type": "quantitative", "title": "probability", "format": ".2f"}])
    X, y = np.asarray(X, dtype=float), np.asarray(y).astype(int)
    names = [f"class {c}" for c in range(k)]
    dots = {"data": _csv_data(_rounded(records(x=X[:, 0], y=X[:, 1], label=np.asarray(names, dtype=object)[y]))),
            "mark": {"type": "circle", "size": 36, "opacity": 1, "stroke": "white", "strokeWidth": 1, "clip": True},
            "encoding": {"x": x_enc, "y": y_enc,
                         "color": _series_colors(names, field="label", palette=[
                             CLASS_COLORS[c % len(CLASS_COLORS)] for c in range(k)])}}
    return VegaLite([cells, dots], title=title, height=height)


def _boundary_cells(probs) -> np.ndarray:
    """Mask of grid cells where the probability crosses 0.5 towards the next cell up or right."""
    side = np.asarray(probs) >= 0.5
    edge = np.zeros_like(side)
    edge[:, :-1] |= side[:, :-1] != side[:, 1:]
    edge[:-1, :] |= side[:-1, :] != side[1:, :]
    return edge


def piece_regions(report, *, max_side: int = 40, height: int = 260) -> VegaLite:
    """Two panels for a ReLU network on 2-D data: its linear pieces (one colour each) and its
    decision (the probability of class 1, with the data), as Vega-Lite cells on a grid of at most
    ``max_side``² points; the cells where the probability crosses 0.5 are drawn dark on both.

    ``report`` carries the grid ``xx, yy``, ``piece_ids`` and ``probs`` over it, the data ``X, y``,
    ``pieces`` and ``accuracy`` (a :class:`engine.course.labs.activations.BendReport`).
    """
    stride = max(1, -(-report.xx.shape[0] // max_side))
    xx, yy = report.xx[::stride, ::stride], report.yy[::stride, ::stride]
    probs = report.probs[::stride, ::stride]
    # Piece ids shuffled with a fixed seed, so neighbouring pieces rarely share a colour.
    shuffled = np.random.default_rng(0).permutation(report.pieces)[report.piece_ids][::stride, ::stride]
    x_enc, y_enc = _axis("x", "x₁", xx), _axis("y", "x₂", yy)
    grid = _csv_data(_rounded(records(x=xx.ravel(), y=yy.ravel(), piece=shuffled.ravel(), p=probs.ravel()), 3))
    edge = _boundary_cells(probs)
    boundary = {"data": _csv_data(_rounded(records(x=xx[edge], y=yy[edge]), 3)),
                "mark": {"type": "square", "size": 6, "color": "#111827", "opacity": 0.9},
                "encoding": {"x": x_enc, "y": y_enc}}
    pieces = _grid_cells(grid, xx, yy, x_enc, y_enc, {"type": "rect"},
                         color={"field": "piece", "type": "nominal", "legend": None,
                                "scale": {"scheme": "tableau20"}},
                         tooltip=[{"field": "piece", "type": "quantitative", "title": "piece"}])
    decision = _grid_cells(grid, xx, yy, x_enc, y_enc, {"type": "rect", "opacity": 0.6},
                           color={"field": "p", "type": "quantitative", "title": "P(class 1)",
                                  "scale": {"scheme": "blueorange", "domain": [0, 1]}},
                           tooltip=[{"field": "p", "type": "quantitative", "title": "P(class 1)",
                                     "format": ".2f"}])
    names = ["class 0", "class 1"]
    labels = np.asarray(names, dtype=object)[np.asarray(report.y).astype(int)]
    dots = {"data": _csv_data(_rounded(records(x=report.X[:, 0], y=report.X[:, 1], label=labels))),
            "mark": {"type": "circle", "size": 22, "opacity": 1, "stroke": "white", "strokeWidth": 0.6,
                     "clip": True},
            "encoding": {"x": x_enc, "y": y_enc,
                         "color": _series_colors(names, field="label", palette=["#1d4ed8", "#c2410c"])}}
    for layer in (pieces, decision):  # both panels read the grid, sent once at the top level
        del layer["data"]
    panel = {"width": 300, "height": height}
    return VegaLite.from_spec({"data": grid, "resolve": {"scale": {"color": "independent"}}, "hconcat": [
        {**panel, "title": f"{report.pieces} linear pieces", "layer": [pieces, boundary]},
        {**panel, "title": f"decision, accuracy {100 * report.accuracy:.0f} %", "layer": [decision, boundary, dots]},
    ]})


# ----------------------------------------------------------------------------- images and grids as HTML
# Drawn by the browser at once, where a chart would be built, validated and drawn by Vega, or a
# Matplotlib figure laid out and rendered to a PNG, at every slider move.


def image_tiles(panels: dict, *, symmetric=(), cmaps=None, width=120):
    """Arrays as colour-mapped PNG tiles side by side, each captioned with its name (grey, or
    red-blue centred on 0 for the names in ``symmetric``; ``cmaps`` names another colour map per
    panel, one of :data:`engine.course._colormaps.TABLES`), ``width`` pixels wide, drawn pixelated."""
    import marimo as mo

    tiles = []
    for name, img in panels.items():
        img = np.asarray(img, dtype=float)
        if name in symmetric:
            top = float(np.nanmax(np.abs(img))) or 1.0
            low, high, cmap = -top, top, "RdBu_r"
        else:
            low, high, cmap = float(np.nanmin(img)), float(np.nanmax(img)), "gray"
        scaled = np.clip((img - low) / ((high - low) or 1.0), 0.0, 1.0)
        rgba = _colormaps.rgba((cmaps or {}).get(name, cmap), scaled, "plot.image_tiles")
        tiles.append(mo.image(png(rgba), caption=name, width=width,
                              style={"image-rendering": "pixelated", "min-width": f"{width}px"}))
    return mo.hstack(tiles, justify="start", wrap=True)


def html_grid(fills, text, *, title, row_title="row", col_title="column", legend=()):
    """A small grid as an HTML table: cell (i, j) filled with the colour ``fills[i, j]`` and
    ``text[i, j]`` written in (white on dark fills), row and column indices at the edges, and
    ``legend`` a list of (colour, label) swatches. A table the browser lays out at once, where a
    chart would be built, validated and drawn by Vega at every slider move; each colour is one
    CSS class, so that a large grid stays a few bytes per cell."""
    import marimo as mo

    fills = np.asarray(fills, dtype=object)
    classes = {f: f"g{n}" for n, f in enumerate(dict.fromkeys(fills.ravel().tolist()))}
    # Named after its colours: two grids that share a name share the same CSS rules.
    scope = "grid" + hashlib.sha1(repr(list(classes)).encode()).hexdigest()[:10]

    def ink(hex_colour):  # the perceived brightness of the fill decides the text colour
        r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
        return "#fff" if 0.299 * r + 0.587 * g + 0.114 * b < 140 else "#111"

    css = "".join(f".{scope} .{c}{{background:{f};color:{ink(f)}}}" for f, c in classes.items())
    css += (f".{scope} td,.{scope} th{{padding:0 4px;min-width:14px;height:16px;"
            f"text-align:center;font-size:11px}}.{scope} th{{color:#64748b;font-weight:normal}}")
    head = "".join(f"<th>{j}</th>" for j in range(fills.shape[1]))
    body = "".join(f"<tr><th>{i}</th>" + "".join(f"<td class={classes[f]}>{t}</td>"
                                                 for f, t in zip(row_fills, row_text)) + "</tr>"
                   for i, (row_fills, row_text) in enumerate(zip(fills, text)))
    swatches = "".join(f"<span style='margin-right:10px'><span style='display:inline-block;"
                       f"width:10px;height:10px;background:{c}'></span> {label}</span>"
                       for c, label in legend)
    return mo.Html(
        f"<div class={scope} style='margin-bottom:6px'><style>{css}</style>"
        f"<div style='font-size:12px;font-weight:600'>{title}</div>"
        f"<div style='font-size:11px;color:#64748b'>rows: {row_title} · columns: {col_title}</div>"
        f"<table style='border-collapse:separate;border-spacing:1px'><tr><th></th>{head}</tr>"
        f"{body}</table><div style='font-size:11px'>{swatches}</div></div>")


def cell_table(kind, text=None, *, legend=False, **labels):
    """:func:`html_grid` of cells coloured by their kind (``GRID_COLORS``, the course's
    colours for inputs, padding, taps and outputs), with a legend of the kinds if asked."""
    kind = np.asarray(kind, dtype=object)
    text = np.full(kind.shape, "", dtype=object) if text is None else text
    colours = {k: color(c) for k, c in GRID_COLORS.items()}
    present = set(kind.ravel().tolist())
    swatches = [(colours[k], k) for k in colours if legend and k != "empty" and k in present]
    return html_grid(np.vectorize(colours.get, otypes=[object])(kind), text, legend=swatches,
                     **labels)


def value_table(values, title, *, cmap="RdBu_r", symmetric=True, fmt="{:.2f}"):
    """:func:`html_grid` of numbers, each cell coloured by its value (red positive and blue
    negative, centred on 0, for signed maps such as kernels) and written in; ``cmap`` is one of
    :data:`engine.course._colormaps.TABLES`."""

    values = np.asarray(values, dtype=float)
    if symmetric:
        high = float(np.abs(values).max()) or 1.0
        low = -high
    else:
        low, high = float(values.min()), float(values.max())
    scaled = (values - low) / ((high - low) or 1.0)
    rgba = _colormaps.rgba(cmap, scaled, "plot.value_table")
    fills = np.array(["#%02x%02x%02x" % tuple(px[:3]) for px in rgba.reshape(-1, 4)],
                     dtype=object).reshape(values.shape)
    text = np.vectorize(fmt.format, otypes=[object])(values)
    return html_grid(fills, text, title=title)


def tile_images(images, ncols=8, gap=1, fill=1.0) -> np.ndarray:
    """Images [N, H, W] laid out row by row, ``ncols`` to a row, as one image, with ``gap`` pixels
    of ``fill`` between them (one picture draws faster than a grid of N small ones)."""
    images = np.asarray(images, dtype=np.float64)
    if images.ndim != 3 or len(images) == 0:
        raise ValueError(f"tile_images: images must be [N, H, W] with N >= 1, got shape {images.shape}")
    n, h, w = images.shape
    ncols = min(positive_int("tile_images", "ncols", ncols), n)
    nrows = -(-n // ncols)
    out = np.full((nrows * (h + gap) - gap, ncols * (w + gap) - gap), float(fill))
    for i, image in enumerate(images):
        r, c = divmod(i, ncols)
        out[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = image
    return out


def png(pixels) -> bytes:
    """uint8 pixels [H, W] (grey), [H, W, 2] (grey, alpha), [H, W, 3] (RGB) or [H, W, 4] (RGBA) as
    the bytes of an 8-bit PNG. Written with zlib alone: an image becomes an <img> in about a
    millisecond, without Pillow or Matplotlib (a Matplotlib figure takes some fifty)."""
    pixels = np.asarray(pixels)
    channels = 1 if pixels.ndim == 2 else (pixels.shape[-1] if pixels.ndim == 3 else 0)
    kinds = {1: 0, 2: 4, 3: 2, 4: 6}  # PNG colour types: grey, grey + alpha, RGB, RGBA
    if pixels.dtype != np.uint8 or channels not in kinds or pixels.size == 0:
        raise ValueError(f"png: expected uint8 pixels [H, W] or [H, W, 1..4], got {pixels.dtype} {pixels.shape}")
    flat = pixels.reshape(len(pixels), -1)
    rows = np.concatenate([np.zeros((len(flat), 1), np.uint8), flat], axis=1)  # filter byte 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", pixels.shape[1], pixels.shape[0], 8, kinds[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes()))
            + chunk(b"IEND", b""))


def grey_png(image, scale=1) -> bytes:
    """An image with values in [0, 1] (0 black, 1 white; clipped) as the bytes of an 8-bit grey
    PNG (:func:`png`), each pixel a ``scale`` x ``scale`` block."""
    image = np.asarray(image, dtype=np.float64)
    if image.ndim != 2 or image.size == 0:
        raise ValueError(f"grey_png: the image must be 2-D and not empty, got shape {image.shape}")
    scale = positive_int("grey_png", "scale", scale)
    pixels = np.round(np.clip(np.nan_to_num(image), 0, 1) * 255).astype(np.uint8)
    return png(np.repeat(np.repeat(pixels, scale, axis=0), scale, axis=1))


# ----------------------------------------------------------------------------- computation graphs


def _graph_layout(nodes, edges) -> dict:
    """(x, y) in [0, 1]² of each node id: a column per depth, inputs on the left; columns placed
    right to left, each node near the mean height of the nodes that use it (the barycentre
    heuristic), which removes most crossings in small graphs."""
    depth = {n["id"]: n["depth"] for n in nodes}
    max_d = max(depth.values()) if depth else 0
    cols: dict = {}
    for n in nodes:
        cols.setdefault(n["depth"], []).append(n["id"])
    consumers: dict = {}
    for a, b in edges:
        consumers.setdefault(a, []).append(b)
    ypos: dict = {}
    for d in sorted(cols, reverse=True):
        ids = cols[d]
        key = {i: (np.mean([ypos[c] for c in consumers.get(i, []) if c in ypos])
                   if any(c in ypos for c in consumers.get(i, [])) else 0.5) for i in ids}
        ids = sorted(ids, key=lambda i: -key[i])
        for j, i in enumerate(ids):
            ypos[i] = 1 - (j + 1) / (len(ids) + 1)
    return {i: (depth[i] / max(1, max_d), ypos[i]) for i in depth}


def _graph_node_look(n, highlight, done) -> tuple:
    """(text, edge colour, face colour) of a node: orange where the backward pass is, teal once its
    gradient is final, a constant showing its value only."""
    is_hi = n["id"] == highlight
    edge = PALETTE["derivative"] if is_hi else (PALETTE["train"] if n["id"] in done else "#9ca3af")
    face = "#fff7ed" if is_hi else "white"
    if n.get("kind") == "const":
        return f"const\n{_short(n['value'])}", "#d1d5db", face
    g = n.get("grad")
    return f"{n['label']}\n{_short(n['value'])}\n" + ("grad ?" if g is None else f"grad {_short(g)}"), edge, face


def graph_chart(nodes, edges, *, highlight=None, done=(), height: int = 240, width_px: int = 760) -> VegaLite:
    """The computation graph the backward-pass stepper draws (engine.course.graph): a column per
    depth, each node's text and colour from ``_graph_node_look``, as a few Vega-Lite marks, so a
    step of the backward pass redraws in milliseconds.

    Boxes and arrowheads are sized for a chart about ``width_px`` pixels wide (wider only pads them).
    """
    from collections import Counter

    pos = _graph_layout(nodes, edges)
    axis = {"type": "quantitative", "axis": None}
    x_enc = {**axis, "field": "x", "scale": {"domain": [-0.08, 1.08], "nice": False, "zero": False}}
    y_enc = {**axis, "field": "y", "scale": {"domain": [0.0, 1.0], "nice": False, "zero": False}}
    per_x, per_y = width_px / 1.16, float(height)  # pixels per data unit
    looks = {n["id"]: _graph_node_look(n, highlight, done) for n in nodes}
    half_w = {i: (max(map(len, t.split("\n"))) * 7.4 + 16) / per_x / 2 for i, (t, _, _) in looks.items()}
    links, marks = [], []
    for (a, b), count in Counter(edges).items():
        (x0, y0), (x1, y1) = pos[a], pos[b]
        gap = 6 / per_x  # the arrow starts and ends a few pixels off the boxes
        xs, xe = x0 + half_w[a] + gap, x1 - half_w[b] - gap
        ys, ye = (y0 + (y1 - y0) * (v - x0) / max(x1 - x0, 1e-9) for v in (xs, xe))
        links.append({"x": xs, "y": ys, "x2": xe, "y2": ye,
                      "angle": -math.degrees(math.atan2((ye - ys) * per_y, (xe - xs) * per_x)),
                      "times": f"×{count}" if count > 1 else "", "mx": (x0 + x1) / 2, "my": (y0 + y1) / 2 + 0.05})
    for n in nodes:
        x, y = pos[n["id"]]
        text, edge, face = looks[n["id"]]
        half_h = (len(text.split("\n")) * 15.0 + 12) / per_y / 2  # the text's lineHeight is 15 px
        marks.append({"x": x - half_w[n["id"]], "x2": x + half_w[n["id"]], "y": y - half_h, "y2": y + half_h,
                      "cx": x, "text": text, "edge": edge, "face": face,
                      "lw": 2.2 if n["id"] == highlight else 1.2})
    grey = "#9ca3af"
    link_data, mark_data = _csv_data(links), _csv_data(marks)  # each written once, read by its layers
    layers = [
        {"data": link_data, "mark": {"type": "rule", "color": grey, "strokeWidth": 1.2},
         "encoding": {"x": x_enc, "y": y_enc, "x2": {"field": "x2"}, "y2": {"field": "y2"}}},
        {"data": link_data, "mark": {"type": "point", "shape": "triangle-right", "filled": True, "color": grey,
                                            "size": 45, "opacity": 1},
         "encoding": {"x": {**x_enc, "field": "x2"}, "y": {**y_enc, "field": "y2"},
                      "angle": {"field": "angle", "type": "quantitative", "scale": None}}},
        {"data": link_data, "mark": {"type": "text", "fontSize": 11, "color": "#6b7280"},
         "encoding": {"x": {**x_enc, "field": "mx"}, "y": {**y_enc, "field": "my"},
                      "text": {"field": "times", "type": "nominal"}}},
        {"data": mark_data, "mark": {"type": "rect", "cornerRadius": 5},
         "encoding": {"x": x_enc, "y": y_enc, "x2": {"field": "x2"}, "y2": {"field": "y2"},
                      "fill": {"field": "face", "type": "nominal", "scale": None},
                      "stroke": {"field": "edge", "type": "nominal", "scale": None},
                      "strokeWidth": {"field": "lw", "type": "quantitative", "scale": None}}},
        {"data": mark_data, "mark": {"type": "text", "font": "monospace", "fontSize": 12, "lineBreak": "\n", "lineHeight": 15,
                                            "baseline": "top", "dy": 7, "align": "center", "color": "#111827"},
         "encoding": {"x": {**x_enc, "field": "cx"}, "y": {**y_enc, "field": "y2"},  # from the box's top down
                      "text": {"field": "text", "type": "nominal"}}},
    ]
    chart = VegaLite(layers, height=height)
    chart.spec["config"] = {"view": {"stroke": None}}
    return chart


def _short(v) -> str:
    a = np.asarray(v, dtype=float)
    if a.size == 1:
        return f"{float(a):.4g}"
    return f"[{a.size} values]"


# ----------------------------------------------------------------------------- notebooks 05-08
# Cell kinds of the convolution diagrams: the input is data (grey), padding a reference level
# (light), the kernel's taps belong to the model (purple), and the output they produce is the
# model's prediction (purple too).
GRID_COLORS = {
    "input": "#cbd5e1",
    "padding": "#f1f5f9",
    "tap": PALETTE["model"],
    "tap on padding": "#c4b5fd",
    "output": "#e9d5ff",
    "selected": PALETTE["model"],
    "cropped": "#f1f5f9",
    "kept": PALETTE["model"],
    "empty": "#ffffff",
}


def _square_scale(lim: float, square: bool) -> dict:
    """``{"scale": ...}`` giving an axis the range ±1.05 ``lim`` (both axes alike: circles stay round)."""
    return _scale((-1.05 * lim, 1.05 * lim)) if square and lim > 0 else {}


def paths_2d(series: dict, *, x_title: str = "x", y_title: str = "y", title=None, colors=None,
             height=HEIGHT, square: bool = True, points: bool = True) -> VegaLite:
    """2-D paths drawn in their own order (not sorted by x): ``series`` maps a name to ``(x, y)``
    or to ``(x, y, t)`` with ``t`` the value shown in the tooltip (a position, a time step).
    ``square`` gives both axes the same range, so circles look round."""
    rows = []
    lim = 0.0
    for name, v in series.items():
        x, y = np.asarray(v[0], float), np.asarray(v[1], float)
        t = np.asarray(v[2]) if len(v) > 2 else np.arange(len(x))
        rows += records(x=x, y=y, t=t, order=np.arange(len(x)), series=name)
        finite = np.concatenate([np.abs(x[np.isfinite(x)]), np.abs(y[np.isfinite(y)])])
        lim = max(lim, float(finite.max()) if finite.size else 0.0)
    scale = _square_scale(lim, square)
    return _chart({"data": _csv_data(rows), "mark": {"type": "line", "point": points, "clip": True}, "encoding": {
        "x": _field("x:Q", x_title, **scale), "y": _field("y:Q", y_title, **scale), "order": _field("order:Q"),
        "color": _series_colors(series, colors),
        "tooltip": [_field("series:N"), _field("t:Q"), _field("x:Q", format=".3g"), _field("y:Q", format=".3g")]}},
        title, height)


def point_layers(layers: dict, *, x_title: str = "x₁", y_title: str = "x₂", title=None, height=360,
                 square: bool = True, size: int = 10, domain=None) -> VegaLite:
    """Several 2-D point sets on one chart with a legend: ``layers`` maps a name to ``(X, colour)``
    with X [N, 2] and a palette name ('data', 'model', ...). ``square`` (with ``domain``, or the
    data's extent) gives both axes the same range, so shapes are not distorted."""
    rows, colors = [], {}
    lim = 0.0
    for name, (X, colour) in layers.items():
        X = np.asarray(X, dtype=float)
        rows += records(x=X[:, 0], y=X[:, 1], series=name)
        colors[name] = colour
        finite = np.abs(X[np.isfinite(X).all(axis=1)])
        lim = max(lim, float(finite.max()) if finite.size else 0.0)
    scale = _scale(domain) if domain is not None else _square_scale(lim, square)
    return _chart({"data": _csv_data(rows), "mark": {"type": "circle", "size": size, "opacity": 0.7, "clip": True},
                   "encoding": {"x": _field("x:Q", x_title, **scale), "y": _field("y:Q", y_title, **scale),
                                "color": _series_colors(layers, colors),
                                "tooltip": [_field("series:N"), _field("x:Q", format=".3g"),
                                            _field("y:Q", format=".3g")]}}, title, height)
