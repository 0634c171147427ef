"""engine.course.plot: one palette with meanings, charts that fit the notebook and never choke on NaN."""

import base64
import csv
import io
import re
import subprocess
import sys

import altair as alt
import numpy as np
import pytest

from engine.course import plot


def test_every_palette_colour_has_a_meaning_and_is_hex():
    assert set(plot.PALETTE) == set(plot.MEANINGS)
    for name, hexcode in plot.PALETTE.items():
        assert len(hexcode) == 7 and hexcode.startswith("#"), name
    # the colours that must never be confused are distinct
    distinct = ["function", "derivative", "autograd", "data", "model", "train", "validation"]
    assert len({plot.PALETTE[k] for k in distinct}) == len(distinct)
    assert len(set(plot.PALETTE[k] for k in ["sgd", "momentum", "nesterov", "rmsprop", "adam", "adamw"])) == 6


def test_color_lookup():
    assert plot.color("adam") == plot.PALETTE["adam"]
    assert plot.color("#123456") == "#123456"
    with pytest.raises(ValueError, match="unknown palette name 'mauve'"):
        plot.color("mauve")


# One call of every chart and image helper, as a page makes them.
EVERY_CHART = """
import numpy as np
from types import SimpleNamespace
from engine.course import plot
x = np.linspace(-2, 2, 21)
X, y = np.array([[0.0, 1.0], [1.0, 0.0], [np.nan, 2.0]]), np.array([0, 1, 1])
grid = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 5))
report = SimpleNamespace(xx=grid[0], yy=grid[1], probs=1 / (1 + np.exp(-8 * grid[0])), piece_ids=(grid[0] > 0) * 1,
                         pieces=2, accuracy=0.5, X=X[:2], y=y[:2])
charts = {
    "curves": plot.curves(x, {"function": x ** 2, "f": (x[:3], x[:3])}, dashed=("f",), y_domain=(0, 3), log_x=False),
    "curves, log axes": plot.curves(x + 3, {"f": x + 3}, log_y=True, log_x=True, title="t"),
    "function_and_derivative": plot.function_and_derivative(x, x ** 2, 2 * x, 2 * x, n_dots=5)
                               + plot.rule(0.0, orient="x"),
    "bars": plot.bars(["a", "b"], [0.2, 0.8], y_domain=(0, 1)) + plot.rule(0.5),
    "bars with dots": plot.bars(["a", "b"], [0.2, 0.8], dots={"autograd": [0.2, 0.8]}, bar_label="formula"),
    "grouped_bars": plot.grouped_bars(["a", "b"], {"p": [0.1, 0.9], "q": [0.5, 0.5]}, y_domain=(0, 1)),
    "heatmap": plot.heatmap(np.arange(6.0).reshape(2, 3), annotate=True, domain=(0, 5)),
    "scatter_classes": plot.scatter_classes(X, y),
    "loss_curves": plot.loss_curves({"train": [1.0, 0.1], "validation": [1.2, 0.0]}, log_y=True),
    "histogram_grid": plot.histogram_grid({"a": x, "b": -x}, bins=5, title="h"),
    "points": plot.curves(x, {"f": x}) + plot.points([0.0], [1.0]) + plot.points([1.0], [2.0], color_name="outlier"),
    "paths_2d": plot.paths_2d({"a": (x, x), "b": (x, -x, x)}),
    "point_layers": plot.point_layers({"data": (X, "data"), "model": (X + 1, "model")}),
    "surface_paths": plot.surface_paths(*grid, grid[0] ** 2 + grid[1] ** 2, {"sgd": np.zeros((3, 2))}, start=(1, 1)),
    "class_regions": plot.class_regions(*grid, np.full((5, 5, 2), 0.5), X[:2], y[:2]),
    "piece_regions": plot.piece_regions(report),
    "graph_chart": plot.graph_chart([dict(id="a", label="x", value=1.0, grad=None, depth=0)], []),
}
images = [plot.image_tiles({"w": np.eye(3), "g": -np.eye(3)}, symmetric=("g",), cmaps={"w": "Purples"}),
          plot.value_table(np.eye(2), "v"), plot.cell_table(np.array([["tap"]], dtype=object), title="c")]
"""


def test_importing_the_course_layer_loads_neither_altair_nor_matplotlib():
    """A page imports Altair itself, in its setup cell; ``import engine.course`` stays cheap (and
    tests/engine/test_layers.py checks that no course module imports either at its top)."""
    code = "import sys, engine.course\nprint(sorted(m for m in ('altair', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def rows(part) -> list:
    """The rows of a chart's (or one layer's) inline CSV data, each field typed by the data's
    parse directive (an empty number or boolean is None, a gap; numbers without a dot are ints)."""
    source = part.data
    assert isinstance(source, alt.InlineData) and source.format.type == "csv", source
    parse = source.format.parse

    def read(field, text):
        kind = parse.get(field)
        if kind is None:
            return text
        if text == "":
            return None
        if kind == "boolean":
            return text == "true"
        return int(text) if text.lstrip("-").isdigit() else float(text)

    table = list(csv.reader(io.StringIO(source.values)))
    return [{f: read(f, t) for f, t in zip(table[0], row)} for row in table[1:]]


def test_every_chart_is_an_altair_chart_valid_against_the_vega_lite_schema():
    namespace = {}
    exec(EVERY_CHART, namespace)
    for name, chart in namespace["charts"].items():
        assert isinstance(chart, alt.TopLevelMixin), name
        spec = chart.to_dict()  # validates against Altair's Vega-Lite schema, raising if invalid
        assert "/vega-lite/v6" in spec["$schema"], name
        assert "vegalite" in mo_html(chart), name
    with pytest.raises(Exception, match="nope"):  # the validation does fail on an invalid chart
        (
            namespace["charts"]["curves"] + alt.Chart().mark_point().encode(alt.X("x:Q", scale={"type": "nope"}))
        ).to_dict()


def mo_html(chart) -> str:
    import marimo as mo

    return mo.as_html(chart).text


def test_charts_layer_with_plus_as_altair_charts_do():
    x = np.linspace(0, 1, 5)
    left = plot.curves(x, {"f": x}, title="T", height=280)
    chart = left + plot.points([0.5], [0.5]) + plot.rule(0.25, orient="x")
    assert isinstance(chart, alt.LayerChart)
    spec = chart.to_dict()
    assert (spec["height"], spec["width"]) == (280, "container")  # moved up from the layers, as Altair does
    assert spec["layer"][0]["title"] == "T"  # Vega-Lite titles a layered chart with its first layer's title
    marks = [layer.mark if isinstance(layer.mark, str) else layer.mark.type for layer in chart.layer]
    assert marks == ["line", "point", "rule"]
    assert rows(chart.layer[2]) == [{"v": 0.25}]
    bars = plot.bars(["a"], [1.0]) + plot.rule(0.5)  # the bars and their labels share one data, sent once
    assert [r["value"] for r in rows(bars)] == [1.0] and len(bars.layer) == 3
    assert rows(bars.layer[2]) == [{"v": 0.5}]
    assert isinstance(left.properties(height=100), alt.Chart)  # .properties() as on any Altair chart


def test_data_writes_non_finite_values_as_gaps_and_reads_back_as_the_columns():
    source = plot.data(
        x=np.array([0.0, 1.0, 2.0]),
        y=np.array([1.5, np.nan, np.inf]),
        n=np.array([1, -2, 3]),
        ok=np.array([True, False, True]),
        s='a, "quoted"\nline',
    )
    assert source.format.parse == {"x": "number", "y": "number", "n": "number", "ok": "boolean"}
    back = rows(alt.Chart(source))
    assert back[0] == {"x": 0.0, "y": 1.5, "n": 1, "ok": True, "s": 'a, "quoted"\nline'}
    assert [r["y"] for r in back] == [1.5, None, None]
    assert [type(r["n"]) for r in back] == [int, int, int]
    with pytest.raises(ValueError, match="column 'y' has shape"):
        plot.data(x=[1, 2, 3], y=[1, 2])


def test_curves_fill_the_width_and_use_palette_colours():
    x = np.linspace(-1, 1, 11)
    chart = plot.curves(x, {"function": x, "derivative": np.ones_like(x)}, x_title="z", y_title="a")
    spec = chart.to_dict()
    assert spec["width"] == "container"
    scale = spec["encoding"]["color"]["scale"]
    assert scale["domain"] == ["function", "derivative"]
    assert scale["range"] == [plot.PALETTE["function"], plot.PALETTE["derivative"]]
    assert spec["encoding"]["x"]["title"] == "z" and spec["encoding"]["y"]["title"] == "a"
    assert len(rows(chart)) == 22


def test_function_and_derivative_draws_autograd_dots_over_the_formula():
    x = np.linspace(-3, 3, 301)
    f, df = np.tanh(x), 1 - np.tanh(x) ** 2
    chart = plot.function_and_derivative(x, f, df, df + 1.0, name="tanh", n_dots=31)
    lines, dots = chart.to_dict()["layer"]
    assert lines["mark"]["type"] == "line" and dots["mark"]["type"] == "point"
    scale = dots["encoding"]["color"]["scale"]
    colour_of = dict(zip(scale["domain"], scale["range"]))
    assert colour_of["tanh′(x), autograd"] == plot.PALETTE["autograd"]
    assert colour_of["tanh(x)"] == plot.PALETTE["function"]
    assert colour_of["tanh′(x), formula"] == plot.PALETTE["derivative"]
    assert lines["encoding"]["color"]["scale"] == scale  # one legend for lines and dots
    ys = [r["y"] for r in rows(chart.layer[1])]
    xs = np.array([r["x"] for r in rows(chart.layer[1])])
    # the dots carry the autograd values (here shifted by one so they are told apart from the line)
    np.testing.assert_allclose(ys, 1 - np.tanh(xs) ** 2 + 1.0, rtol=1e-5, atol=1e-6)
    assert 25 <= len(ys) <= 35


def test_y_domain_cuts_values_outside_the_view():
    x = np.array([0.0, 1.0, 2.0])
    chart = plot.curves(x, {"f": np.array([0.0, 50.0, 1.0])}, y_domain=(-1, 2))
    assert [r["y"] for r in rows(chart)] == [0.0, None, 1.0]
    chart = plot.curves(x, {"f": np.array([1.0, 0.0, -1.0])}, log_y=True)
    assert [r["y"] for r in rows(chart)] == [1.0, None, None]


def test_heatmap_and_histograms_and_bars():
    z = np.arange(6.0).reshape(2, 3)
    cells = rows(plot.heatmap(z, x_labels=list("abc"), y_labels=["r0", "r1"], annotate=True))  # one data, two layers
    assert {(c["y"], c["x"]): c["z"] for c in cells}[("r1", "b")] == 4.0
    with pytest.raises(ValueError, match="2-D"):
        plot.heatmap(np.zeros(3))
    h = plot.histogram_grid({"L1": np.zeros(10), "L2": np.ones(10)}, bins=4, flags={"L1": "100% dead"})
    shares = {}
    for r in rows(h):
        shares.setdefault(r["panel"], 0.0)
        shares[r["panel"]] += r["share"]
    assert shares == {"L1 · 100% dead": pytest.approx(1.0), "L2": pytest.approx(1.0)}
    assert [r["value"] for r in rows(plot.bars(["a", "b"], [0.25, 0.75]))] == [0.25, 0.75]


def test_loss_curves_on_a_log_axis_drop_non_positive_values():
    chart = plot.loss_curves({"train": [1.0, 0.0, 0.1]}, log_y=True)
    assert [r["y"] for r in rows(chart)] == [1.0, None, 0.1]
    assert chart.to_dict()["encoding"]["y"]["scale"]["type"] == "log"


def test_surface_paths_sends_a_coarse_grid_and_thinned_paths_as_valid_vega_lite():
    xx, yy = np.meshgrid(np.linspace(-2, 2, 40), np.linspace(-1, 3, 40))
    zz = (1 - xx) ** 2 + 100 * (yy - xx**2) ** 2
    long = np.stack([np.linspace(-1.5, 1, 1001), np.linspace(2, 1, 1001)], 1)
    broken = np.array([[-1.0, 1.0], [0.0, 0.5], [np.inf, np.nan], [1.0, 1.0]])
    chart = plot.surface_paths(
        xx,
        yy,
        zz,
        {"SGD": long, "Adam": broken},
        colors={"SGD": "sgd", "Adam": "adam"},
        start=(-1.5, 2.0),
        minimum=(1.0, 1.0),
        title="R",
    )
    spec = chart.to_dict()  # validates
    cells, lines, ends = spec["layer"][:3]  # then the start and the minimum
    grid = rows(chart.layer[0])
    assert len(grid) == 1600
    lowest = min(grid, key=lambda r: r["shade"])
    assert lowest["f"] == pytest.approx(zz.min(), abs=1e-3)  # the darkest cell is the lowest value
    assert [c["as"] for c in cells["transform"]] == ["x0", "x1", "y0", "y1"]
    path_rows = rows(chart.layer[1])
    sgd = [r for r in path_rows if r["series"] == "SGD"]
    adam = [r for r in path_rows if r["series"] == "Adam"]
    assert len(sgd) == 200 and sgd[0]["step"] == 0 and sgd[-1]["step"] == 1000  # thinned, ends kept
    assert [r["step"] for r in adam] == [0, 1]  # cut at the first non-finite point
    assert [(r["series"], r["step"]) for r in rows(chart.layer[2])] == [("SGD", 1000), ("Adam", 1)]
    assert ends["encoding"]["color"]["legend"] is None  # one legend entry per path, not two
    scale = lines["encoding"]["color"]["scale"]
    assert scale == {"domain": ["SGD", "Adam"], "range": [plot.PALETTE["sgd"], plot.PALETTE["adam"]]}
    assert rows(chart.layer[4]) == [{"x": 1.0, "y": 1.0, "label": "minimum"}]
    assert spec["title"] == "R" and spec["width"] == "container"
    assert lines["encoding"]["x"]["scale"]["domain"] == [-2.0, 2.0]


def test_class_regions_mix_class_colours_by_probability():
    xx, yy = np.meshgrid(np.linspace(0, 1, 3), np.linspace(0, 2, 3))
    probs = np.zeros((3, 3, 2))
    probs[..., 0] = 1.0
    probs[0, 0] = [0.5, 0.5]  # unsure: pale
    probs[2, 2] = [0.0, 1.0]
    chart = plot.class_regions(xx, yy, probs, np.array([[0.0, 0.0], [1.0, 2.0]]), np.array([0, 1]))
    spec = chart.to_dict()  # validates
    fill = {(r["x"], r["y"]): r["fill"] for r in rows(chart.layer[0])}
    assert fill[(1.0, 2.0)] != fill[(0.5, 1.0)]  # class 1 and class 0 cells differ
    sure, unsure = (np.array([int(fill[k][i : i + 2], 16) for i in (1, 3, 5)]) for k in ((0.5, 1.0), (0.0, 0.0)))
    assert unsure.min() > sure.min()  # paler where the model is unsure
    assert [r["label"] for r in rows(chart.layer[1])] == ["class 0", "class 1"]
    assert spec["layer"][1]["encoding"]["color"]["scale"]["range"] == list(plot.CLASS_COLORS[:2])


def test_class_regions_writes_each_cells_colour_as_matplotlibs_to_hex_would():
    from matplotlib.colors import to_hex, to_rgb

    rng = np.random.default_rng(0)
    xx, yy = np.meshgrid(np.linspace(-1, 1, 40), np.linspace(-1, 1, 40))
    probs = rng.dirichlet(np.ones(3), size=(40, 40))
    probs[0, :3] = [[1, 0, 0], [0, 1, 0], [1 / 3, 1 / 3, 1 / 3]]  # sure of class 0, of class 1, unsure
    chart = plot.class_regions(xx, yy, probs, np.zeros((1, 2)), np.array([0]))
    cols = np.array([to_rgb(c) for c in plot.CLASS_COLORS[:3]])
    conf = (probs.max(-1, keepdims=True) - 1 / 3) / (2 / 3)
    rgb = np.clip(1 - (1 - probs @ cols) * (0.15 + 0.55 * conf), 0, 1).reshape(-1, 3)
    assert [r["fill"] for r in rows(chart.layer[0])] == [to_hex(c) for c in rgb]


def test_piece_regions_shows_the_pieces_the_decision_and_where_it_crosses_one_half():
    from types import SimpleNamespace

    xx, yy = np.meshgrid(np.linspace(-1, 1, 80), np.linspace(-1, 1, 80))
    probs = 1 / (1 + np.exp(-8 * xx))  # class 1 to the right of x = 0
    piece_ids = (xx > 0).astype(int) + 2 * (yy > 0)  # four quadrants, four pieces
    report = SimpleNamespace(
        xx=xx,
        yy=yy,
        probs=probs,
        piece_ids=piece_ids,
        pieces=4,
        accuracy=0.75,
        X=np.array([[-0.5, 0.0], [0.5, 0.0]]),
        y=np.array([0, 1]),
    )
    chart = plot.piece_regions(report, max_side=40)
    assert isinstance(chart, alt.HConcatChart)
    spec = chart.to_dict()  # validates
    grid = rows(chart)  # both panels read the one grid sent at the top level
    assert len(grid) == 40 * 40 and len({r["piece"] for r in grid}) == 4
    pieces_panel, decision_panel = spec["hconcat"]
    assert pieces_panel["title"] == "4 linear pieces" and decision_panel["title"] == "decision, accuracy 75 %"
    boundary = rows(chart.hconcat[0].layer[1])
    assert boundary and all(abs(r["x"]) < 0.06 for r in boundary)  # the cells beside x = 0
    assert {r["y"] for r in boundary} == {r["y"] for r in grid}  # along the whole height
    assert [r["label"] for r in rows(chart.hconcat[1].layer[2])] == ["class 0", "class 1"]


def test_graph_chart_draws_each_node_its_text_and_colour_and_each_edge_once():
    nodes = [
        dict(id="a", label="x", value=2.0, grad=None, depth=0),
        dict(id="c", label="", value=3.0, grad=None, depth=0, kind="const"),
        dict(id="b", label="mul", value=6.0, grad=1.0, depth=1),
    ]
    edges = [("a", "b"), ("a", "b"), ("c", "b")]
    chart = plot.graph_chart(nodes, edges, highlight="b", done={"b"})
    chart.to_dict()  # validates
    rules, heads, times, boxes, texts = chart.layer
    shown = {r["text"]: (r["edge"], r["lw"]) for r in rows(boxes)}
    assert shown == {
        "x\n2\ngrad ?": ("#9ca3af", 1.2),
        "const\n3": ("#d1d5db", 1.2),
        "mul\n6\ngrad 1": (plot.PALETTE["derivative"], 2.2),
    }  # the current node is orange
    links = rows(rules)
    assert len(links) == 2 and sorted(r["times"] for r in links) == ["", "×2"]  # a repeated edge drawn once
    for r, box in ((r, b) for r in links for b in rows(boxes) if b["text"].startswith("mul")):
        assert r["x"] < r["x2"] < box["x"]  # arrows point right and stop short of the box they enter


def _table(html):
    """(text per cell, fill per cell) of an html_grid: its <td> cells and their CSS classes."""
    fills = dict(re.findall(r"\.(g\d+)\{background:(#[0-9a-f]{6})", html))
    cells = re.findall(r"<td class=(g\d+)>([^<]*)</td>", html)
    return [t for _, t in cells], [fills[c] for c, _ in cells]


def test_html_tables_write_each_value_in_its_colour():
    """05's grids are HTML tables (issue 16): the numbers written are the values, and the colours
    say what the prose says (red positive, blue negative; the course's kind colours)."""
    text, fills = _table(plot.value_table(np.array([[-2.0, 0.0], [1.0, 2.0]]), "k").text)
    assert text == ["-2.00", "0.00", "1.00", "2.00"]
    rgb = [tuple(int(f[i : i + 2], 16) for i in (1, 3, 5)) for f in fills]
    assert rgb[0][2] > rgb[0][0] and rgb[3][0] > rgb[3][2] and rgb[1][0] == max(rgb[1])  # blue, red, white-ish
    kind = np.array([["tap", "padding"], ["input", "selected"]], dtype=object)
    text, fills = _table(plot.cell_table(kind, np.array([["1", ""], ["2", "3"]], dtype=object), title="t").text)
    assert text == ["1", "", "2", "3"]
    assert fills == [plot.color(plot.GRID_COLORS[k]) for k in kind.ravel()]


def test_tile_images_lays_images_out_row_by_row():
    images = np.arange(5 * 2 * 3, dtype=float).reshape(5, 2, 3)
    out = plot.tile_images(images, ncols=3, gap=1, fill=-1.0)
    assert out.shape == (2 * 2 + 1, 3 * 3 + 2)
    np.testing.assert_array_equal(out[0:2, 0:3], images[0])
    np.testing.assert_array_equal(out[0:2, 4:7], images[1])
    np.testing.assert_array_equal(out[3:5, 4:7], images[4])  # second row, second column
    assert (out[2] == -1).all() and (out[:, 3] == -1).all() and (out[3:5, 8:11] == -1).all()  # gaps, empty slot
    with pytest.raises(ValueError, match="tile_images"):
        plot.tile_images(np.zeros((4, 4)))


def test_grey_png_is_the_image_a_png_reader_reads():
    import io

    from PIL import Image  # an independent PNG decoder

    x = np.random.default_rng(0).random((3, 5))
    x[0, 0], x[1, 1] = -0.5, 1.5  # clipped to black and white
    png = plot.grey_png(x, scale=4)
    back = np.asarray(Image.open(io.BytesIO(png)), np.float64) / 255
    assert back.shape == (12, 20)  # grey, one value per pixel, each pixel a 4x4 block
    expected = np.round(np.clip(x, 0, 1) * 255) / 255
    np.testing.assert_allclose(back[::4, ::4], expected, atol=1e-6)
    np.testing.assert_array_equal(back[::4, ::4], back[3::4, 3::4])
    with pytest.raises(ValueError, match="grey_png"):
        plot.grey_png(np.zeros(4))


def test_png_writes_grey_grey_alpha_rgb_and_rgba_pixels_a_png_reader_reads_back():
    import io

    from PIL import Image  # an independent PNG decoder

    rng = np.random.default_rng(1)
    for shape, mode in (((3, 5), "L"), ((3, 5, 2), "LA"), ((3, 5, 3), "RGB"), ((3, 5, 4), "RGBA")):
        pixels = rng.integers(0, 256, shape, dtype=np.uint8)
        back = Image.open(io.BytesIO(plot.png(pixels)))
        assert back.mode == mode
        np.testing.assert_array_equal(np.asarray(back), pixels)
    with pytest.raises(ValueError, match=r"png: expected uint8 pixels .* float64 \(2, 2\)"):
        plot.png(np.zeros((2, 2)))


def test_colour_maps_are_matplotlibs_and_an_unknown_one_is_refused_by_name():
    from matplotlib import colormaps as mpl
    from PIL import Image

    values = np.array([[-2.0, 0.0], [1.0, 2.0]])
    _, fills = _table(plot.value_table(values, "k", cmap="Purples").text)
    expected = mpl["Purples"]((values.ravel() + 2) / 4, bytes=True)
    assert fills == [f"#{r:02x}{g:02x}{b:02x}" for r, g, b, _ in expected]
    tiles = plot.image_tiles({"a": np.array([[0.0, 1.0]])}, cmaps={"a": "viridis"}).text
    png = base64.b64decode(re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", tiles).group(1))
    np.testing.assert_array_equal(
        np.asarray(Image.open(io.BytesIO(png))), mpl["viridis"](np.array([[0.0, 1.0]]), bytes=True)
    )
    with pytest.raises(ValueError, match="plot.value_table: unknown colour map 'nope'"):
        plot.value_table(np.eye(2), "t", cmap="nope")
    with pytest.raises(ValueError, match="plot.image_tiles: unknown colour map 'nope'"):
        plot.image_tiles({"a": np.eye(2)}, cmaps={"a": "nope"})


def test_every_colour_map_a_page_names_is_matplotlibs():
    """Every ``cmap=`` / ``cmaps=`` argument in the pages and the course layer names its maps as
    string constants (a dict of them for ``cmaps``), and Matplotlib has every one; anything else (a
    variable, a comprehension) fails here, since only a constant can be checked before a page runs."""
    import ast
    from pathlib import Path

    from matplotlib import colormaps as mpl

    root = Path(__file__).resolve().parents[2]
    named, unreadable = set(), []
    for path in (p for folder in ("notebooks", "cheatsheets", "engine/course") for p in (root / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for keyword in getattr(node, "keywords", []) if isinstance(node, ast.Call) else []:
                if keyword.arg not in ("cmap", "cmaps"):
                    continue
                value = keyword.value
                maps = value.values if keyword.arg == "cmaps" and isinstance(value, ast.Dict) else [value]
                for m in maps:
                    if isinstance(m, ast.Constant) and isinstance(m.value, str):
                        named.add(m.value)
                    elif not (isinstance(m, ast.Constant) and m.value is None):
                        unreadable.append(f"{path.relative_to(root)}:{m.lineno}")
    assert not unreadable, f"colour maps not named by a string constant: {unreadable}"
    assert named and all(name in mpl for name in named), [n for n in named if n not in mpl]


def test_remember_keeps_the_newest_entries_and_tolerates_a_missing_oldest():
    cache = {}
    for k in range(5):
        assert plot.remember(cache, k, k * 10, size=3) == k * 10
    assert list(cache) == [2, 3, 4]
    plot.remember(cache, 3, 99, size=3)  # a key already held is replaced, nothing forgotten
    assert cache == {2: 20, 3: 99, 4: 40}
