"""Where a page's load time goes inside the ``marimo run`` server: ``python -m benchmarks.profile_page NB``.

``make bench-ui`` says how long a page takes; ``benchmarks.cell_times`` times our cells in-process.
Neither sees what the server itself does per load. This samples the server with py-spy (a
sampling profiler; not a project dependency: ``.venv/bin/pip install py-spy``) while Chromium
loads the page ``--loads`` times (after one unsampled load, so imports are warm), and prints
where the samples fell, per load:

- the kernel: marimo compiling the notebook's cells, our cells by line, and the libraries under
  them (the course's plot and labs, the engine, markdown rendering);
- the server's event loop: loading the notebook file for the page and for the session (marimo
  parses and compiles the whole file each time), and sending messages.

What it showed (marimo 0.25.2, this 2-core machine): marimo compiles a notebook's cells three
times per page load (twice in the server, once in the kernel; the kernel also parses the file twice
for line numbers), about 0.38 s a load for 08_vae (42 kB, 62 cells),
which is most of what a page costs beyond an empty notebook; the first profile of 02_losses also
showed Altair (0.2 s a load) and marimo's per-cell Matplotlib clean-up, both gone since.

    python -m benchmarks.profile_page notebooks/08_vae.py [--loads 5] [--rate 200] [--raw out.txt]
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

# A sample's share of the page: (label, a frame name that marks it), first match wins.
KERNEL_PARTS = [
    ("marimo compiles the cells", "_try_compiling_cell"),
    ("marimo renders markdown", "markdown"),
    ("course charts (plot)", "engine/course/plot"),
    ("course labs", "engine/course/labs"),
    ("engine", "/engine/"),
]
SERVER_PARTS = [
    ("load the notebook for the page", "SessionManager.app_manager"),
    ("load the notebook for the session", "SessionManager._create_session"),
    ("send messages", "WebSocket.send"),
]
IDLE = ("EpollSelector.select", "Condition.wait")


def _frames(line: str) -> tuple[list[str], int]:
    stack, _, count = line.rstrip().rpartition(" ")
    return stack.split(";"), int(count)


def summarise(raw: Path, notebook: str, loads: int, rate: int) -> str:
    """The profile's samples as seconds per load, by part of the work and by notebook line."""
    kernel, server, cells = collections.Counter(), collections.Counter(), collections.Counter()
    cell_frame = re.compile(re.escape(Path(notebook).name) + r":(\d+)\)")
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        frames, count = _frames(line)
        stack = ";".join(frames)
        if "launch_kernel" in stack:
            kernel[next((label for label, mark in KERNEL_PARTS if mark in stack), "other kernel work")] += count
            lines = cell_frame.findall(stack)
            if lines:
                cells[int(lines[0])] += count
        elif not frames[-1].startswith(IDLE):
            server[next((label for label, mark in SERVER_PARTS if mark in stack), "other server work")] += count
    per_load = 1.0 / (rate * loads)
    out = [
        f"# {notebook}: seconds per page load ({loads} loads sampled at {rate} Hz)",
        "",
        "| kernel | s | | server | s |",
        "|---|---|---|---|---|",
    ]
    left, right = kernel.most_common(), server.most_common()
    for i in range(max(len(left), len(right))):
        k = f"{left[i][0]} | {left[i][1] * per_load:.3f}" if i < len(left) else " | "
        s = f"{right[i][0]} | {right[i][1] * per_load:.3f}" if i < len(right) else " | "
        out.append(f"| {k} | | {s} |")
    out += [
        "",
        "our cells (by the line of the notebook they are at, at least 5 ms a load): "
        + ", ".join(f"L{n} {c * per_load:.3f}" for n, c in cells.most_common() if c * per_load >= 0.005),
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook")
    parser.add_argument("--loads", type=int, default=5, help="page loads sampled (default 5)")
    parser.add_argument("--rate", type=int, default=200, help="samples per second (default 200)")
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw (collapsed) stacks in this file")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if py_spy is None:
        sys.exit("profile_page: needs py-spy (.venv/bin/pip install py-spy)")

    import browser_tools as tools
    from playwright.sync_api import sync_playwright

    from benchmarks import bench_ui

    class Options:  # what bench_ui._open reads
        timeout, quiet_ms = 120, 300

    with tempfile.TemporaryDirectory(prefix="profile-page-") as temp:
        raw = args.raw or Path(temp) / "stacks.txt"
        command = tools.make_command("run", tools.free_port())  # as `make run`: every page served
        server, base = tools.serve(command, ROOT, Path(temp) / "server.log", env=bench_ui._server_env())
        url = base + f"?file={args.notebook}"
        try:
            with sync_playwright() as playwright:
                browser = tools.launch(playwright, args.chromium)
                _, page = bench_ui._new_page(browser, tools)
                bench_ui._open(page, url, Options)  # warm: imports, OS caches
                spy = subprocess.Popen(
                    [
                        py_spy,
                        "record",
                        "-p",
                        str(server.pid),
                        "--subprocesses",
                        "-r",
                        str(args.rate),
                        "-f",
                        "raw",
                        "-o",
                        str(raw),
                        "--nonblocking",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.5)  # py-spy attaches
                ready = [bench_ui._open(page, url, Options)["ready"] for _ in range(args.loads)]
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
                browser.close()
        finally:
            tools.stop_process_group(server)
        print(summarise(raw, args.notebook, args.loads, args.rate))
        print("\npage ready (s): " + ", ".join(f"{r:.2f}" for r in ready))
    return 0


if __name__ == "__main__":
    sys.exit(main())
