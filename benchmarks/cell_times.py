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

    python -m benchmarks.cell_times notebooks/05_convolution.py [--top 12] [--goal 0.1] [--warm]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]


def timed_run(app):
    """Run ``app`` once with its defaults; ``{cell_id: (wall s, cpu s)}`` and the run's defs."""
    from marimo._output.formatters.formatters import register_formatters
    from marimo._output.formatting import try_format
    from marimo._runtime.executor.evaluator import Evaluator
    from notebook_driver import run_app

    register_formatters()  # as the kernel does, so formatting outputs is timed with their cell

    times: dict = {}
    original = Evaluator.evaluate_sync

    def timed(self, cell, glbls):
        wall, cpu = time.perf_counter(), time.process_time()
        result = None
        try:
            result = original(self, cell, glbls)
            if result is not None and result.exception is None:
                try_format(result.output)  # what the kernel sends: an image's PNG, a chart's JSON
            return result
        finally:
            times[cell.cell_id] = (time.perf_counter() - wall, time.process_time() - cpu)

    Evaluator.evaluate_sync = timed
    try:
        _, defs = run_app(app)
    finally:
        Evaluator.evaluate_sync = original
    return times, defs


def control_costs(app, times, defs) -> list:
    """``(name, wall s, cpu s, cells)`` per control: the cells its change re-runs, summed."""
    from marimo._ast.app import InternalApp
    from notebook_driver import controls

    graph = InternalApp(app).graph
    rows = []
    for name in controls(app):
        readers = {cid for cid, cell in graph.cells.items() if name in cell.refs}
        rerun = set(readers)
        for cid in readers:
            rerun |= graph.descendants(cid)
        wall = sum(times.get(c, (0, 0))[0] for c in rerun)
        cpu = sum(times.get(c, (0, 0))[1] for c in rerun)
        rows.append((name, wall, cpu, len(rerun)))
    return sorted(rows, key=lambda r: -r[2])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--top", type=int, default=12, help="rows of slowest cells")
    parser.add_argument("--goal", type=float, default=0.1, help="mark controls above this many CPU seconds")
    parser.add_argument("--warm", action="store_true", help="time a second run (imports already loaded)")
    args = parser.parse_args(argv)
    from marimo._ast.app import InternalApp
    from notebook_driver import load_app

    app = load_app(args.notebook)
    app._maybe_initialize()
    times, defs = timed_run(app)
    if args.warm:
        times, defs = timed_run(app)
    graph = InternalApp(app).graph
    first_line = {cid: (cell.code.strip().splitlines() or [""])[0][:70] for cid, cell in graph.cells.items()}
    wall = sum(t[0] for t in times.values())
    cpu = sum(t[1] for t in times.values())
    run = "second (warm) run" if args.warm else "at load"
    print(f"# {args.notebook}: {len(times)} cells, {wall:.2f} s wall, {cpu:.2f} s CPU, {run}")
    print("\n| cell | wall s | CPU s | first line |\n|---|---|---|---|")
    for cid, (w, c) in sorted(times.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"| {cid} | {w:.3f} | {c:.3f} | `{first_line.get(cid, '')}` |")
    print("\n| control | est. wall s | est. CPU s | cells re-run |\n|---|---|---|---|")
    for name, w, c, n in control_costs(app, times, defs):
        print(f"| {name}{' *' if c > args.goal else ''} | {w:.3f} | {c:.3f} | {n} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
