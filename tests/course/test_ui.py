"""engine.course.ui: the verdict callout and the throttled progress callback the notebooks share."""

import pytest

from engine.course.exercises import check_number
from engine.course.ui import VERDICT_KINDS, throttled, verdict


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
