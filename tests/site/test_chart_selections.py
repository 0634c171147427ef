"""The charts that are controls (issue 23), driven in Chromium under `marimo run`: a click on a
chart (or a drag across it) changes the output its named selection drives.

Each case names the page, the selection (found in the chart's spec, which marimo keeps on its
``marimo-vega`` element), the gesture (a click at a point of the chart, or a drag between two,
as fractions of the chart's box; for a scatter, clicks near its centre until one hits a mark) and
the text of the output that the selection drives (a phrase or a pattern): it must change.
"""

from __future__ import annotations

import re

import pytest
from browser_tools import (
    assert_no_errors,
    run_started,
    wait_idle_after,
    wait_settled,
)

from engine.course import toc

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CASES = [  # page, selection name, gesture: one point (a click) or two (a drag), output phrase
    ("03_backprop", "epoch_zoom", [(0.2, 0.5), (0.45, 0.5)], "the training loss went from"),
    ("05_convolution", "cell_pick", [(0.5, 0.45)], re.compile(r"held-out \d+s (misread|read correctly) as")),
    ("06_attention", "query_pick", [(0.5, 0.3)], "gives its largest weight"),
    (
        "08_vae",
        "code_pick",
        None,
        re.compile(r"Held-out digit \d+ \(#\d+\)"),
    ),  # clicks near the centre until one hits a code
]


# `gallery` and `browser_page`: tests/site/conftest.py, shared with test_browser.py.


def _output_text(page, phrase: str) -> str:
    found = page.get_by_text(phrase).first
    found.wait_for(timeout=60_000)
    return found.inner_text()


@pytest.mark.parametrize("nb, selection, gesture, phrase", CASES, ids=[c[0] for c in CASES])
def test_a_gesture_on_a_chart_changes_the_output_its_selection_drives(
    nb, selection, gesture, phrase, gallery, browser_page
):
    page = browser_page
    page.page_errors.clear()
    page.goto(gallery["base"] + toc.link(nb, mode="server"), wait_until="domcontentloaded")
    wait_idle_after(page, 0, 180_000, f"{nb}: first run")
    wait_settled(page)
    chart = page.locator(f"marimo-vega[data-spec*='\"{selection}\"'] .vega-embed").first
    chart.scroll_into_view_if_needed()
    before = _output_text(page, phrase)
    box = chart.bounding_box()
    assert box and box["height"] > 0, f"{nb}: the chart of {selection!r} is not drawn"
    candidates = (
        [gesture]
        if gesture
        else [[(0.5 + dx, 0.45 + dy)] for dy in (0, 0.04, -0.04, 0.08) for dx in (0, 0.03, -0.03, 0.06, -0.06)]
    )
    for points in candidates:
        completed = page.evaluate("() => __mw.completed")
        (x0, y0), *rest = [(box["x"] + fx * box["width"], box["y"] + fy * box["height"]) for fx, fy in points]
        page.mouse.move(x0, y0)
        if rest:
            page.mouse.down()
            page.mouse.move(*rest[0], steps=8)
            page.mouse.up()
        else:
            page.mouse.click(x0, y0)
        if not run_started(page, completed, timeout_ms=10_000):
            continue  # a click between the marks selects nothing
        wait_idle_after(page, completed, 120_000, f"{nb}: after the gesture on {selection!r}")
        assert_no_errors(page, gallery["log"], f"{nb} after the gesture on {selection!r}")
        wait_settled(page)
        after = _output_text(page, phrase)
        if after != before:
            return
    pytest.fail(f"{nb}: no gesture on {selection!r} changed {before!r}")
