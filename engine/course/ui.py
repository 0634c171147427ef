"""The marimo pieces every notebook shares: a graded exercise's verdict and a throttled progress
callback. marimo is imported inside the functions, so ``import engine`` still needs only NumPy.
"""

from __future__ import annotations

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
