"""The course's one visual language: a palette with meanings, and the chart helpers notebooks share.

The same colour always means the same thing across every notebook (see :data:`PALETTE` and
:data:`MEANINGS`): a function is blue, its derivative orange, a formula ("analytic") is drawn as a
line and the engine's autograd values as dark dots on top of it, data is grey and a model purple,
training curves teal and validation pink, and each optimizer keeps its own colour.

Altair charts (lines, heatmaps, scatters, histograms) fill the notebook's width
(``width='container'``); Matplotlib draws what reads better as an image (contours with
trajectories, image grids, decision boundaries, graphs). Altair and Matplotlib are imported inside
the functions, so ``import engine`` needs only NumPy. Data goes to Altair as inline records (no
pandas needed), with NaN and ±inf sent as missing values so that a chart never fails on them.
"""

from __future__ import annotations

import math

import numpy as np

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
    """Inline Altair data from equal-length columns (arrays, lists or scalars broadcast)."""
    n = max((len(np.atleast_1d(c)) for c in columns.values() if not np.isscalar(c)), default=1)
    cols = {}
    for k, c in columns.items():
        a = np.atleast_1d(c) if not np.isscalar(c) else np.full(n, c, dtype=object)
        if len(a) != n:
            raise ValueError(f"plot.records: column {k!r} has {len(a)} values, the others {n}")
        cols[k] = a
    keys = list(cols)
    return [{k: _clean(cols[k][i]) for k in keys} for i in range(n)]


def _alt():
    import altair as alt

    return alt


def _finish(chart, title=None, height=HEIGHT):
    props = {"width": "container", "height": height}
    if title:
        props["title"] = title
    return chart.properties(**props)


def _color_scale(names, colors=None):
    """An Altair colour scale that maps each series name to its colour (palette name or hex)."""
    alt = _alt()
    colors = colors or {}
    rng = []
    for i, n in enumerate(names):
        c = colors.get(n, n if n in PALETTE else SERIES_COLORS[i % len(SERIES_COLORS)])
        rng.append(color(c))
    return alt.Scale(domain=list(names), range=rng)


# ----------------------------------------------------------------------------- Altair charts


def curves(x, ys: dict, *, x_title: str = "x", y_title: str = "y", title=None, colors=None,
           dashed=(), y_domain=None, height=HEIGHT, legend_title: str = ""):
    """Several curves y(x) on one chart with a legend.

    ``ys`` maps a series name to its values over ``x`` (or to ``(x_i, y_i)`` for its own x);
    a name found in :data:`PALETTE` gets its colour unless ``colors`` says otherwise; names in
    ``dashed`` are drawn dashed. ``y_domain=(lo, hi)`` clips the view (values outside are cut).
    """
    alt = _alt()
    rows = []
    for name, v in ys.items():
        xs, yv = (v if isinstance(v, tuple) else (x, v))
        yv = np.asarray(yv, dtype=float)
        if y_domain is not None:
            yv = np.where((yv < y_domain[0]) | (yv > y_domain[1]), np.nan, yv)
        rows += records(x=np.asarray(xs, dtype=float), y=yv, series=name)
    names = list(ys)
    enc_y = alt.Y("y:Q", title=y_title, scale=alt.Scale(domain=list(y_domain)) if y_domain else alt.Undefined)
    chart = alt.Chart(alt.Data(values=rows)).mark_line(clip=True).encode(
        x=alt.X("x:Q", title=x_title),
        y=enc_y,
        color=alt.Color("series:N", scale=_color_scale(names, colors), title=legend_title,
                        sort=names, legend=alt.Legend(orient="bottom")),
        strokeDash=alt.condition(
            alt.FieldOneOfPredicate(field="series", oneOf=list(dashed)) if dashed else alt.datum.series == "\0",
            alt.value([5, 4]), alt.value([1, 0])),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("x:Q", format=".4g"), alt.Tooltip("y:Q", format=".4g")],
    )
    return _finish(chart, title, height)


def function_and_derivative(x, f, df_analytic, df_autograd, *, name: str = "f", x_title: str = "x",
                            title=None, y_domain=None, n_dots: int = 41, height=HEIGHT):
    """A function (blue), its derivative from the formula (orange line), and the derivative
    computed by the engine's autograd (dark dots, every few points) drawn over the formula."""
    alt = _alt()
    x = np.asarray(x, dtype=float)
    lines = curves(x, {f"{name}(x)": f, f"{name}'(x), formula": df_analytic}, x_title=x_title,
                   y_title="value", colors={f"{name}(x)": "function", f"{name}'(x), formula": "derivative"},
                   y_domain=y_domain, height=height)
    step = max(1, len(x) // max(1, n_dots - 1))
    idx = np.arange(0, len(x), step)
    dots_y = np.asarray(df_autograd, dtype=float)[idx]
    if y_domain is not None:
        dots_y = np.where((dots_y < y_domain[0]) | (dots_y > y_domain[1]), np.nan, dots_y)
    dots = alt.Chart(alt.Data(values=records(x=x[idx], y=dots_y, series=f"{name}'(x), autograd"))).mark_point(
        filled=True, size=22, color=PALETTE["autograd"], clip=True).encode(
        x="x:Q", y="y:Q",
        shape=alt.Shape("series:N", title="", legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("x:Q", format=".4g"), alt.Tooltip("y:Q", title="autograd", format=".6g")])
    chart = alt.layer(lines, dots)
    return _finish(chart, title, height)


def bars(labels, values, *, x_title: str = "", y_title: str = "", title=None, color_name: str = "model",
         y_domain=None, height=200, text_format: str = ".3f"):
    """Vertical bars with their value written on top (probabilities, per-layer shares...)."""
    alt = _alt()
    labels = [str(s) for s in labels]
    data = alt.Data(values=records(label=np.asarray(labels, dtype=object), value=np.asarray(values, dtype=float)))
    base = alt.Chart(data).encode(
        x=alt.X("label:N", title=x_title, sort=labels, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("value:Q", title=y_title, scale=alt.Scale(domain=list(y_domain)) if y_domain else alt.Undefined),
        tooltip=[alt.Tooltip("label:N"), alt.Tooltip("value:Q", format=".4g")])
    chart = base.mark_bar(color=color(color_name)) + base.mark_text(dy=-6, fontSize=11).encode(
        text=alt.Text("value:Q", format=text_format))
    return _finish(chart, title, height)


def heatmap(z, *, x_labels=None, y_labels=None, x_title: str = "", y_title: str = "", color_title: str = "",
            title=None, scheme: str = "viridis", domain=None, annotate: bool = False, fmt: str = ".2f",
            height=HEIGHT):
    """A matrix as coloured cells (row 0 at the top), optionally with each value written in."""
    alt = _alt()
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"plot.heatmap: needs a 2-D array, got shape {z.shape}")
    rows, cols = z.shape
    xl = [str(s) for s in (x_labels if x_labels is not None else range(cols))]
    yl = [str(s) for s in (y_labels if y_labels is not None else range(rows))]
    ii, jj = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    data = alt.Data(values=records(x=np.asarray(xl, dtype=object)[jj.ravel()], y=np.asarray(yl, dtype=object)[ii.ravel()],
                                   z=z.ravel()))
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    base = alt.Chart(data).encode(x=alt.X("x:O", title=x_title, sort=xl), y=alt.Y("y:O", title=y_title, sort=yl))
    chart = base.mark_rect().encode(color=alt.Color("z:Q", title=color_title, scale=scale),
                                    tooltip=["y:O", "x:O", alt.Tooltip("z:Q", format=".4g")])
    if annotate:
        chart = chart + base.mark_text(fontSize=11).encode(text=alt.Text("z:Q", format=fmt))
    return _finish(chart, title, height)


def scatter_classes(X, y, *, x_title: str = "x₁", y_title: str = "x₂", title=None, height=HEIGHT,
                    class_names=None):
    """2-D points coloured by class (class k in CLASS_COLORS[k])."""
    alt = _alt()
    X = np.asarray(X, dtype=float)
    y = np.asarray(y).astype(int)
    names = class_names or [f"class {k}" for k in range(int(y.max()) + 1 if y.size else 1)]
    lab = np.asarray(names, dtype=object)[y]
    chart = alt.Chart(alt.Data(values=records(x1=X[:, 0], x2=X[:, 1], label=lab))).mark_circle(size=28, opacity=0.8).encode(
        x=alt.X("x1:Q", title=x_title), y=alt.Y("x2:Q", title=y_title),
        color=alt.Color("label:N", title="", sort=list(names),
                        scale=alt.Scale(domain=list(names), range=list(CLASS_COLORS[: len(names)])),
                        legend=alt.Legend(orient="bottom")))
    return _finish(chart, title, height)


def loss_curves(history: dict, *, x_title: str = "epoch", y_title: str = "loss", title=None, log_y: bool = False,
                colors=None, height=HEIGHT):
    """Learning curves: ``history`` maps a series ('train', 'validation', an optimizer...) to values per step."""
    alt = _alt()
    rows = []
    for name, vals in history.items():
        v = np.asarray(vals, dtype=float)
        if log_y:
            v = np.where(v > 0, v, np.nan)
        rows += records(step=np.arange(1, len(v) + 1), y=v, series=name)
    names = list(history)
    chart = alt.Chart(alt.Data(values=rows)).mark_line().encode(
        x=alt.X("step:Q", title=x_title),
        y=alt.Y("y:Q", title=y_title, scale=alt.Scale(type="log") if log_y else alt.Undefined),
        color=alt.Color("series:N", title="", sort=names, scale=_color_scale(names, colors),
                        legend=alt.Legend(orient="bottom")),
        tooltip=["series:N", "step:Q", alt.Tooltip("y:Q", format=".4g")])
    return _finish(chart, title, height)


def histogram_grid(panels: dict, *, bins: int = 30, x_title: str = "value", columns: int = 4,
                   range_=None, color_name: str = "function", panel_width: int = 150, panel_height: int = 90,
                   title=None, flags: dict | None = None):
    """Small multiples of histograms, one per entry of ``panels`` (name -> samples), on one shared x range.

    ``flags`` may map a panel name to a short note shown in its header (e.g. '62% dead').
    (Faceted charts cannot use the container width, so panels have a fixed size.)
    """
    alt = _alt()
    names = list(panels)
    finite = [np.asarray(v, dtype=float)[np.isfinite(v)] for v in panels.values()]
    if range_ is None:
        lo = min((a.min() for a in finite if a.size), default=-1.0)
        hi = max((a.max() for a in finite if a.size), default=1.0)
        range_ = (lo, hi) if hi > lo else (lo - 1, hi + 1)
    edges = np.linspace(range_[0], range_[1], bins + 1)
    rows = []
    for name, a in zip(names, finite):
        counts, _ = np.histogram(np.clip(a, range_[0], range_[1]), bins=edges)
        share = counts / max(1, a.size)
        label = f"{name} · {flags[name]}" if flags and name in flags else name
        rows += records(lo=edges[:-1], hi=edges[1:], share=share, panel=label)
    labels = [f"{n} · {flags[n]}" if flags and n in flags else n for n in names]
    chart = alt.Chart(alt.Data(values=rows)).mark_rect(color=color(color_name)).encode(
        x=alt.X("lo:Q", title=x_title, scale=alt.Scale(domain=list(range_))), x2="hi:Q",
        y=alt.Y("share:Q", title="share"), tooltip=[alt.Tooltip("lo:Q", format=".3g"), alt.Tooltip("share:Q", format=".3f")],
    ).properties(width=panel_width, height=panel_height).facet(
        facet=alt.Facet("panel:N", sort=labels, title=None), columns=columns)
    if title:
        chart = chart.properties(title=title)
    return chart.resolve_scale(y="independent")


def rule(value: float, orient: str = "y", color_name: str = "reference"):
    """A horizontal (orient='y') or vertical ('x') reference line to layer over a chart."""
    alt = _alt()
    return alt.Chart(alt.Data(values=[{"v": _clean(value)}])).mark_rule(
        color=color(color_name), strokeDash=[3, 3]).encode(**{orient: f"v:Q"})


def points(x, y, *, color_name: str = "data", size: int = 40, label: str | None = None, filled: bool = True):
    """A layer of points (data, outliers, minima) in one palette colour, to add to a chart with ``+``."""
    alt = _alt()
    enc = {"x": "x:Q", "y": "y:Q", "tooltip": [alt.Tooltip("x:Q", format=".4g"), alt.Tooltip("y:Q", format=".4g")]}
    return alt.Chart(alt.Data(values=records(x=np.asarray(x, float), y=np.asarray(y, float),
                                             label=label or color_name))).mark_point(
        filled=filled, size=size, color=color(color_name)).encode(**enc)


# ----------------------------------------------------------------------------- Matplotlib figures


def _figure(width: float = 7.0, height: float = 4.2):
    from matplotlib.figure import Figure

    # A Figure not tied to pyplot: no global state, safe in any runtime (and in the browser build).
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig


def contour_trajectories(xx, yy, zz, trajectories: dict, *, log_levels: bool = True, levels: int = 25,
                         start=None, minimum=None, title=None, colors=None, x_title="θ₁", y_title="θ₂",
                         width: float = 7.0, height: float = 5.0):
    """A loss surface as contours with one optimizer path per entry of ``trajectories`` (name -> [N, 2]).

    Paths leaving the view are clipped; a path that became non-finite stops at its last finite point.
    """
    fig = _figure(width, height)
    ax = fig.add_subplot()
    z = np.asarray(zz, dtype=float)
    finite = z[np.isfinite(z)]
    if log_levels and finite.size:
        zmin = finite.min()
        shifted = z - zmin + 1e-3
        lv = np.geomspace(1e-3, max(shifted[np.isfinite(shifted)].max(), 2e-3), levels)
        ax.contourf(xx, yy, shifted, levels=lv, cmap="Greys_r", alpha=0.35, norm=_lognorm(lv))
        ax.contour(xx, yy, shifted, levels=lv, colors="#9ca3af", linewidths=0.6, norm=_lognorm(lv))
    else:
        ax.contourf(xx, yy, z, levels=levels, cmap="Greys_r", alpha=0.35)
        ax.contour(xx, yy, z, levels=levels, colors="#9ca3af", linewidths=0.6)
    colors = colors or {}
    for i, (name, path) in enumerate(trajectories.items()):
        p = np.asarray(path, dtype=float)
        ok = np.all(np.isfinite(p), axis=1)
        if not ok.all():
            p = p[: np.argmin(ok)] if not ok[0] else p[: np.argmin(ok)]
        c = color(colors.get(name, name if name in PALETTE else SERIES_COLORS[i % len(SERIES_COLORS)]))
        ax.plot(p[:, 0], p[:, 1], "-", color=c, lw=1.8, label=name, marker="o", ms=2.5)
        if len(p):
            ax.plot(p[-1, 0], p[-1, 1], "o", color=c, ms=6, mec="white")
    if start is not None:
        ax.plot(*start, marker="s", color="black", ms=7, ls="none", label="start")
    if minimum is not None:
        ax.plot(*minimum, marker="*", color=PALETTE["target"], ms=14, ls="none", label="minimum")
    ax.set_xlim(np.min(xx), np.max(xx))
    ax.set_ylim(np.min(yy), np.max(yy))
    ax.set_xlabel(x_title)
    ax.set_ylabel(y_title)
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.85, bbox_to_anchor=(1.01, 1.0))
    return fig


def _lognorm(levels):
    from matplotlib.colors import LogNorm

    return LogNorm(vmin=levels[0], vmax=levels[-1])


def decision_boundary(xx, yy, probs, X, y, *, title=None, width: float = 5.0, height: float = 4.6):
    """Predicted class regions of a 2-D classifier (shaded by confidence) with the data on top.

    ``probs`` is [G, G, C] class probabilities over the grid ``xx, yy``.
    """
    from matplotlib.colors import to_rgb

    fig = _figure(width, height)
    ax = fig.add_subplot()
    probs = np.asarray(probs, dtype=float)
    k = probs.shape[-1]
    cols = np.array([to_rgb(CLASS_COLORS[i % len(CLASS_COLORS)]) for i in range(k)])
    # Mix the class colours by probability, then fade toward white where the model is unsure.
    rgb = probs @ cols
    conf = (probs.max(-1, keepdims=True) - 1 / k) / (1 - 1 / k)
    img = 1 - (1 - rgb) * (0.15 + 0.55 * conf)
    ax.imshow(img, origin="lower", extent=(xx.min(), xx.max(), yy.min(), yy.max()), aspect="auto",
              interpolation="bilinear")
    X = np.asarray(X, dtype=float)
    y = np.asarray(y).astype(int)
    for c in range(k):
        m = y == c
        ax.scatter(X[m, 0], X[m, 1], s=14, color=CLASS_COLORS[c % len(CLASS_COLORS)], edgecolor="white",
                   linewidth=0.5, label=f"class {c}")
    ax.set_xlim(xx.min(), xx.max())
    ax.set_ylim(yy.min(), yy.max())
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    if title:
        ax.set_title(title)
    return fig


def image_grid(images, *, titles=None, ncols: int = 8, cmap: str = "gray", vmin=None, vmax=None,
               cell: float = 1.1, suptitle=None):
    """Small images (N, H, W) or (N, H, W, 3) in a grid, each with an optional title."""
    images = np.asarray(images)
    n = len(images)
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig = _figure(cell * ncols, cell * nrows + (0.3 if suptitle else 0))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, ax in enumerate(axes.ravel()):
        ax.set_axis_off()
        if i < n:
            ax.imshow(images[i], cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
            if titles is not None:
                ax.set_title(str(titles[i]), fontsize=8)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def graph_figure(nodes, edges, *, highlight=None, done=(), width: float = 8.0, height: float = 3.6):
    """A computation graph, inputs on the left and the output on the right.

    ``nodes``: dicts with 'id', 'label' (e.g. 'mul'), 'value' and 'grad' (None when not yet known),
    and 'depth' (column); ``edges``: (from_id, to_id) pairs. The node ``highlight`` is the one the
    backward pass is at (orange); the ids in ``done`` already hold their gradient (teal edge).
    """
    fig = _figure(width, height)
    ax = fig.add_subplot()
    ax.set_axis_off()
    depth = {n["id"]: n["depth"] for n in nodes}
    cols: dict = {}
    for n in nodes:
        cols.setdefault(n["depth"], []).append(n["id"])
    pos = {}
    max_d = max(depth.values()) if depth else 0
    for d, ids in cols.items():
        for j, i in enumerate(ids):
            pos[i] = (d / max(1, max_d), 1 - (j + 1) / (len(ids) + 1))
    for a, b in edges:
        (x0, y0), (x1, y1) = pos[a], pos[b]
        ax.annotate("", xy=(x1 - 0.045, y1), xytext=(x0 + 0.045, y0),
                    arrowprops=dict(arrowstyle="->", color="#9ca3af", lw=1.2))
    for n in nodes:
        x, y = pos[n["id"]]
        is_hi = n["id"] == highlight
        edge = PALETTE["derivative"] if is_hi else (PALETTE["train"] if n["id"] in done else "#9ca3af")
        face = "#fff7ed" if is_hi else "white"
        g = n.get("grad")
        gtxt = "grad ?" if g is None else f"grad {_short(g)}"
        ax.text(x, y, f"{n['label']}\n{_short(n['value'])}\n{gtxt}", ha="center", va="center", fontsize=8.5,
                family="monospace", bbox=dict(boxstyle="round,pad=0.35", fc=face, ec=edge, lw=2.2 if is_hi else 1.2))
    ax.set_xlim(-0.08, 1.08)
    ax.set_ylim(0, 1)
    return fig


def _short(v) -> str:
    a = np.asarray(v, dtype=float)
    if a.size == 1:
        return f"{float(a):.4g}"
    return f"[{a.size} values]"
