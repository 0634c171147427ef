"""The marimo pieces every page shares: a graded exercise with its verdict, the message for a
setting a lab refuses, a throttled progress callback, a page's header (title, introduction,
navigation) and a live panel (caption, controls, output). marimo is imported inside the functions,
so ``import engine`` still needs only NumPy.
"""

from __future__ import annotations

import functools

# One colour per outcome across the course: right, wrong (with the hint), no answer yet.
VERDICT_KINDS = {True: "success", False: "warn", None: "neutral"}


def verdict(result):
    """``(ok, message)`` from :func:`engine.course.exercises.check_number` as a marimo callout."""
    import marimo as mo

    ok, message = result
    return mo.callout(mo.md(message), kind=VERDICT_KINDS[ok])


def throttled(bar, total: int):
    """A per-step callback that moves ``bar`` in steps of ⌊total/100⌋ (100 to 200 redraws, plus a
    last remainder): redrawing the bar at every step of a long run would cost more than the step."""
    chunk = max(1, total // 100)

    def tick(step, *_):
        if step % chunk == 0:
            bar.update(increment=chunk)
        elif step == total:
            bar.update(increment=step % chunk)

    return tick


def answer_box(exercise, placeholder: str | None = None, label: str | None = None):
    """The input a learner answers ``exercise`` in: a radio for a :class:`ChoiceExercise`, a text
    box otherwise, with the exercise's own placeholder and label unless given here. Create it in
    the cell that builds the exercise (docs/notebook-convention.md)."""
    import marimo as mo

    label = getattr(exercise, "label", "") if label is None else label
    if hasattr(exercise, "options"):
        return mo.ui.radio(options=exercise.options, value=None, label=label)
    placeholder = getattr(exercise, "placeholder", "your answer") if placeholder is None else placeholder
    return mo.ui.text(placeholder=placeholder, label=label)


def answer_boxes(exercises: dict):
    """One answer box per exercise of ``exercises`` (name -> exercise), as one
    ``mo.ui.dictionary`` under the same names: a section's exercises travel to the cell that
    grades them as two names, the exercises and their boxes (see :func:`exercise_list`)."""
    import marimo as mo

    return mo.ui.dictionary({name: answer_box(e) for name, e in exercises.items()})


def exercise(exercise, box):
    """The question, the answer box and the verdict on what the learner entered."""
    return _graded(exercise, box, box.value)


def exercise_list(title: str, exercises: dict, boxes):
    """``title`` (markdown, none when empty), then each exercise of ``exercises`` with its box from
    ``boxes`` (the dictionary :func:`answer_boxes` made) and its verdict, in order."""
    import marimo as mo

    answers = boxes.value  # the dictionary's value, read once: the tests drive it as a whole
    shown = [_graded(e, boxes.elements[name], answers[name]) for name, e in exercises.items()]
    return mo.vstack([mo.md(title), *shown] if title else shown)


def _graded(exercise, box, answer):
    import marimo as mo

    return mo.vstack([mo.md(exercise.question), box, verdict(exercise.check(answer))])


def problem(error: Exception, what: str = "This setting"):
    """A setting a lab refused (its ``ValueError``) as a callout the learner can act on."""
    import marimo as mo

    return mo.callout(mo.md(f"**{what} cannot be computed.** {error}"), kind="warn")


def not_loaded(reason):
    """The one line a section shows instead of its figures when the page's code no longer fits
    the model shipped with it (``reason``: the sentence :func:`checkpoints.load_if_fits` gives,
    or the error a lab raised with it)."""
    import marimo as mo

    reason = str(reason)
    return mo.callout(mo.md(reason[:1].upper() + reason[1:] + "."), kind="info")


def page_header(metadata: dict, intro: str = ""):
    """A page's opening as one markdown block: the H1 title (``metadata["name"]``), the
    introduction ``intro`` (markdown, indented as it stands in a cell) and the navigation bar
    from the table of contents, in that order."""
    import inspect

    from engine.course import toc

    parts = [f"# {metadata['name']}", inspect.cleandoc(intro), toc.nav_md(metadata["id"])]
    return cached_md(
        "\n\n".join(part for part in parts if part)
    )  # the next visitor's page opens without converting it again


def try_it(caption: str, controls, *shown):
    """A live panel: ``caption`` (markdown), the controls in a row (a list of lists: one row
    each) and what they change below them."""
    import marimo as mo

    rows = controls if controls and isinstance(controls[0], (list, tuple)) else [controls]
    return mo.vstack([mo.md(caption), *(mo.hstack(row, justify="start", gap=2) for row in rows), *shown])


@functools.lru_cache(maxsize=256)
def cached_md(text: str):
    """``mo.md(text)``, converted once per distinct text: a page whose cells re-run on every filter
    query (the hub) shows the same sections and code blocks again and again, and converting long
    markdown (tables, highlighted code) costs milliseconds each time."""
    import marimo as mo

    return mo.md(text)


def chart(altair_chart):
    """An Altair chart as the page shows it: ``mo.ui.altair_chart`` with its selections off, which
    sends the chart without the schema validation marimo runs on a bare chart at every redraw.

    Measured with marimo 0.25.2 and Altair 6 (CPU to show, not build, 04's loss surface, 5 layers
    over a 1,600-cell grid, and a 400-point curve with dots; a busy 2-core machine, so compare the
    ratios): a bare ``alt.Chart`` as output, 36 and 15 ms (validated, serialised twice); this
    element, 15 and 7 ms (a deep copy of the chart, one conversion). A plain Vega-Lite output
    through marimo's display protocol (``_mime_``) costs the kernel less (9 and 5 ms), but the page
    renders it on a heavier path: in Chromium (``make bench-ui``) 04 was ready 3.8 s after the empty
    notebook against 1.2 s with this element, and fewer of its controls met the budget. So the page
    pays in the browser, not in the kernel, and this element stays.

    Building the chart costs about as much again (10 and 6 ms): Altair validates each schema object
    as it is built (``alt.Scale``, ``alt.InlineData``, a mark's properties), and copies every layer
    of an ``alt.layer`` each time the layered chart is built, converted or copied. So per slider
    move: build only the part that moves (keep a chart's static parts,
    ``base = alt.Chart(...).mark_line().encode(...)``, in a cell the slider does not re-run, and
    give it new data with ``base.properties(data=...)``; a helper can remember a layer that does
    not change, as :func:`engine.course.plot.surface_paths` does its grid), prefer one chart with a
    colour field over a layer per series, pass data as :func:`engine.course.plot.data` (inline
    CSV), and fewer points where the eye cannot tell: the browser redraws every mark at every
    change (bench-ui's render column). The tests validate every chart a page shows
    (tests/notebooks/test_every_chart_is_valid.py), so the page need not. Use
    :func:`chart_control` for a chart whose selections are a control.

    The first chart a process shows turns off Altair's checks while building (:func:`_build_unchecked`).

    A chart object shown again (a lab remembers its charts, so a control that does not change a
    chart's data hands the page the same object) is not converted again: its Vega-Lite spec is
    remembered for as long as the object lives (:func:`_shown_chart_class`). A 400-point line with
    dots: 7.4 ms as ``mo.ui.altair_chart``, 0.4 ms shown again. So do not change a chart in place after
    showing it; Altair's methods return a new chart anyway."""
    _build_unchecked()
    return _shown_chart_class()(altair_chart)


@functools.cache
def _shown_chart_class():
    """``mo.ui.altair_chart`` with selections off, made for the course's charts.

    marimo 0.25's element, each time it is made, checks that Altair is installed (a package
    metadata lookup), registers its data transformers, copies the chart, converts the copy to a
    Vega-Lite dict (Altair's ``to_dict``) and inspects it for selections, legends, geoshapes and
    VegaFusion. For a chart without selections only the conversion matters: this subclass converts
    the chart itself (no copy: ``to_dict`` does not change it), once per chart object, and sets
    what marimo's ``__init__`` sets, the same spec and the same element arguments. A 3-layer,
    400-point chart: 5.2 ms as marimo makes it, about 2.4 ms new and 0.2 ms shown again.
    tests/course/test_ui.py checks that both give marimo's own HTML, so a marimo upgrade that
    changes ``__init__`` fails there first."""
    import weakref

    import altair as alt
    import marimo as mo
    from marimo._plugins.ui._core.ui_element import UIElement
    from marimo._plugins.ui._impl.altair_chart import _get_binned_fields, _parse_spec
    from marimo._plugins.ui._impl.charts.altair_transformer import register_transformers

    register_transformers()
    specs: dict[int, tuple] = {}  # id(chart) -> (weak reference to the chart, its spec)

    class ShownChart(mo.ui.altair_chart):
        def __init__(self, chart):
            if not isinstance(chart, alt.TopLevelMixin):
                raise TypeError(f"ui.chart: expected an Altair chart, got {type(chart).__name__}")
            remembered = specs.get(id(chart))
            if remembered is not None and remembered[0]() is chart:
                spec = remembered[1]
            else:
                spec = _parse_spec(chart)
                if not _refers_to_files(spec):  # marimo's files for a data frame live as long as the cell run
                    key = id(chart)
                    specs[key] = (weakref.ref(chart, lambda _ref, key=key: specs.pop(key, None)), spec)
            self._chart = chart
            self.dataframe = self._get_dataframe_from_chart(chart)
            self._spec = spec
            self._binned_fields = _get_binned_fields(spec)
            UIElement.__init__(
                self,
                component_name="marimo-vega",
                initial_value={},
                label="",
                args={
                    "spec": spec,
                    "chart-selection": False,
                    "field-selection": False,
                    "embed-options": alt.renderers.options.get("embed_options") or {},
                },
                on_change=None,
            )

    return ShownChart


def _refers_to_files(spec) -> bool:
    """Whether a Vega-Lite spec loads data from a URL (marimo writes a data frame to a virtual file
    that lives as long as the cell run) in any of its layers' ``data``; inline data and named
    ``datasets`` do not. (A ``url`` elsewhere, such as an image mark's channel, is no file of marimo's.)"""
    if isinstance(spec, dict):
        data = spec.get("data")
        if isinstance(data, dict) and "url" in data:
            return True
        return any(_refers_to_files(v) for k, v in spec.items() if k != "datasets" and isinstance(v, (dict, list)))
    return any(_refers_to_files(v) for v in spec if isinstance(v, (dict, list)))


def _build_unchecked() -> None:
    """Altair's build-time checks off and its schema table kept, for the process
    (:func:`engine.course.plot.build_fast`)."""
    from engine.course import plot

    plot.build_fast()


def chart_row(*altair_charts):
    """Altair charts side by side, each shown with :func:`chart`, in columns of equal width."""
    import marimo as mo

    return mo.hstack([chart(c) for c in altair_charts], widths="equal")


def chart_control(altair_chart):
    """``mo.ui.altair_chart(altair_chart)`` for a chart whose named selections are a control: a
    cell that reads them with :func:`selected` re-runs when the learner clicks or brushes. Headless
    tests drive it at its default only (no selection: ``test_values`` is empty)."""
    import marimo as mo

    _build_unchecked()
    element = mo.ui.altair_chart(altair_chart, legend_selection=False)
    element.test_values = []
    return element


def selected(element, name: str, field: str, default=None):
    """The values of ``field`` that the selection ``name`` of ``element`` (a :func:`chart_control`)
    holds: the clicked points' values for ``alt.selection_point(name=name, fields=[field])``, the
    brushed ``[low, high]`` for ``alt.selection_interval(name=name, encodings=[field])``; ``default``
    while nothing is selected. Read from ``element.selections``, a plain dict, so no pandas is needed."""
    values = (getattr(element, "selections", None) or {}).get(name, {}).get(field)
    return list(values) if values else default
