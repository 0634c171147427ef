"""Every chart a page shows is valid Vega-Lite: Altair validates it against its schema here, once,
so that the pages need not validate again at every slider move (issue 23).

Each page and cheat sheet runs at its defaults; every Altair chart it serialises (inside a stack,
a panel or ``mo.ui.altair_chart``) or leaves as a cell's output is validated by ``to_dict()``.
"""

from __future__ import annotations

import altair as alt
import pytest
from notebook_driver import ROOT, load_app, notebook_path, run_app

from engine.course import toc

PAGES = [notebook_path(e.id) for e in toc.notebooks()] + [e.path for e in toc.cheatsheets()]


@pytest.fixture
def validated_charts(monkeypatch):
    """Every top-level chart serialised while the fixture is active, each validated: a list of
    ``(chart type, error or None)``."""
    seen = []
    to_dict = alt.TopLevelMixin.to_dict

    def validating(self, *args, validate=True, context=None, **kwargs):
        if (context or {}).get("top_level", True):
            try:
                to_dict(self, *args, validate=True, context=dict(context or {}), **kwargs)
                seen.append((type(self).__name__, None))
            except Exception as error:  # noqa: BLE001 - reported by the test
                seen.append((type(self).__name__, error))
        return to_dict(self, *args, validate=validate, context=context, **kwargs)

    monkeypatch.setattr(alt.TopLevelMixin, "to_dict", validating)
    return seen


@pytest.mark.parametrize("page", PAGES)
def test_every_chart_a_page_shows_is_valid_vega_lite(page, validated_charts):
    import marimo as mo

    outputs, _ = run_app(load_app(page))
    for output in outputs:
        if isinstance(output, alt.TopLevelMixin):
            mo.as_html(output)  # as the page shows it
    draws = any(call in (ROOT / page).read_text(encoding="utf-8") for call in ("plot.", "alt."))
    assert bool(validated_charts) == draws, f"{page}: {len(validated_charts)} charts shown"
    invalid = [(kind, str(error)[:400]) for kind, error in validated_charts if error is not None]
    assert not invalid, f"{page} shows charts that are not valid Vega-Lite: {invalid}"


def test_the_check_catches_an_invalid_chart(validated_charts):
    import marimo as mo

    mo.as_html(alt.Chart(alt.InlineData(values="x\n1")).mark_point().encode(alt.X("x:Q", scale={"type": "nope"})))
    assert validated_charts and validated_charts[-1][1] is not None
