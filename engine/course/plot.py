"""The course's one visual language: a palette with meanings, and the chart helpers notebooks share.

The same colour always means the same thing across every notebook (see :data:`PALETTE` and
:data:`MEANINGS`): a function is blue, its derivative orange, a formula ("analytic") is drawn as a
line and the engine's autograd values as dark dots on top of it, data is grey and a model purple,
training curves teal and validation pink, and each optimizer keeps its own colour.

Every chart helper returns an Altair chart (``alt.Chart``, ``alt.LayerChart``, ...), so a page can
add ``.properties()``, a layer with ``+`` (``chart + plot.rule(0.5)``) or an encoding of its own.
Charts fill the notebook's width (``width="container"``) and put their legend at the bottom. Data
goes to them as inline CSV written from NumPy (:func:`data`: a few milliseconds where a list of
records costs a tenth of a second), with NaN and ±inf as empty fields, which Vega reads as gaps.
Encodings use Altair's channel classes (``alt.X("x:Q", ...)``), which build far faster than the
keyword shorthand. Colour maps are Matplotlib's (``matplotlib.colormaps``), images PNGs written by
Pillow. Altair, Matplotlib, Pillow and marimo are imported inside the functions, so ``import
engine`` (and the course layer's import) loads only NumPy; a page imports Altair once, in its
setup cell.

A page shows a chart with ``ui.chart(chart)`` (Altair converts it once, unvalidated; marimo draws
the spec): :func:`engine.course.ui.chart` lists what showing and building a chart cost and how a
slider's redraw stays cheap (build only what moves, reuse a chart's static parts with
``base.properties(data=...)``, fewer layers and points).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import math

import numpy as np

from engine._checks import positive_int

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
    "sgd": "plain SGD",
    "momentum": "SGD with momentum",
    "nesterov": "SGD with Nesterov momentum",
    "rmsprop": "RMSprop",
    "adam": "Adam",
    "adamw": "AdamW (decoupled weight decay)",
    "mse": "mean squared error",
    "mae": "mean absolute error",
    "huber": "Huber loss",
    "pseudo_huber": "pseudo-Huber loss",
    "cross_entropy": "cross-entropy",
    "kl_forward": "fitted by minimising KL(p‖q) (mode-covering)",
    "kl_reverse": "fitted by minimising KL(q‖p) (mode-seeking)",
}

# Class colours for labelled points and decision regions (class k -> CLASS_COLORS[k]).
CLASS_COLORS = ("#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#4b5563")

# A second set of distinct colours for curves that have no fixed meaning (several activations).
SERIES_COLORS = (
    "#2563eb",
    "#ea580c",
    "#16a34a",
    "#9333ea",
    "#0891b2",
    "#ca8a04",
    "#db2777",
    "#4b5563",
    "#65a30d",
    "#be123c",
)

HEIGHT = 260


def color(name: str) -> str:
    """The hex colour for a palette name (e.g. 'derivative', 'adam'); a hex string passes through."""
    if isinstance(name, str) and name.startswith("#"):
        return name
    try:
        return PALETTE[name]
    except KeyError:
        raise ValueError(f"plot.color: unknown palette name {name!r}; known: {', '.join(PALETTE)}") from None


# ----------------------------------------------------------------------------- building fast
@functools.cache
def build_fast() -> None:
    """Two process-wide Altair settings that make charts cheap to build and show, set by the first
    chart data (:func:`data`) or chart shown (``ui.chart``) of a process:

    - **Debug mode off.** Altair checks every schema object against the Vega-Lite schema as it is
      built, and again for each object the copy that ``mo.ui.altair_chart`` makes: 03's
      class-region map cost 19 ms to build with the checks and 6 ms without, its display 12 ms and
      6 ms. The tests validate every chart a page shows in full instead
      (tests/notebooks/test_every_chart_is_valid.py), and a bare chart a learner shows is still
      validated by marimo's formatter.
    - **One schema table for every ``from_dict``.** An encoding written as a string
      (``.encode(x="x:Q")``, Altair's own idiom) becomes a channel object through
      ``SchemaBase.from_dict``, and Altair 6 builds a fresh ``_FromDict`` for each call: it hashes
      the schemas of all ~570 schema classes, about 4 ms per channel here (a two-layer chart of five
      string channels: 17-22 ms to build, against 1.3-1.6 ms with ``alt.X(...)`` objects and the
      same spec). The table depends only on the classes, so one is built and kept. Altair's
      pending change vega/altair#3547 does the same; this is skipped unless ``from_dict`` is still
      the function it replaces.
    """
    from altair.utils import schemapi

    schemapi.disable_debug_mode()
    original = schemapi.SchemaBase.__dict__.get("from_dict")
    converter = getattr(schemapi, "_FromDict", None)
    if not isinstance(original, classmethod) or converter is None or getattr(original, "_course", False):
        return
    tables: dict = {}

    def from_dict(cls, dct, validate=True):
        if validate:
            cls.validate(dct)
        kind = cls._default_wrapper_classes.__func__  # the function that lists the candidate classes
        table = tables.get(kind)
        if table is None:
            table = tables[kind] = converter(cls._default_wrapper_classes())
        return table.from_dict(dct, cls)

    from_dict.__doc__ = original.__func__.__doc__
    patched = classmethod(from_dict)
    patched._course, patched._original = True, original
    schemapi.SchemaBase.from_dict = patched
    # a private class of Altair's: if a release changes it, charts must still build, as Altair builds them
    import altair as alt

    probe = {"field": "x", "type": "quantitative", "title": "x"}
    try:
        works = alt.X.from_dict(probe, validate=False).to_dict() == original.__func__(alt.X, probe, False).to_dict()
    except Exception:  # any failure of the shortcut means: build as Altair does
        works = False
    if not works:
        schemapi.SchemaBase.from_dict = original


# ----------------------------------------------------------------------------- data


def data(*, digits: int = 6, **columns):
    """Chart data (``alt.InlineData``) from equal-length columns: NumPy arrays, lists, or scalars
    repeated on every row. Numbers are written with ``digits`` significant digits, NaN and ±inf as
    empty fields (gaps in the chart), booleans as ``true``/``false``; Vega is told each numeric and
    boolean column's type, text columns stay text. ``data(x=x, y=np.sin(x), series="sin")``."""
    import altair as alt

    build_fast()

    arrays = {k: np.asarray(v) for k, v in columns.items()}
    n = max((len(a) for a in arrays.values() if a.ndim), default=1)
    texts, parse = [], {}
    for name, a in arrays.items():
        if a.ndim == 0:
            a = np.full(n, a.item(), dtype=object if a.dtype.kind in "OUS" else a.dtype)
        if a.ndim != 1 or len(a) != n:
            raise ValueError(f"plot.data: column {name!r} has shape {a.shape}, the others {n} values")
        texts.append(_column_text(a, digits))
        kind = _column_kind(a)
        if kind:
            parse[name] = kind
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(arrays))
    writer.writerows(zip(*texts))
    return alt.InlineData(values=out.getvalue().rstrip("\n"), format=alt.CsvDataFormat(type="csv", parse=parse))


def _column_kind(a: np.ndarray):
    """Vega's parse directive for a column: "boolean", "number", or None for text (Vega keeps it a
    string; a null entry in the directive would be an error in Vega)."""
    if a.dtype.kind == "b":
        return "boolean"
    if a.dtype.kind in "iuf":
        return "number"
    return None


def _column_text(a: np.ndarray, digits: int) -> list:
    if a.dtype.kind == "b":
        return np.where(a, "true", "false").tolist()
    if a.dtype.kind in "iu":
        return a.astype(str).tolist()
    if a.dtype.kind == "f":
        return np.where(np.isfinite(a), np.char.mod(f"%.{digits}g", a), "").tolist()
    return ["" if v is None else str(v) for v in a.tolist()]


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


# ----------------------------------------------------------------------------- chart pieces


def _chart(source=None, *, title=None, height=HEIGHT, width="container"):
    """``alt.Chart(source)`` of the notebook's width (``width="container"``) and ``height``."""
    import altair as alt

    return alt.Chart(alt.Undefined if source is None else source, width=width, height=height, title=_title(title))


def _title(title):
    """A chart's title, or Undefined (no title) for None or an empty one."""
    import altair as alt

    return title or alt.Undefined


def _scale(domain=None, **more):
    """An ``alt.Scale`` with a fixed ``domain`` and other properties, or Undefined when neither."""
    import altair as alt

    if domain is not None:
        more["domain"] = [float(v) for v in domain]
    return alt.Scale(**more) if more else alt.Undefined


def series_colors(names, colors=None, *, field="series", title="", palette=None, legend=True):
    """The colour channel of named series with their legend at the bottom (none if not ``legend``):
    each name in its colour (``palette``, else ``colors[name]``, its palette colour or the next
    series colour)."""
    import altair as alt

    names = list(names)
    return alt.Color(
        f"{field}:N",
        title=title,
        sort=names,
        legend=alt.Legend(orient="bottom") if legend else None,
        scale=alt.Scale(domain=names, range=list(palette or _color_range(names, colors))),
    )


def _color_range(names, colors=None) -> list:
    """The colour of each series name: ``colors[name]``, else its palette colour, else the next series colour."""
    colors = colors or {}
    return [
        color(colors.get(n, n if n in PALETTE else SERIES_COLORS[i % len(SERIES_COLORS)])) for i, n in enumerate(names)
    ]


def _tooltip(*fields):
    """Tooltip channels from ``(shorthand, format)`` pairs or shorthands: ``_tooltip("series:N", ("y:Q", ".4g"))``."""
    import altair as alt

    return [alt.Tooltip(f) if isinstance(f, str) else alt.Tooltip(f[0], format=f[1]) for f in fields]


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


def _stacked(series: dict, **columns) -> dict:
    """Columns of several series one after another: ``series`` maps a name to a dict of equal-length
    arrays (the same keys for every name); a ``series`` column names each row's series and every
    other keyword adds a column of one value per series (``dash=[...]``)."""
    parts = list(series.values())
    lengths = [len(next(iter(p.values()))) for p in parts]
    out = {
        k: np.concatenate([np.asarray(p[k]) for p in parts]) if parts else np.array([])
        for k in (parts[0] if parts else {})
    }
    out["series"] = np.repeat(np.asarray(list(series), dtype=object), lengths)
    for name, per_series in columns.items():
        out[name] = np.repeat(np.asarray(per_series), lengths)
    return out


def curves(
    x,
    ys: dict,
    *,
    x_title: str = "x",
    y_title: str = "y",
    title=None,
    colors=None,
    dashed=(),
    y_domain=None,
    height=HEIGHT,
    legend_title: str = "",
    log_y: bool = False,
    dots: dict | None = None,
    n_dots: int = 41,
    log_x: bool = False,
):
    """Several curves y(x) on one chart with one legend; optionally dots on top.

    ``ys`` maps a series name to its values over ``x`` (or to ``(x_i, y_i)`` for its own x);
    a name found in :data:`PALETTE` gets its colour unless ``colors`` says otherwise; names in
    ``dashed`` are drawn dashed. ``dots`` maps more series to values over ``x`` drawn as dots
    (about ``n_dots`` of them), dark 'autograd' unless ``colors`` names another colour: the
    engine's values laid over a formula's line. ``y_domain=(lo, hi)`` clips the view (values
    outside are cut); ``log_y`` draws a log axis (non-positive values become gaps), ``log_x`` a
    log x axis.
    """
    import altair as alt

    dots = dots or {}
    colors = dict(colors or {})
    for name in dots:
        colors.setdefault(name, "autograd")
    lines = {}
    for name, v in ys.items():
        xs, yv = v if isinstance(v, tuple) else (x, v)
        lines[name] = {"x": np.asarray(xs, dtype=float), "y": _mask(yv, y_domain, log_y)}
    encoding = [
        alt.X("x:Q", title=x_title, scale=_scale(type="log") if log_x else alt.Undefined),
        alt.Y("y:Q", title=y_title, scale=_scale(y_domain, **{"type": "log"} if log_y else {})),
        series_colors(list(ys) + list(dots), colors, title=legend_title),
        _tooltip("series:N", ("x:Q", ".4g"), ("y:Q", ".6g")),
    ]
    dash = alt.StrokeDash("dash:N", legend=None, scale=alt.Scale(domain=[False, True], range=[[1, 0], [5, 4]]))
    source = data(**_stacked(lines, dash=[n in dashed for n in lines]))
    if not dots:
        return _chart(source, title=title, height=height).mark_line(clip=True).encode(*encoding, dash)
    marks = {name: dict(zip(("x", "y"), _subsample(x, v, n_dots))) for name, v in dots.items()}
    marks = {name: {"x": m["x"], "y": _mask(m["y"], y_domain, log_y)} for name, m in marks.items()}
    # Sized as a whole (layers that carry a size are copied by Altair to move it up).
    return alt.layer(
        alt.Chart(source).mark_line(clip=True).encode(*encoding, dash),
        alt.Chart(data(**_stacked(marks))).mark_point(filled=True, size=24, opacity=1, clip=True).encode(*encoding),
        width="container",
        height=height,
        title=_title(title),
    )


def function_and_derivative(
    x,
    f,
    df_analytic,
    df_autograd,
    *,
    name: str = "f",
    var: str = "x",
    x_title=None,
    title=None,
    y_domain=None,
    n_dots: int = 41,
    height=HEIGHT,
):
    """A function (blue), its derivative from the formula (orange line), and the derivative
    computed by the engine's autograd (dark dots, every few points) drawn over the formula."""
    f_name, d_name, a_name = f"{name}({var})", f"{name}′({var}), formula", f"{name}′({var}), autograd"
    return curves(
        x,
        {f_name: f, d_name: df_analytic},
        dots={a_name: df_autograd},
        n_dots=n_dots,
        x_title=x_title or var,
        y_title="value",
        colors={f_name: "function", d_name: "derivative"},
        y_domain=y_domain,
        title=title,
        height=height,
    )


def _label_axis(labels, title):
    """The x channel of bar charts: one category per label, in the given order, labels upright."""
    import altair as alt

    return alt.X("label:N", title=title, sort=labels, axis=alt.Axis(labelAngle=0))


def bars(
    labels,
    values,
    *,
    x_title: str = "",
    y_title: str = "",
    title=None,
    color_name: str = "model",
    y_domain=None,
    height=200,
    text_format: str = ".3f",
    dots: dict | None = None,
    bar_label: str | None = None,
):
    """Vertical bars with their value written on top (probabilities, per-layer shares...).

    ``dots`` maps a name to one value per label, drawn as dark 'autograd' dots on the bars (the
    engine's values over a formula's bars); ``bar_label`` names the bars in the legend then.
    """
    import altair as alt

    labels = [str(s) for s in labels]
    name = bar_label or "value"
    label_column = np.asarray(labels, dtype=object)
    x, y = _label_axis(labels, x_title), alt.Y("value:Q", title=y_title, scale=_scale(y_domain))
    tooltip = _tooltip("label:N", ("value:Q", ".4g"))
    source = data(label=label_column, value=np.asarray(values, dtype=float), series=name)
    size = {"width": "container", "height": height, "title": _title(title)}
    if not dots:  # the bars and their labels read the one data of the layer
        base = alt.Chart().encode(x, y, tooltip)
        return alt.layer(
            base.mark_bar(color=color(color_name)),
            base.mark_text(dy=-6, fontSize=11).encode(alt.Text("value:Q", format=text_format)),
            data=source,
            **size,
        )
    paint = series_colors([name, *dots], {name: color_name, **{n: "autograd" for n in dots}})
    dot_columns = {n: {"label": label_column, "value": np.asarray(v, dtype=float)} for n, v in dots.items()}
    on_top = alt.Chart(data(**_stacked(dot_columns))).mark_point(filled=True, size=60, opacity=1)
    return alt.layer(
        alt.Chart(source).mark_bar().encode(x, y, tooltip, paint),
        on_top.encode(x, y, paint, _tooltip("series:N", ("value:Q", ".6g"))),
        **size,
    )


def grouped_bars(
    labels, series: dict, *, x_title: str = "", y_title: str = "", title=None, colors=None, y_domain=None, height=200
):
    """Bars side by side per label, one colour per series (e.g. predicted p and target q per class)."""
    import altair as alt

    labels = np.asarray([str(s) for s in labels], dtype=object)
    columns = {name: {"label": labels, "value": np.asarray(v, dtype=float)} for name, v in series.items()}
    names = list(series)
    return (
        _chart(data(**_stacked(columns)), title=title, height=height)
        .mark_bar()
        .encode(
            _label_axis(labels.tolist(), x_title),
            alt.XOffset("series:N", sort=names),
            alt.Y("value:Q", title=y_title, scale=_scale(y_domain)),
            series_colors(names, colors),
            _tooltip("label:N", "series:N", ("value:Q", ".4g")),
        )
    )


def heatmap(
    z,
    *,
    x_labels=None,
    y_labels=None,
    x_title: str = "",
    y_title: str = "",
    color_title: str = "",
    title=None,
    scheme: str = "viridis",
    domain=None,
    annotate: bool = False,
    fmt: str = ".2f",
    height=HEIGHT,
):
    """A matrix as coloured cells (row 0 at the top), optionally with each value written in."""
    import altair as alt

    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"plot.heatmap: needs a 2-D array, got shape {z.shape}")
    rows, cols = z.shape
    xl = [str(s) for s in (x_labels if x_labels is not None else range(cols))]
    yl = [str(s) for s in (y_labels if y_labels is not None else range(rows))]
    ii, jj = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    source = data(x=np.asarray(xl, dtype=object)[jj.ravel()], y=np.asarray(yl, dtype=object)[ii.ravel()], z=z.ravel())
    cells = [
        alt.Color("z:Q", title=color_title, scale=_scale(domain, scheme=scheme)),
        _tooltip("y:O", "x:O", ("z:Q", ".4g")),
    ]
    position = [alt.X("x:O", title=x_title, sort=xl), alt.Y("y:O", title=y_title, sort=yl)]
    if not annotate:
        return _chart(source, title=title, height=height).mark_rect().encode(*position, *cells)
    base = alt.Chart().encode(*position)  # the cells and their numbers read the one data of the layer
    return alt.layer(
        base.mark_rect().encode(*cells),
        base.mark_text(fontSize=11).encode(alt.Text("z:Q", format=fmt)),
        data=source,
        width="container",
        height=height,
        title=_title(title),
    )


def scatter_classes(X, y, *, x_title: str = "x₁", y_title: str = "x₂", title=None, height=HEIGHT, class_names=None):
    """2-D points coloured by class (class k in CLASS_COLORS[k])."""
    import altair as alt

    X = np.asarray(X, dtype=float)
    y = np.asarray(y).astype(int)
    names = class_names or [f"class {k}" for k in range(int(y.max()) + 1 if y.size else 1)]
    source = data(x1=X[:, 0], x2=X[:, 1], label=np.asarray(names, dtype=object)[y])
    return (
        _chart(source, title=title, height=height)
        .mark_circle(size=28, opacity=0.8)
        .encode(
            alt.X("x1:Q", title=x_title),
            alt.Y("x2:Q", title=y_title),
            series_colors(names, field="label", palette=CLASS_COLORS[: len(names)]),
        )
    )


def loss_curves(
    history: dict,
    *,
    x_title: str = "epoch",
    y_title: str = "loss",
    title=None,
    log_y: bool = False,
    colors=None,
    height=HEIGHT,
):
    """Learning curves: ``history`` maps a series ('train', 'validation', an optimizer...) to values per step."""
    import altair as alt

    columns = {}
    for name, vals in history.items():
        v = np.asarray(vals, dtype=float)
        columns[name] = {"step": np.arange(1, len(v) + 1), "y": np.where(v > 0, v, np.nan) if log_y else v}
    return (
        _chart(data(**_stacked(columns)), title=title, height=height)
        .mark_line()
        .encode(
            alt.X("step:Q", title=x_title),
            alt.Y("y:Q", title=y_title, scale=_scale(type="log") if log_y else alt.Undefined),
            series_colors(history, colors),
            _tooltip("series:N", "step:Q", ("y:Q", ".4g")),
        )
    )


def histogram_grid(
    panels: dict,
    *,
    bins: int = 30,
    x_title: str = "value",
    columns: int = 4,
    range_=None,
    color_name: str = "function",
    panel_width: int = 150,
    panel_height: int = 90,
    title=None,
    flags: dict | None = None,
):
    """Small multiples of histograms, one per entry of ``panels`` (name -> samples), on one shared x range.

    ``flags`` may map a panel name to a short note shown in its header (e.g. '62% dead').
    (Faceted charts cannot use the container width, so panels have a fixed size.)
    """
    import altair as alt

    finite = [np.asarray(v, dtype=float)[np.isfinite(v)] for v in panels.values()]
    if range_ is None:
        lo = min((a.min() for a in finite if a.size), default=-1.0)
        hi = max((a.max() for a in finite if a.size), default=1.0)
        range_ = (lo, hi) if hi > lo else (lo - 1, hi + 1)
    edges = np.linspace(range_[0], range_[1], bins + 1)
    labels = [f"{n} · {flags[n]}" if flags and n in flags else n for n in panels]
    shares = {}
    for label, a in zip(labels, finite):
        counts, _ = np.histogram(np.clip(a, range_[0], range_[1]), bins=edges)
        shares[label] = {"lo": edges[:-1], "hi": edges[1:], "share": counts / max(1, a.size)}
    columns_ = _stacked(shares)
    columns_["panel"] = columns_.pop("series")
    panel = (
        alt.Chart(data(**columns_), width=panel_width, height=panel_height)
        .mark_rect(color=color(color_name))
        .encode(
            alt.X("lo:Q", title=x_title, scale=_scale(range_)),
            alt.X2("hi"),
            alt.Y("share:Q", title="share"),
            _tooltip(("lo:Q", ".3g"), ("share:Q", ".3f")),
        )
    )
    grid = panel.facet(alt.Facet("panel:N", sort=labels, title=None), columns=columns, title=_title(title))
    return grid.resolve_scale(y="independent")


def rule(value: float, orient: str = "y", color_name: str = "reference"):
    """A horizontal (orient='y') or vertical ('x') reference line to layer over a chart."""
    import altair as alt

    if orient not in ("x", "y"):
        raise ValueError(f"plot.rule: orient must be 'x' (a vertical line) or 'y' (a horizontal one), got {orient!r}")
    channel = alt.X("v:Q") if orient == "x" else alt.Y("v:Q")
    return alt.Chart(data(v=[float(value)])).mark_rule(color=color(color_name), strokeDash=[3, 3]).encode(channel)


def points(x, y, *, color_name: str = "data", size: int = 40, label: str | None = None, filled: bool = True):
    """A layer of points (data, outliers, minima) in one palette colour, to add to a chart with ``+``."""
    import altair as alt

    source = data(x=np.asarray(x, float), y=np.asarray(y, float), label=label or color_name)
    return (
        alt.Chart(source)
        .mark_point(filled=filled, size=size, color=color(color_name))
        .encode(alt.X("x:Q"), alt.Y("y:Q"), _tooltip(("x:Q", ".4g"), ("y:Q", ".4g")))
    )


def _axis(channel, field: str, title, values):
    """A quantitative position channel (``alt.X`` or ``alt.Y``) whose domain is exactly the extent of ``values``."""
    import altair as alt

    return channel(
        f"{field}:Q",
        title=title,
        scale=alt.Scale(domain=[float(np.min(values)), float(np.max(values))], nice=False, zero=False),
    )


def _grid_cells(chart, xx, yy, x_title, y_title):
    """``chart`` (a mark over rows ``x, y`` at the centres of a regular ``meshgrid``) encoded as one
    rect per point: the browser computes the edges, half a spacing each way (two columns sent, not four)."""
    import altair as alt

    xs, ys = np.asarray(xx, dtype=float)[0], np.asarray(yy, dtype=float)[:, 0]
    dx = float((xs[-1] - xs[0]) / max(len(xs) - 1, 1) / 2)
    dy = float((ys[-1] - ys[0]) / max(len(ys) - 1, 1) / 2)
    return chart.transform_calculate(
        x0=f"datum.x - {dx!r}",
        x1=f"datum.x + {dx!r}",
        y0=f"datum.y - {dy!r}",
        y1=f"datum.y + {dy!r}",
    ).encode(_axis(alt.X, "x0", x_title, xx), alt.X2("x1"), _axis(alt.Y, "y0", y_title, yy), alt.Y2("y1"))


_SURFACE_CELLS: dict = {}  # (grid bytes, axis titles, shading) -> its layer: built once, not at every redraw


def _surface_cells(xx, yy, zz, x_title, y_title, log_levels):
    """The surface's layer: one shaded cell per grid point (centres, f and shade, 4 significant
    digits: a picture, not a table), remembered for the last few grids. A slider that moves only the
    paths re-uses it: building the layer (its data, transform and scales) is a third of the chart's
    cost, and ``alt.layer`` copies its layers, so the cached one is never changed."""
    import altair as alt

    z = np.asarray(zz, dtype=float)
    key = (
        hashlib.sha1(b"".join(np.ascontiguousarray(a, dtype=float).tobytes() for a in (xx, yy, z))).hexdigest(),
        x_title,
        y_title,
        log_levels,
    )
    if key in _SURFACE_CELLS:
        return _SURFACE_CELLS[key]
    finite = z[np.isfinite(z)]
    shade = np.log10(z - finite.min() + 1e-3) if (log_levels and finite.size) else z
    source = data(x=np.ravel(xx), y=np.ravel(yy), f=z.ravel(), shade=shade.ravel(), digits=4)
    cells = _grid_cells(alt.Chart(source).mark_rect(opacity=0.7), xx, yy, x_title, y_title).encode(
        alt.Color("shade:Q", legend=None, scale=alt.Scale(scheme="greys", reverse=True)),
        alt.Tooltip("f:Q", title="f(θ)", format=".4g"),
    )
    return remember(_SURFACE_CELLS, key, cells, size=16)


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


def surface_paths(
    xx,
    yy,
    zz,
    trajectories: dict,
    *,
    start=None,
    minimum=None,
    title=None,
    colors=None,
    x_title: str = "θ₁",
    y_title: str = "θ₂",
    log_levels: bool = True,
    max_points: int = 200,
    height=HEIGHT,
):
    """A loss surface as shaded cells (darker is lower; log-spaced shades by default) with one
    optimizer path per entry of ``trajectories`` (name -> [N, 2]), cheap enough to redraw at every
    slider move.

    Pass a coarse grid (40×40 is plenty); each path is cut at its first non-finite point and
    thinned to ``max_points``, its last position drawn as a dot; the view is the grid's box.
    """
    import altair as alt

    x_enc, y_enc = _axis(alt.X, "x", x_title, xx), _axis(alt.Y, "y", y_title, yy)
    layers = [_surface_cells(xx, yy, zz, x_title, y_title, log_levels)]
    paths = {}
    for name, path in trajectories.items():
        steps, px, py = _path_rows(path, max_points)
        if len(steps):
            paths[name] = {"step": steps, "x": px, "y": py}
    paint = series_colors(list(trajectories), colors)
    unlabelled = series_colors(list(trajectories), colors, legend=False)  # the ends: the lines' legend suffices
    tooltip = _tooltip("series:N", "step:Q", ("x:Q", ".3g"), ("y:Q", ".3g"))
    if paths:
        ends = {name: {k: v[-1:] for k, v in p.items()} for name, p in paths.items()}
        layers.append(
            alt.Chart(data(**_stacked(paths), digits=4))
            .mark_line(strokeWidth=1.8, clip=True)
            .encode(x_enc, y_enc, alt.Order("step:Q"), paint, tooltip)
        )
        layers.append(
            alt.Chart(data(**_stacked(ends), digits=4))
            .mark_circle(size=60, opacity=1, stroke="white", clip=True)
            .encode(x_enc, y_enc, unlabelled, tooltip)
        )
    marks = [(start, "start", "square", "#111827", 70), (minimum, "minimum", "diamond", PALETTE["target"], 120)]
    for where, label, shape, fill, size in marks:
        if where is not None:
            layers.append(
                alt.Chart(data(x=[float(where[0])], y=[float(where[1])], label=label))
                .mark_point(shape=shape, filled=True, color=fill, size=size, opacity=1)
                .encode(x_enc, y_enc, alt.Tooltip("label:N"))
            )
    return alt.layer(*layers, width="container", height=height, title=_title(title))


def class_regions(xx, yy, probs, X, y, *, title=None, height=HEIGHT):
    """Predicted class regions of a 2-D classifier (each cell the class colours mixed by probability,
    paler where the model is unsure) with the data on top. ``probs`` is [G, G, C] over the grid
    ``xx, yy``; 40×40 is plenty."""
    import altair as alt
    from matplotlib.colors import to_rgb

    probs = np.asarray(probs, dtype=float)
    k = probs.shape[-1]
    cols = np.array([to_rgb(CLASS_COLORS[j % len(CLASS_COLORS)]) for j in range(k)])
    conf = (probs.max(-1, keepdims=True) - 1 / k) / (1 - 1 / k)
    rgb = np.clip(1 - (1 - probs @ cols) * (0.15 + 0.55 * conf), 0, 1).reshape(-1, 3)
    # '#rrggbb' for all cells at once, as matplotlib's to_hex writes one (round half to even, ×255):
    # the bytes' hex string cut into 6-character pieces. One to_hex per cell cost 8 ms of 40×40.
    hex6 = np.frombuffer(np.round(rgb * 255).astype(np.uint8).tobytes().hex().encode(), dtype="S6")
    flat = probs.reshape(-1, k)
    grid = data(
        x=np.ravel(xx),
        y=np.ravel(yy),
        fill=np.char.add("#", hex6.astype("U6")),
        cls=flat.argmax(1),
        p=flat.max(1),
        digits=4,
    )
    cells = _grid_cells(alt.Chart(grid).mark_rect(), xx, yy, "x₁", "x₂").encode(
        alt.Color("fill:N", scale=None),
        [alt.Tooltip("cls:Q", title="class"), alt.Tooltip("p:Q", title="probability", format=".2f")],
    )
    X, y = np.asarray(X, dtype=float), np.asarray(y).astype(int)
    names = [f"class {c}" for c in range(k)]
    dots = (
        alt.Chart(data(x=X[:, 0], y=X[:, 1], label=np.asarray(names, dtype=object)[y], digits=4))
        .mark_circle(size=36, opacity=1, stroke="white", strokeWidth=1, clip=True)
        .encode(
            _axis(alt.X, "x", "x₁", xx),
            _axis(alt.Y, "y", "x₂", yy),
            series_colors(names, field="label", palette=[CLASS_COLORS[c % len(CLASS_COLORS)] for c in range(k)]),
        )
    )
    return alt.layer(cells, dots, width="container", height=height, title=_title(title))


def _boundary_cells(probs) -> np.ndarray:
    """Mask of grid cells where the probability crosses 0.5 towards the next cell up or right."""
    side = np.asarray(probs) >= 0.5
    edge = np.zeros_like(side)
    edge[:, :-1] |= side[:, :-1] != side[:, 1:]
    edge[:-1, :] |= side[:-1, :] != side[1:, :]
    return edge


def piece_regions(report, *, max_side: int = 40, height: int = 260):
    """Two panels for a ReLU network on 2-D data: its linear pieces (one colour each) and its
    decision (the probability of class 1, with the data), as cells on a grid of at most
    ``max_side``² points; the cells where the probability crosses 0.5 are drawn dark on both.

    ``report`` carries the grid ``xx, yy``, ``piece_ids`` and ``probs`` over it, the data ``X, y``,
    ``pieces`` and ``accuracy`` (a :class:`engine.course.labs.activations.BendReport`).
    """
    import altair as alt

    stride = max(1, -(-report.xx.shape[0] // max_side))
    xx, yy = report.xx[::stride, ::stride], report.yy[::stride, ::stride]
    probs = report.probs[::stride, ::stride]
    # Piece ids shuffled with a fixed seed, so neighbouring pieces rarely share a colour.
    shuffled = np.random.default_rng(0).permutation(report.pieces)[report.piece_ids][::stride, ::stride]
    x_enc, y_enc = _axis(alt.X, "x", "x₁", xx), _axis(alt.Y, "y", "x₂", yy)
    grid = data(x=xx.ravel(), y=yy.ravel(), piece=shuffled.ravel(), p=probs.ravel(), digits=3)
    edge = _boundary_cells(probs)
    boundary = (
        alt.Chart(data(x=xx[edge], y=yy[edge], digits=3))
        .mark_square(size=6, color="#111827", opacity=0.9)
        .encode(x_enc, y_enc)
    )
    # Both panels read the grid, sent once at the top level (their cells name no data of their own).
    pieces = _grid_cells(alt.Chart().mark_rect(), xx, yy, "x₁", "x₂").encode(
        alt.Color("piece:N", legend=None, scale=alt.Scale(scheme="tableau20")), alt.Tooltip("piece:Q", title="piece")
    )
    decision = _grid_cells(alt.Chart().mark_rect(opacity=0.6), xx, yy, "x₁", "x₂").encode(
        alt.Color("p:Q", title="P(class 1)", scale=alt.Scale(scheme="blueorange", domain=[0, 1])),
        alt.Tooltip("p:Q", title="P(class 1)", format=".2f"),
    )
    names = ["class 0", "class 1"]
    labels = np.asarray(names, dtype=object)[np.asarray(report.y).astype(int)]
    dots = (
        alt.Chart(data(x=report.X[:, 0], y=report.X[:, 1], label=labels, digits=4))
        .mark_circle(size=22, opacity=1, stroke="white", strokeWidth=0.6, clip=True)
        .encode(x_enc, y_enc, series_colors(names, field="label", palette=["#1d4ed8", "#c2410c"]))
    )
    left = alt.layer(pieces, boundary, width=300, height=height, title=f"{report.pieces} linear pieces")
    right = alt.layer(
        decision, boundary, dots, width=300, height=height, title=f"decision, accuracy {100 * report.accuracy:.0f} %"
    )
    return alt.hconcat(left, right, data=grid).resolve_scale(color="independent")


# ----------------------------------------------------------------------------- images and grids as HTML
# Drawn by the browser at once, where a chart would be built and drawn by Vega, or a Matplotlib
# figure laid out and rendered, at every slider move. Colour maps are Matplotlib's, PNGs Pillow's.


@functools.cache
def _colormap(name: str):
    """Matplotlib's colour map ``name``, looked up once and kept."""
    import matplotlib

    return matplotlib.colormaps[name]


def _rgba(name: str, values, who: str) -> np.ndarray:
    """uint8 RGBA of ``values`` (in [0, 1]) in Matplotlib's colour map ``name``; an unknown name is
    a ``ValueError`` naming the function asked (``who``)."""
    import matplotlib

    if name not in matplotlib.colormaps:
        raise ValueError(f"{who}: unknown colour map {name!r}; Matplotlib's include gray, RdBu_r, Purples")
    return _colormap(name)(values, bytes=True)


def image_tiles(panels: dict, *, symmetric=(), cmaps=None, width=120):
    """Arrays as colour-mapped PNG tiles side by side, each captioned with its name (grey, or
    red-blue centred on 0 for the names in ``symmetric``; ``cmaps`` names another of Matplotlib's
    colour maps per panel), ``width`` pixels wide, drawn pixelated."""
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
        rgba = _rgba((cmaps or {}).get(name, cmap), scaled, "plot.image_tiles")
        tiles.append(
            mo.image(
                png(rgba), caption=name, width=width, style={"image-rendering": "pixelated", "min-width": f"{width}px"}
            )
        )
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
        r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        return "#fff" if 0.299 * r + 0.587 * g + 0.114 * b < 140 else "#111"

    css = "".join(f".{scope} .{c}{{background:{f};color:{ink(f)}}}" for f, c in classes.items())
    css += (
        f".{scope} td,.{scope} th{{padding:0 4px;min-width:14px;height:16px;"
        f"text-align:center;font-size:11px}}.{scope} th{{color:#64748b;font-weight:normal}}"
    )
    head = "".join(f"<th>{j}</th>" for j in range(fills.shape[1]))
    body = "".join(
        f"<tr><th>{i}</th>" + "".join(f"<td class={classes[f]}>{t}</td>" for f, t in zip(row_fills, row_text)) + "</tr>"
        for i, (row_fills, row_text) in enumerate(zip(fills, text))
    )
    swatches = "".join(
        f"<span style='margin-right:10px'><span style='display:inline-block;"
        f"width:10px;height:10px;background:{c}'></span> {label}</span>"
        for c, label in legend
    )
    return mo.Html(
        f"<div class={scope} style='margin-bottom:6px'><style>{css}</style>"
        f"<div style='font-size:12px;font-weight:600'>{title}</div>"
        f"<div style='font-size:11px;color:#64748b'>rows: {row_title} · columns: {col_title}</div>"
        f"<table style='border-collapse:separate;border-spacing:1px'><tr><th></th>{head}</tr>"
        f"{body}</table><div style='font-size:11px'>{swatches}</div></div>"
    )


def cell_table(kind, text=None, *, legend=False, **labels):
    """:func:`html_grid` of cells coloured by their kind (``GRID_COLORS``, the course's
    colours for inputs, padding, taps and outputs), with a legend of the kinds if asked."""
    kind = np.asarray(kind, dtype=object)
    text = np.full(kind.shape, "", dtype=object) if text is None else text
    colours = {k: color(c) for k, c in GRID_COLORS.items()}
    present = set(kind.ravel().tolist())
    swatches = [(colours[k], k) for k in colours if legend and k != "empty" and k in present]
    return html_grid(np.vectorize(colours.get, otypes=[object])(kind), text, legend=swatches, **labels)


def value_table(values, title, *, cmap="RdBu_r", symmetric=True, fmt="{:.2f}"):
    """:func:`html_grid` of numbers, each cell coloured by its value (red positive and blue
    negative, centred on 0, for signed maps such as kernels) and written in; ``cmap`` is one of
    one of Matplotlib's colour maps."""
    values = np.asarray(values, dtype=float)
    if symmetric:
        high = float(np.abs(values).max()) or 1.0
        low = -high
    else:
        low, high = float(values.min()), float(values.max())
    scaled = (values - low) / ((high - low) or 1.0)
    rgba = _rgba(cmap, scaled, "plot.value_table")
    fills = np.array(["#%02x%02x%02x" % tuple(px[:3]) for px in rgba.reshape(-1, 4)], dtype=object).reshape(
        values.shape
    )
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
        out[r * (h + gap) : r * (h + gap) + h, c * (w + gap) : c * (w + gap) + w] = image
    return out


def png(pixels) -> bytes:
    """uint8 pixels [H, W] (grey), [H, W, 2] (grey, alpha), [H, W, 3] (RGB) or [H, W, 4] (RGBA) as
    the bytes of a PNG, written by Pillow."""
    from PIL import Image

    pixels = np.asarray(pixels)
    channels = 1 if pixels.ndim == 2 else (pixels.shape[-1] if pixels.ndim == 3 else 0)
    modes = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
    if pixels.dtype != np.uint8 or channels not in modes or pixels.size == 0:
        raise ValueError(f"png: expected uint8 pixels [H, W] or [H, W, 1..4], got {pixels.dtype} {pixels.shape}")
    out = io.BytesIO()
    Image.fromarray(pixels, mode=modes[channels]).save(out, format="PNG")
    return out.getvalue()


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
        key = {
            i: (
                np.mean([ypos[c] for c in consumers.get(i, []) if c in ypos])
                if any(c in ypos for c in consumers.get(i, []))
                else 0.5
            )
            for i in ids
        }
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


def graph_chart(nodes, edges, *, highlight=None, done=(), height: int = 240, width_px: int = 760):
    """The computation graph the backward-pass stepper draws (engine.course.graph): a column per
    depth, each node's text and colour from ``_graph_node_look``, as a few Altair marks, so a
    step of the backward pass redraws in milliseconds.

    Boxes and arrowheads are sized for a chart about ``width_px`` pixels wide (wider only pads them).
    """
    from collections import Counter

    import altair as alt

    pos = _graph_layout(nodes, edges)
    x_scale = alt.Scale(domain=[-0.08, 1.08], nice=False, zero=False)
    y_scale = alt.Scale(domain=[0.0, 1.0], nice=False, zero=False)

    def at(x_field, y_field):  # position channels on the graph's fixed [0, 1] frame, no axes
        return alt.X(f"{x_field}:Q", axis=None, scale=x_scale), alt.Y(f"{y_field}:Q", axis=None, scale=y_scale)

    per_x, per_y = width_px / 1.16, float(height)  # pixels per data unit
    looks = {n["id"]: _graph_node_look(n, highlight, done) for n in nodes}
    half_w = {i: (max(map(len, t.split("\n"))) * 7.4 + 16) / per_x / 2 for i, (t, _, _) in looks.items()}
    links = {k: [] for k in ("x", "y", "x2", "y2", "angle", "times", "mx", "my")}
    for (a, b), count in Counter(edges).items():
        (x0, y0), (x1, y1) = pos[a], pos[b]
        gap = 6 / per_x  # the arrow starts and ends a few pixels off the boxes
        xs, xe = x0 + half_w[a] + gap, x1 - half_w[b] - gap
        ys, ye = (y0 + (y1 - y0) * (v - x0) / max(x1 - x0, 1e-9) for v in (xs, xe))
        for key, value in (
            ("x", xs),
            ("y", ys),
            ("x2", xe),
            ("y2", ye),
            ("angle", -math.degrees(math.atan2((ye - ys) * per_y, (xe - xs) * per_x))),
            ("times", f"×{count}" if count > 1 else ""),
            ("mx", (x0 + x1) / 2),
            ("my", (y0 + y1) / 2 + 0.05),
        ):
            links[key].append(value)
    boxes = {k: [] for k in ("x", "x2", "y", "y2", "cx", "text", "edge", "face", "lw")}
    for n in nodes:
        x, y = pos[n["id"]]
        text, edge, face = looks[n["id"]]
        half_h = (len(text.split("\n")) * 15.0 + 12) / per_y / 2  # the text's lineHeight is 15 px
        for key, value in (
            ("x", x - half_w[n["id"]]),
            ("x2", x + half_w[n["id"]]),
            ("y", y - half_h),
            ("y2", y + half_h),
            ("cx", x),
            ("text", text),
            ("edge", edge),
            ("face", face),
            ("lw", 2.2 if n["id"] == highlight else 1.2),
        ):
            boxes[key].append(value)
    grey = "#9ca3af"
    link_data = data(**{k: np.asarray(v, dtype=object if k == "times" else float) for k, v in links.items()})
    box_data = data(
        **{k: np.asarray(v, dtype=object if k in ("text", "edge", "face") else float) for k, v in boxes.items()}
    )
    arrows, nodes_ = alt.Chart(link_data), alt.Chart(box_data)  # each data written once, read by its layers
    layers = [
        arrows.mark_rule(color=grey, strokeWidth=1.2).encode(*at("x", "y"), alt.X2("x2"), alt.Y2("y2")),
        arrows.mark_point(shape="triangle-right", filled=True, color=grey, size=45, opacity=1).encode(
            *at("x2", "y2"), alt.Angle("angle:Q", scale=None)
        ),
        nodes_.mark_rect(cornerRadius=5).encode(
            *at("x", "y"),
            alt.X2("x2"),
            alt.Y2("y2"),
            alt.Fill("face:N", scale=None),
            alt.Stroke("edge:N", scale=None),
            alt.StrokeWidth("lw:Q", scale=None),
        ),
        nodes_.mark_text(
            font="monospace",
            fontSize=12,
            lineBreak="\n",
            lineHeight=15,
            baseline="top",
            dy=7,
            align="center",
            color="#111827",
        ).encode(*at("cx", "y2"), alt.Text("text:N")),  # top down
    ]
    if any(links["times"]):  # "×n" on an edge taken more than once; a layer costs a few ms to show
        layers.insert(2, arrows.mark_text(fontSize=11, color="#6b7280").encode(*at("mx", "my"), alt.Text("times:N")))
    return alt.layer(*layers, width="container", height=height).configure_view(stroke=None)


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


def _square_scale(lim: float, square: bool):
    """A scale giving an axis the range ±1.05 ``lim`` (both axes alike: circles stay round)."""
    import altair as alt

    return _scale((-1.05 * lim, 1.05 * lim)) if square and lim > 0 else alt.Undefined


def _extent(*arrays) -> float:
    """The largest finite absolute value in ``arrays`` (0 when there is none)."""
    finite = np.concatenate([np.abs(a[np.isfinite(a)]).ravel() for a in arrays])
    return float(finite.max()) if finite.size else 0.0


def paths_2d(
    series: dict,
    *,
    x_title: str = "x",
    y_title: str = "y",
    title=None,
    colors=None,
    height=HEIGHT,
    square: bool = True,
    points: bool = True,
):
    """2-D paths drawn in their own order (not sorted by x): ``series`` maps a name to ``(x, y)``
    or to ``(x, y, t)`` with ``t`` the value shown in the tooltip (a position, a time step).
    ``square`` gives both axes the same range, so circles look round."""
    import altair as alt

    columns, lim = {}, 0.0
    for name, v in series.items():
        x, y = np.asarray(v[0], float), np.asarray(v[1], float)
        t = np.asarray(v[2]) if len(v) > 2 else np.arange(len(x))
        columns[name] = {"x": x, "y": y, "t": t, "order": np.arange(len(x))}
        lim = max(lim, _extent(x, y))
    scale = _square_scale(lim, square)
    return (
        _chart(data(**_stacked(columns)), title=title, height=height)
        .mark_line(point=points, clip=True)
        .encode(
            alt.X("x:Q", title=x_title, scale=scale),
            alt.Y("y:Q", title=y_title, scale=scale),
            alt.Order("order:Q"),
            series_colors(series, colors),
            _tooltip("series:N", "t:Q", ("x:Q", ".3g"), ("y:Q", ".3g")),
        )
    )


def point_layers(
    layers: dict,
    *,
    x_title: str = "x₁",
    y_title: str = "x₂",
    title=None,
    height=360,
    square: bool = True,
    size: int = 10,
    domain=None,
):
    """Several 2-D point sets on one chart with a legend: ``layers`` maps a name to ``(X, colour)``
    with X [N, 2] and a palette name ('data', 'model', ...). ``square`` (with ``domain``, or the
    data's extent) gives both axes the same range, so shapes are not distorted."""
    import altair as alt

    columns, colors, lim = {}, {}, 0.0
    for name, (X, colour) in layers.items():
        X = np.asarray(X, dtype=float)
        columns[name] = {"x": X[:, 0], "y": X[:, 1]}
        colors[name] = colour
        lim = max(lim, _extent(X[np.isfinite(X).all(axis=1)]))
    scale = _scale(domain) if domain is not None else _square_scale(lim, square)
    return (
        _chart(data(**_stacked(columns)), title=title, height=height)
        .mark_circle(size=size, opacity=0.7, clip=True)
        .encode(
            alt.X("x:Q", title=x_title, scale=scale),
            alt.Y("y:Q", title=y_title, scale=scale),
            series_colors(layers, colors),
            _tooltip("series:N", ("x:Q", ".3g"), ("y:Q", ".3g")),
        )
    )


def vega_text(text) -> str:
    """``text`` as a string literal of a Vega expression (a ``labelExpr``, a ``calculate``):
    single-quoted, its backslashes and quotes escaped."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def compact_chart(chart, digits: int = 4):
    """``chart`` (an Altair chart from ``engine.course.plot``, one layer or several, each with its
    data inline as CSV), rewritten in place to send less to the page at every redraw: numbers with
    ``digits`` significant digits (plot.data writes 6), and the ``series`` column's names (long,
    and with Greek letters escaped twice, in JSON and in HTML, they can be most of a chart's
    bytes) as one-digit codes that a ``calculate`` transform turns back into the names in the
    browser, so encodings, legend and tooltips are unchanged. Returns ``chart``."""
    import altair as alt

    for part in getattr(chart, "layer", None) or [chart]:
        source = part.data
        if not isinstance(source, alt.InlineData) or not isinstance(source.values, str):
            continue
        parse = dict(source.format.parse) if source.format is not alt.Undefined else {}
        rows = list(csv.reader(io.StringIO(source.values)))
        head, body = rows[0], rows[1:]
        calculate = None
        for j, name in enumerate(head):
            column = [r[j] for r in body]
            if parse.get(name) == "number":
                form = f"%.{digits}g"
                column = [form % float(v) if v else v for v in column]
            elif name == "series" and len(set(column)) <= 10:
                names = list(dict.fromkeys(column))
                codes = {n: str(i) for i, n in enumerate(names)}
                column = [codes[v] for v in column]
                head[j] = "series_code"
                quoted = [vega_text(n) for n in names]
                calculate = "".join(f"datum.series_code == '{i}' ? {q} : " for i, q in enumerate(quoted[:-1]))
                calculate += quoted[-1] if quoted else "''"
            for r, v in zip(body, column):
                r[j] = v
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([head, *body])
        part.data = alt.InlineData(values=out.getvalue().rstrip("\n"), format=source.format)
        if calculate is not None:
            transforms = [] if part.transform is alt.Undefined else list(part.transform)
            part.transform = [alt.CalculateTransform(calculate=calculate, **{"as": "series"}), *transforms]
    return chart
