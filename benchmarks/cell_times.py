"""Where a notebook's time goes, in-process (no browser): ``python -m benchmarks.cell_times NB``.

Runs the notebook once with its defaults, as ``marimo run`` does when a page opens, timing each
cell and the formatting of its output (what the kernel sends to the page), and prints:

- the total (what "page ready" costs beyond marimo's own start-up) and the slowest cells;
- for every control, an estimate of its latency: the summed run time of the cells that a change
  of that control re-runs (the cells that read it, and their descendants), at the default values.

It reports CPU time (``time.process_time``) beside wall time, so the figures stay usable on a
busy machine; ``make bench-ui`` measures the real thing in Chromium. Not a test.

A module's first import (the widget packages: about 0.15 s) is charged to the cell that first needs it, and so
to every control that re-runs that cell, though a real change re-imports nothing. ``--warm`` runs
the notebook once untimed first, so the figures are what a control's change costs (the load total
then leaves out the imports that a page's first run pays).

``--profile NAME`` runs the cells that a change of the control ``NAME`` re-runs under cProfile
(on a warm run) and prints where their time goes: the functions with the most time of their own
and the most time under them, so a control's cost can be traced to a lab, a chart helper, Altair
or marimo's display of a chart (``mo.ui.altair_chart``) before anything is changed.

    python -m benchmarks.cell_times notebooks/05_convolution.py [--top 12] [--goal 0.1] [--warm]
                                    [--profile surface]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]


def timed_run(app, profile_cells=(), profiler=None):
    """Run ``app`` once with its defaults; ``{cell_id: (wall s, cpu s, output bytes)}`` and the run's
    defs. The cells in ``profile_cells`` (their run and the formatting of their output) run under
    ``profiler``. The bytes are the formatted output's, what the kernel sends to the page: a large
    output costs marimo's serialisation, the websocket and the browser on every re-run."""
    from marimo._output.formatters.formatters import register_formatters
    from marimo._output.formatting import try_format
    from marimo._runtime.executor.evaluator import Evaluator
    from notebook_driver import run_app

    register_formatters()  # as the kernel does, so formatting outputs is timed with their cell

    times: dict = {}
    original = Evaluator.evaluate_sync

    def timed(self, cell, glbls):
        wall, cpu = time.perf_counter(), time.process_time()
        result, size = None, 0
        profiled = profiler is not None and cell.cell_id in profile_cells
        if profiled:
            profiler.enable()
        try:
            result = original(self, cell, glbls)
            if result is not None and result.exception is None:
                formatted = try_format(result.output)  # what the kernel sends: an image's PNG, a chart's JSON
                size = len(formatted.data or "")
            return result
        finally:
            if profiled:
                profiler.disable()
            times[cell.cell_id] = (time.perf_counter() - wall, time.process_time() - cpu, size)

    Evaluator.evaluate_sync = timed
    try:
        _, defs = run_app(app)
    finally:
        Evaluator.evaluate_sync = original
    return times, defs


def rerun_cells(app, name: str) -> set:
    """The cells a change of the control ``name`` re-runs: those that read it, and their descendants."""
    from marimo._ast.app import InternalApp

    graph = InternalApp(app).graph
    readers = {cid for cid, cell in graph.cells.items() if name in cell.refs}
    rerun = set(readers)
    for cid in readers:
        rerun |= graph.descendants(cid)
    return rerun


def control_costs(app, times, defs) -> list:
    """``(name, wall s, cpu s, cells, output bytes)`` per control: the cells its change re-runs, summed."""
    from notebook_driver import controls

    rows = []
    for name in controls(app):
        rerun = rerun_cells(app, name)
        wall, cpu, size = (sum(times.get(c, (0, 0, 0))[k] for c in rerun) for k in range(3))
        rows.append((name, wall, cpu, len(rerun), size))
    return sorted(rows, key=lambda r: -r[2])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--top", type=int, default=12, help="rows of slowest cells")
    parser.add_argument("--goal", type=float, default=0.1, help="mark controls above this many CPU seconds")
    parser.add_argument("--warm", action="store_true", help="time a second run (imports already loaded)")
    parser.add_argument(
        "--profile",
        metavar="CONTROL",
        help="cProfile the cells a change of this control re-runs (a warm run), print the top functions",
    )
    args = parser.parse_args(argv)
    from marimo._ast.app import InternalApp
    from notebook_driver import load_app

    app = load_app(args.notebook)
    app._maybe_initialize()
    times, defs = timed_run(app)
    if args.warm or args.profile:
        times, defs = timed_run(app)
    if args.profile:
        print_profile(app, args.profile, args.top)
        return 0
    graph = InternalApp(app).graph
    first_line = {cid: (cell.code.strip().splitlines() or [""])[0][:70] for cid, cell in graph.cells.items()}
    wall = sum(t[0] for t in times.values())
    cpu = sum(t[1] for t in times.values())
    run = "second (warm) run" if args.warm else "at load"
    size = sum(t[2] for t in times.values())
    print(
        f"# {args.notebook}: {len(times)} cells, {wall:.2f} s wall, {cpu:.2f} s CPU, {size / 1024:.0f} KB output, {run}"
    )
    print("\n| cell | wall s | CPU s | KB out | first line |\n|---|---|---|---|---|")
    for cid, (w, c, b) in sorted(times.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"| {cid} | {w:.3f} | {c:.3f} | {b / 1024:.0f} | `{first_line.get(cid, '')}` |")
    print("\n| control | est. wall s | est. CPU s | cells re-run | KB out |\n|---|---|---|---|---|")
    for name, w, c, n, b in control_costs(app, times, defs):
        print(f"| {name}{' *' if c > args.goal else ''} | {w:.3f} | {c:.3f} | {n} | {b / 1024:.0f} |")
    return 0


def print_profile(app, name: str, top: int) -> None:
    """cProfile one more warm run of the cells that a change of ``name`` re-runs; print the top functions."""
    cells = rerun_cells(app, name)
    if not cells:
        sys.exit(f"cell_times: no cell reads {name!r} (a control's name, as the notebook defines it)")
    profiler = cProfile.Profile()
    times, _ = timed_run(app, profile_cells=cells, profiler=profiler)
    cpu = sum(times[c][1] for c in cells if c in times)
    print(
        f"# {name}: {len(cells)} cells re-run, {cpu * 1000:.1f} ms CPU (without the profiler's overhead: "
        "see the table without --profile)"
    )
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(top)
        body = out.getvalue()
        print(f"\n## by {order}\n" + body[body.find("   ncalls") :].rstrip())


if __name__ == "__main__":
    raise SystemExit(main())
