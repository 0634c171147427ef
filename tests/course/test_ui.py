"""engine.course.ui: the verdict callout, the throttled progress callback, the page header and the
live panel the pages share."""

import pytest

from engine.course import toc
from engine.course.exercises import check_number
from engine.course.ui import VERDICT_KINDS, page_header, throttled, try_it, verdict


class CountingBar:
    def __init__(self):
        self.updates = []

    def update(self, increment=1):
        self.updates.append(increment)


@pytest.mark.parametrize("total", [1, 7, 99, 100, 101, 250, 8000])
def test_throttled_moves_the_bar_to_exactly_total_in_fewer_than_200_updates(total):
    bar = CountingBar()
    tick = throttled(bar, total)
    for step in range(1, total + 1):
        tick(step, 0.5)  # callers may pass the loss too
    assert sum(bar.updates) == total
    assert len(bar.updates) <= min(total, 200)  # steps of ⌊total/100⌋, plus one remainder


@pytest.mark.parametrize("answer, ok", [("12", True), ("11", False), ("", None)])
def test_verdict_colours_each_outcome(answer, ok):
    result = check_number(answer, 12, hint="count the placements")
    assert result[0] is ok
    callout = verdict(result)
    assert VERDICT_KINDS[ok] in callout.text
    assert result[1].split(":")[0] in callout.text


def test_page_header_shows_the_title_then_the_introduction_then_the_navigation():
    meta = toc.metadata("loss_functions")
    page = page_header(
        meta,
        r"""
        Losses by task, with $\partial L / \partial \hat y$.
        """,
    ).text
    title, intro = page.index(meta["name"]), page.index("Losses by task")
    hub_link = page.index(toc.link(toc.HUB_ID, from_id="loss_functions"))
    assert "<h1" in page[:title] and title < intro < hub_link
    assert r"\partial L / \partial \hat y" in page and r"\\partial" not in page  # one backslash reaches KaTeX


def test_try_it_puts_each_row_of_controls_between_the_caption_and_the_output():
    import marimo as mo

    left, right, below = (mo.ui.slider(0, 9, value=v, label=f"knob {v}") for v in (1, 2, 3))
    one_row = try_it("**Caption.**", [left, right], mo.md("the chart")).text
    assert one_row.index("Caption") < one_row.index("knob 1") < one_row.index("knob 2") < one_row.index("the chart")
    two_rows = try_it("**Caption.**", [[left, right], [below]], mo.md("the chart")).text
    assert (one_row.count("flex-direction: row"), two_rows.count("flex-direction: row")) == (1, 2)
    assert two_rows.index("knob 2") < two_rows.index("knob 3") < two_rows.index("the chart")


def test_cached_md_converts_each_text_once():
    from engine.course.ui import cached_md

    table = "| a | b |\n|---|---|\n| $x^2$ | `np.exp(x)` |"
    first = cached_md(table)
    assert cached_md(table) is first  # the second call converts nothing
    assert "<table" in first.text and "marimo-tex" in first.text
    assert cached_md(table + "\n| 1 | 2 |") is not first


def test_chart_shows_an_altair_chart_unvalidated_and_chart_control_reads_its_named_selections():
    import altair as alt
    import marimo as mo
    import numpy as np

    from engine.course import plot, ui

    base = alt.Chart(plot.data(token=np.array(["a", "b"], dtype=object), w=np.array([0.25, 0.75])))
    pick = alt.selection_point(name="token_pick", fields=["token"])
    brush = alt.selection_interval(name="zoom", encodings=["x"])
    bars = base.mark_bar().encode(alt.X("token:N"), alt.Y("w:Q"))
    shown = ui.chart(bars)
    assert isinstance(shown, mo.ui.altair_chart) and "vega" in mo.as_html(shown).text
    assert shown.to_dict(validate=False) == bars.to_dict(validate=False)  # the chart as built
    element = ui.chart_control(base.mark_bar().encode(alt.X("w:Q"), alt.Y("token:N")).add_params(pick, brush))
    assert element.test_values == []  # tests/support/notebook_driver.py drives it at its default
    assert ui.selected(element, "token_pick", "token", default=["a"]) == ["a"]
    element._update({"token_pick": {"token": ["b"]}, "zoom": {"w": [0.1, 0.5]}})  # as the page sends a click
    assert ui.selected(element, "token_pick", "token") == ["b"]
    assert ui.selected(element, "zoom", "w") == [0.1, 0.5]
    assert ui.selected(element, "zoom", "other") is None


def test_a_chart_shown_again_is_not_converted_again_and_gives_marimo_s_own_element():
    """ui.chart remembers each chart object's spec: shown again, the element is marimo's own (the
    same HTML as ``mo.ui.altair_chart`` gives, but for the element's ids) without a second
    ``to_dict``; another chart object is converted for itself, and a spec goes with its chart."""
    import gc
    import re
    from unittest import mock

    import altair as alt
    import marimo as mo
    import numpy as np

    from engine.course import plot, ui

    def html(element):
        return re.sub(r"(object-id|random-id)='[^']*'", "", element.text)

    base = alt.Chart(plot.data(x=np.linspace(0, 1, 5), y=np.arange(5.0)))
    chart = alt.layer(base.mark_line().encode(x="x:Q", y="y:Q"), base.mark_point().encode(x="x:Q", y="y:Q"))
    first = ui.chart(chart)
    with mock.patch.object(type(chart), "to_dict", side_effect=AssertionError("converted again")):
        again = ui.chart(chart)
    marimo_own = mo.ui.altair_chart(chart, chart_selection=False, legend_selection=False)
    assert html(again) == html(first) == html(marimo_own)
    assert again._chart is chart and again.dataframe == marimo_own.dataframe
    other = chart.properties(title="another chart")
    assert "another chart" in html(ui.chart(other))
    remembered = ui._shown_chart_class()
    assert isinstance(again, mo.ui.altair_chart) and isinstance(again, remembered)
    specs = next(c.cell_contents for c in remembered.__init__.__closure__ if isinstance(c.cell_contents, dict))
    held = len(specs)
    ui.chart(alt.Chart("points.csv").mark_point().encode(x="x:Q"))  # data from a file: never remembered
    assert len(specs) == held
    images = alt.Chart(plot.data(x=np.arange(2.0), u=np.array(["a.png", "b.png"]))).mark_image()
    images = images.encode(x="x:Q", url="u:N")  # a "url" channel is no file of marimo's: remembered
    ui.chart(images)
    assert len(specs) == held + 1
    del other, chart, first, again, marimo_own, images
    gc.collect()
    assert len(specs) <= held - 2  # the three charts' specs went with them (held counted two of them)


def test_chart_hands_a_spec_json_cannot_carry_to_marimo_s_chart_element():
    """NaN in a spec (a scale's domain, say) is no JSON: marimo's element writes it as null."""
    import altair as alt
    import marimo as mo
    import numpy as np

    from engine.course import plot, ui

    chart = (
        alt.Chart(plot.data(x=np.array([0.0, 1.0])))
        .mark_tick()
        .encode(alt.X("x:Q", scale=alt.Scale(domain=[0.0, float("nan")])))
    )
    shown = ui.chart(chart)
    assert isinstance(shown, mo.ui.altair_chart) and "vega" in mo.as_html(shown).text


def test_once_a_chart_is_shown_altair_builds_without_its_checks():
    """ui.chart turns Altair's build-time schema checks off for the process (the tests validate
    every page's charts in full instead): a misspelt mark property is then caught when the chart is
    converted with validation, not when it is built."""
    import altair as alt
    from altair.utils import schemapi

    from engine.course import plot, ui

    ui.chart(alt.Chart(plot.data(x=[0.0, 1.0])).mark_point().encode(alt.X("x:Q")))
    assert schemapi.DEBUG_MODE is False
    chart = alt.Chart(plot.data(x=[0.0])).mark_point(sizee=3).encode(alt.X("x:Q"))  # builds
    with pytest.raises(Exception):
        chart.to_dict(validate=True)
    alt.Chart(plot.data(x=[0.0])).mark_point(size=3).encode(alt.X("x:Q")).to_dict(validate=True)
    with schemapi.debug_mode(True), pytest.raises(Exception):  # Altair's default: caught as it is built
        alt.Chart(plot.data(x=[0.0])).mark_point(sizee=3)


def test_altair_builds_string_encodings_from_one_schema_table_and_the_same_spec():
    """plot.build_fast keeps one schema-to-class table for Altair's from_dict (Altair 6 hashed all
    ~570 schemas again for every string channel): the specs are the same as Altair's own, and ten
    string channels hash a handful of schemas, not thousands."""
    from unittest import mock

    import altair as alt
    from altair.utils import schemapi

    from engine.course import plot

    plot.build_fast()
    patched = schemapi.SchemaBase.__dict__["from_dict"]
    assert patched._course

    def charts():
        base = alt.Chart(plot.data(x=[0.0, 1.0], y=[1.0, 2.0], s=["a", "b"]))
        yield base.mark_line().encode(x="x:Q", y=alt.Y("mean(y):Q", title="mean"), color="s:N")
        yield base.mark_point().encode(x="x:O", y="y:Q", tooltip=["x:Q", "y:Q", "s:N"], opacity=alt.value(0.5))
        yield base.mark_bar().encode(x=alt.X("x:Q", bin=True), y="count():Q", column="s:N")
        yield alt.layer(base.mark_rule().encode(x=alt.datum(0.5)), base.mark_text().encode(text="s:N", x="x:Q"))

    ours = [c.to_dict() for c in charts()]
    with mock.patch.object(schemapi.SchemaBase, "from_dict", patched._original):
        theirs = [c.to_dict() for c in charts()]
    assert ours == theirs
    hashed = []
    original_hash = schemapi._FromDict.hash_schema.__func__

    def counting(cls, schema, use_json=True):
        hashed.append(1)
        return original_hash(cls, schema, use_json)

    with mock.patch.object(schemapi._FromDict, "hash_schema", classmethod(counting)):
        for _ in range(2):
            alt.Chart(plot.data(x=[0.0])).mark_point().encode(x="x:Q", y="x:Q", color="x:N", size="x:Q", shape="x:N")
    assert len(hashed) < 100, len(hashed)  # Altair alone: about 570 per channel (2,840 for these five)


def test_build_fast_keeps_altair_s_own_from_dict_when_its_private_class_changes():
    """The schema table is built from a private class of Altair's; if a release changes it so that
    the shortcut fails, charts still build through Altair's own from_dict."""
    from unittest import mock

    import altair as alt
    from altair.utils import schemapi

    from engine.course import plot

    plot.build_fast()
    original = schemapi.SchemaBase.__dict__["from_dict"]._original

    class Changed:  # a _FromDict whose constructor takes other arguments
        def __init__(self):
            pass

    with mock.patch.object(schemapi.SchemaBase, "from_dict", original):
        with mock.patch.object(schemapi, "_FromDict", Changed):
            plot.build_fast.__wrapped__()
        assert schemapi.SchemaBase.__dict__["from_dict"] is original  # the shortcut was taken back
        assert alt.Chart(plot.data(x=[0.0])).mark_point().encode(x="x:Q").to_dict()["encoding"]["x"]["field"] == "x"


def test_answer_boxes_and_exercise_list_grade_each_exercise_of_a_section_in_order():
    from engine.course import exercises, ui

    section = {
        "count": exercises.NumberExercise(question="**1.** Placements?", truth=12, hint="count them", label="n ="),
        "fate": exercises.ChoiceExercise(
            question="**2.** The gradient…",
            options={"vanishes": "vanish", "explodes": "explode"},
            truth="vanish",
            hint="σ′ ≤ ¼",
        ),
    }
    boxes = ui.answer_boxes(section)
    assert type(boxes).__name__ == "dictionary" and list(boxes.elements) == ["count", "fate"]
    assert type(boxes["count"]).__name__ == "text" and type(boxes["fate"]).__name__ == "radio"
    assert "your answer" in boxes["count"].text and "n =" in boxes["count"].text  # the exercise's own
    shown = ui.exercise_list("## Check yourself", section, boxes).text
    assert shown.index("Check yourself") < shown.index("Placements") < shown.index("The gradient")
    assert shown.count(VERDICT_KINDS[None]) == 2  # no answer yet, each

    class Answered:  # the dictionary as a test drives it: its value set, its elements shown
        value = {"count": "12", "fate": "explode"}
        elements = boxes.elements

    graded = ui.exercise_list("## Check yourself", section, Answered()).text
    assert "Right: 12." in graded and "Not this one. Hint: σ′ ≤ ¼" in graded


def test_chart_row_shows_charts_side_by_side_in_equal_columns():
    import altair as alt
    import numpy as np

    from engine.course import plot, ui

    left, right = (alt.Chart(plot.data(x=np.arange(3.0), y=np.arange(3.0) * k)).mark_line() for k in (1, 2))
    row = ui.chart_row(left, right).text
    assert row.count("<marimo-vega") == 2 and "flex-direction: row" in row
    assert row.count("flex: 1") >= 2  # one equal column each
