"""What marimo itself costs a page's load, apart from the course: ``python -m benchmarks.ready_floor``.

Issue 16 asks every page to be ready within 1 s of an empty marimo notebook, issue 29 within 0.5 s.
A course notebook is larger than the empty one in three ways: more cells, more markdown (with
KaTeX math), and charts. This benchmark builds synthetic notebooks that each grow in one of those
ways only, with nothing of the course in them (no engine, no labs), serves them with ``marimo run``
exactly as ``make bench-ui`` does, and reports each one's ready time against the empty notebook's
in the same run. Their margins are the part of a page's margin that no change to the course's
cells can remove: a notebook with as many cells, as much prose and as many charts as ours pays them
before any of our code runs.

- ``cells-N``: N code cells, each one assignment, no output;
- ``markdown-N``: N markdown cells of about 700 characters each, with inline and display math;
- ``altair-K``: K Altair line charts of 200 points each (the setup imports Altair and NumPy);
- ``imports``: a setup cell importing what every course notebook imports (Altair, NumPy,
  Matplotlib's pyplot, the engine and its course layer), and nothing else. It is also the warm-up
  load, and ``marimo run`` keeps every session in one process, so its timed loads find those
  modules imported: its margin is what a page pays for its imports once they are cached (as on
  every page after the first), not the first import.

Ready is the median of ``--loads`` loads (default 3), as in ``bench-ui``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import bench_ui

HEADER = """import marimo

__generated_with = "0.0.0"
app = marimo.App()

with app.setup:
{setup}

"""
FOOTER = """
if __name__ == "__main__":
    app.run()
"""
PROSE = (
    "The gradient of the loss with respect to the logits is the difference between the "
    "predicted probabilities and the one-hot target, $p_i - y_i$, so each step moves the "
    "logits of the wrong classes down in proportion to the probability the model gave them. "
    "With $n$ examples the mean loss divides that by $n$, and the learning rate $\\eta$ scales "
    "the step: $$\\theta \\leftarrow \\theta - \\eta \\nabla_\\theta L(\\theta).$$ A larger batch "
    "lowers the variance of the gradient estimate, not its mean."
)


def _notebook(setup: str, cells: list[str]) -> str:
    body = "\n\n".join(f"@app.cell\ndef _():\n{cell}\n    return\n" for cell in cells)
    return HEADER.format(setup=setup) + body + FOOTER


def variants(n_cells: list[int], n_charts: list[int]) -> dict[str, str]:
    """name -> notebook source."""
    out = {}
    imports = (
        "    import altair as alt\n    import marimo as mo\n    import matplotlib.pyplot as plt\n"
        "    import numpy as np\n\n    import engine\n    from engine.course import plot, ui"
    )
    out["imports"] = _notebook(imports, ["    plot, ui, alt, plt, np, engine"])
    for n in n_cells:
        out[f"cells-{n}"] = _notebook("    import marimo as mo", [f"    _x = {i}" for i in range(n)])
        out[f"markdown-{n}"] = _notebook(
            "    import marimo as mo", [f'    mo.md(r"""\n    **Paragraph {i}.** {PROSE}\n    """)' for i in range(n)]
        )
    for k in n_charts:
        charts = [
            f"    _x = np.linspace(0, {i + 1}, 200)\n"
            "    _values = [{'x': float(a), 'y': float(b)} for a, b in zip(_x, np.sin(_x))]\n"
            "    alt.Chart(alt.Data(values=_values)).mark_line().encode(x='x:Q', y='y:Q')"
            for i in range(k)
        ]
        out[f"altair-{k}"] = _notebook(
            "    import altair as alt\n    import marimo as mo\n    import numpy as np", charts
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", default="40,80", help="cell counts for cells-N and markdown-N")
    parser.add_argument("--charts", default="10,20", help="chart counts for altair-K")
    parser.add_argument("--loads", type=int, default=3, help="page loads per notebook; ready is their median")
    parser.add_argument("--timeout", type=float, default=180, help="seconds per page load")
    parser.add_argument("--quiet-ms", type=int, default=300, help="no cell-op for this long = settled")
    parser.add_argument("--chromium", help="Chromium executable (default /usr/bin/chromium)")
    args = parser.parse_args(argv)

    tools = bench_ui._support()
    executable = bench_ui._chromium(args.chromium)
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    print(
        f"# ready-floor: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}"
    )
    if load[0] > (os.cpu_count() or 1) / 2:
        print("# warning: the machine is busy; times are inflated and noisy")
    sources = {
        "empty": bench_ui.EMPTY_NOTEBOOK,
        **variants([int(n) for n in args.cells.split(",")], [int(k) for k in args.charts.split(",")]),
    }
    with tempfile.TemporaryDirectory(prefix="ready-floor-") as temp:
        folder = Path(temp) / "pages"
        folder.mkdir()
        files = {name: folder / f"{name.replace('-', '_')}.py" for name in sources}
        for name, source in sources.items():
            files[name].write_text(source, encoding="utf-8")
        server, base = tools.serve(
            tools.make_command("run", tools.free_port()) + [str(folder)],
            bench_ui.ROOT,
            Path(temp) / "run.log",
            env=bench_ui._server_env(),
        )
        ready = {}
        with sync_playwright() as playwright:
            browser = tools.launch(playwright, executable)
            try:
                _, page = bench_ui._new_page(browser, tools)
                # warm: the first load of the imports page pays the imports (marimo run keeps one process)
                bench_ui._open(page, base + f"?file={files['imports']}", args)
                for name, path in files.items():
                    ready[name] = statistics.median(
                        bench_ui._open(page, base + f"?file={path}", args)["ready"] for _ in range(args.loads)
                    )
            finally:
                browser.close()
                tools.stop_process_group(server)
    print("\n| notebook | file | ready | vs empty |\n|---|---|---|---|")
    for name, seconds in ready.items():
        size = len(sources[name].encode()) / 1000
        print(f"| {name} | {size:.0f} kB | {seconds:.2f} s | {seconds - ready['empty']:+.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
