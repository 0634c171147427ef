"""Shared helpers for the tests that drive Chromium with Playwright.

- :func:`launch` starts Debian's Chromium (Playwright cannot download its own browser here).
- :data:`KERNEL_HOOK` is an init script that listens to a marimo page's websocket and keeps, in
  ``window.__mw``, each cell's status, the finished runs, error outputs, stderr and progress bars:
  the tests wait on that state, never on fixed sleeps.
- :data:`SNAPSHOT_JS` summarises what the cell outputs draw (canvas pixels, images, SVG, chart
  specs, text outside the input widgets) so a test can tell whether a control changed a chart.
- :func:`wait_idle_after`, :func:`run_started`, :func:`wait_settled` and :func:`assert_no_errors` wait
  on that state and check it.
- :class:`CdnFromPackage` answers a static export's CDN requests from the installed marimo
  package's ``_static/`` folder.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "screenshots"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}

# marimo error types that a notebook raises on purpose (mo.stop, a stopped ancestor).
INTENTIONAL_ERRORS = {"ancestor-stopped", "ancestor-prevented", "interruption"}


def launch(playwright, executable: str):
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)


@contextlib.contextmanager
def open_page(executable: str, *, kernel_hook: bool = True):
    """One Chromium page at :data:`VIEWPORT` (60 s default timeout), reused by a test module.

    ``page.page_errors`` collects its JavaScript errors and ``page.console_errors`` its console
    errors; ``kernel_hook`` installs :data:`KERNEL_HOOK` (the kernel's websocket, followed).
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, executable)
        context = browser.new_context(viewport=VIEWPORT)
        if kernel_hook:
            context.add_init_script(KERNEL_HOOK)
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.page_errors, page.console_errors = [], []
        page.on("pageerror", lambda error: page.page_errors.append(str(error)[:500]))
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text[:300]))
        try:
            yield page
        finally:
            context.close()
            browser.close()


KERNEL_HOOK = r"""
(() => {
  if (window.__mw) return;
  const mw = window.__mw = {
    status: {}, errors: [], stderr: [], progress: [], completed: 0, kernelReady: false,
    cells: [], messages: 0, lastOutput: {},
  };
  mw.busy = () => Object.values(mw.status).filter(s => s === 'queued' || s === 'running').length;
  mw.idleAfter = (n) => mw.kernelReady && mw.completed > n && mw.busy() === 0;
  const attr = (html, name) => {
    const m = html.match(new RegExp('data-' + name + "=['\"]([^'\"]*)['\"]"));
    return m ? m[1] : null;
  };
  const handle = (raw) => {
    let msg;
    try { msg = JSON.parse(raw); } catch (e) { return; }
    const d = msg.data || {};
    mw.messages++;
    if (msg.op === 'kernel-ready') { mw.kernelReady = true; mw.cells = d.cell_ids || []; }
    else if (msg.op === 'completed-run') mw.completed++;
    else if (msg.op === 'cell-op') {
      if (d.status) mw.status[d.cell_id] = d.status;
      const out = d.output;
      if (out && out.channel === 'marimo-error') {
        for (const e of (Array.isArray(out.data) ? out.data : [out.data])) {
          mw.errors.push({cell: d.cell_id, type: e && e.type,
                          msg: String((e && (e.msg || e.exception_string)) || JSON.stringify(e)).slice(0, 1000)});
        }
      }
      if (out && typeof out.data === 'string' && out.data.includes('<marimo-progress')) {
        const html = out.data.slice(out.data.indexOf('<marimo-progress'));
        const progress = Number(attr(html, 'progress')), total = Number(attr(html, 'total'));
        mw.progress.push({cell: d.cell_id, progress, total});
        mw.lastOutput[d.cell_id] = {progress, total};
      } else if (out) {
        mw.lastOutput[d.cell_id] = null;  // the bar was removed or replaced by the cell's result
      }
      const lines = d.console ? (Array.isArray(d.console) ? d.console : [d.console]) : [];
      for (const c of lines) {
        if (c && (c.channel === 'stderr' || c.channel === 'marimo-error')) {
          mw.stderr.push({cell: d.cell_id, text: String(typeof c.data === 'string' ? c.data : JSON.stringify(c.data)).slice(0, 2000)});
        }
      }
    }
  };
  const Original = window.WebSocket;
  class Hooked extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => { if (typeof event.data === 'string') handle(event.data); });
    }
  }
  window.WebSocket = Hooked;
})();
"""

SNAPSHOT_JS = r"""
() => {
  const CONTROLS = new Set(['MARIMO-SLIDER', 'MARIMO-RANGE-SLIDER', 'MARIMO-NUMBER', 'MARIMO-DROPDOWN',
    'MARIMO-RADIO', 'MARIMO-CHECKBOX', 'MARIMO-SWITCH', 'MARIMO-TEXT', 'MARIMO-TEXT-AREA',
    'MARIMO-BUTTON', 'MARIMO-MULTISELECT', 'MARIMO-DATE', 'MARIMO-CODE-EDITOR', 'MARIMO-REFRESH']);
  const hash = (s) => { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return s.length + ':' + h; };
  const areas = [];
  for (const area of document.querySelectorAll('#App .output-area')) {
    const text = [], drawn = [];
    const walk = (node, inControl) => {
      if (node.nodeType === 3) { if (!inControl && node.textContent.trim()) text.push(node.textContent.trim()); return; }
      if (node.nodeType !== 1 && node.nodeType !== 11) return;
      const tag = (node.tagName || '').toUpperCase();
      if (tag === 'STYLE' || tag === 'SCRIPT') return;
      const control = inControl || CONTROLS.has(tag);
      if (tag === 'CANVAS') { try { drawn.push('canvas ' + hash(node.toDataURL())); } catch (e) { drawn.push('canvas (unreadable)'); } }
      else if (tag === 'IMG') drawn.push('img ' + hash(node.currentSrc || node.src || ''));
      else if (tag === 'SVG') {
        if (!(node.getAttribute('class') || '').includes('lucide')) drawn.push('svg ' + hash(node.outerHTML));
        return;
      } else if (tag === 'MARIMO-MIME-RENDERER' || tag === 'MARIMO-VEGA') {
        drawn.push('spec ' + hash(node.getAttribute('data-data') || node.getAttribute('data-spec') || ''));
      }
      if (node.shadowRoot) walk(node.shadowRoot, control);
      for (const child of node.childNodes) walk(child, control);
    };
    walk(area, false);
    areas.push({id: area.id, text: text.join(' ').slice(0, 400), textHash: hash(text.join('\n')), drawn});
  }
  return areas;
}
"""


def changed_areas(before: list, after: list) -> list[str]:
    """Describe the output areas whose drawing or text differs between two snapshots."""
    old = {a["id"]: a for a in before}
    changes = []
    for area in after:
        previous = old.get(area["id"])
        if previous is None:
            if area["drawn"] or area["text"]:
                changes.append(f"{area['id']}: new output")
            continue
        if area["drawn"] != previous["drawn"]:
            changes.append(f"{area['id']}: drawing changed ({', '.join(area['drawn'][:3])})")
        elif area["textHash"] != previous["textHash"]:
            changes.append(f"{area['id']}: text changed to {area['text'][:120]!r}")
    return changes


# ----------------------------------------------------------------------------- waits and checks
def server_log_for(log_path: Path, errors) -> str:
    """Lines of the server log about these errors (run mode logs tracebacks there, not in the page)."""
    log = Path(log_path).read_text(errors="replace").splitlines() if Path(log_path).is_file() else []
    ids = [e["msg"].split(":")[-1].strip() for e in errors if "error_id" in e["msg"] or ":" in e["msg"]]
    hits = [i for i, line in enumerate(log) if any(i_d and i_d in line for i_d in ids)]
    if not hits:
        return "\n".join(log[-40:])
    return "\n".join(log[max(0, hits[0] - 2) : hits[0] + 40])


def assert_no_errors(page, log_path: Path, where: str) -> None:
    """No marimo error output (but :data:`INTENTIONAL_ERRORS`), no traceback on stderr and no
    JavaScript page error on ``page`` so far; ``log_path`` is the server's log, quoted on failure."""
    state = page.evaluate("() => ({errors: __mw.errors, stderr: __mw.stderr})")
    errors = [e for e in state["errors"] if e["type"] not in INTENTIONAL_ERRORS]
    assert not errors, f"{where}: marimo error output {errors}\nserver log:\n" + server_log_for(log_path, errors)
    tracebacks = [s for s in state["stderr"] if any(word in s["text"] for word in ("Traceback", "Error", "Exception"))]
    assert not tracebacks, f"{where}: a cell wrote an error to stderr: {tracebacks}"
    warnings = [s for s in state["stderr"] if s not in tracebacks]
    if warnings:
        import warnings as _warnings

        _warnings.warn(f"{where}: a cell wrote to stderr: {warnings}")
    assert not page.page_errors, f"{where}: JavaScript page errors {page.page_errors}"


def wait_idle_after(page, completed_before: int, timeout_ms: int, what: str) -> None:
    """Wait until the kernel has finished a run since ``completed_before`` runs and no cell is queued
    or running; on a timeout, fail with what the kernel was doing."""
    try:
        page.wait_for_function(
            f"() => window.__mw && __mw.idleAfter({completed_before})", timeout=timeout_ms, polling=100
        )
    except Exception as error:  # playwright TimeoutError: say what the kernel was doing
        state = page.evaluate(
            "() => window.__mw ? {status: __mw.status, completed: __mw.completed, ready: __mw.kernelReady} : null"
        )
        raise AssertionError(
            f"{what}: the kernel did not finish within {timeout_ms / 1000:.0f} s; state {state}"
        ) from error


def run_started(page, completed_before: int, timeout_ms: int = 30_000) -> bool:
    """Whether the kernel started (or already finished) a run since ``completed_before`` runs."""
    try:
        page.wait_for_function(
            f"() => __mw.busy() > 0 || __mw.completed > {completed_before}", timeout=timeout_ms, polling=50
        )
        return True
    except Exception:  # playwright's TimeoutError
        return False


def wait_settled(page, timeout_s: float = 20.0) -> list:
    """The :data:`SNAPSHOT_JS` snapshot once two reads 400 ms apart agree (charts finish drawing
    after the kernel is idle)."""
    deadline = time.monotonic() + timeout_s
    previous = page.evaluate(SNAPSHOT_JS)
    while time.monotonic() < deadline:
        page.wait_for_timeout(400)
        current = page.evaluate(SNAPSHOT_JS)
        if current == previous:
            return current
        previous = current
    return previous


def screenshot(page, name: str) -> Path:
    """Save a screenshot of the whole page (marimo scrolls inside #App, so grow the viewport)."""
    path = SCREENSHOTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    height = page.evaluate(
        "() => Math.max(document.documentElement.scrollHeight, "
        "...[...document.querySelectorAll('#App, #App *')].filter(e => e.scrollHeight > e.clientHeight + 4 "
        "&& getComputedStyle(e).overflowY !== 'visible').map(e => e.scrollHeight))"
    )
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height, size["height"]), 12000))})
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


class CdnFromPackage:
    """Playwright route handler: serve marimo's CDN URLs from the installed package's ``_static/``.

    A static export loads ``https://cdn.jsdelivr.net/npm/@marimo-team/frontend@<version>/dist/...``;
    the same files ship in the marimo wheel. Requests to any other host are aborted and recorded
    (the test decides whether they matter); CDN files the package lacks are recorded as missing.
    """

    def __init__(self):
        import marimo

        self.static = Path(marimo.__file__).parent / "_static"
        self.prefix = f"https://cdn.jsdelivr.net/npm/@marimo-team/frontend@{marimo.__version__}/dist/"
        self.served: list[str] = []
        self.missing: list[str] = []
        self.blocked: list[str] = []

    def __call__(self, route):
        url = route.request.url
        if url.startswith(self.prefix):
            relative = url[len(self.prefix) :].split("?")[0].split("#")[0]
            target = (self.static / relative).resolve()
            if target.is_file() and target.is_relative_to(self.static.resolve()):
                self.served.append(relative)
                kind = mimetypes.guess_type(str(target))[0] or "application/octet-stream"
                return route.fulfill(
                    status=200,
                    body=target.read_bytes(),
                    headers={"content-type": kind, "access-control-allow-origin": "*"},
                )
            self.missing.append(url)
            return route.fulfill(status=404, body="not in marimo/_static")
        if url.startswith(("file://", "data:", "blob:")):
            return route.continue_()
        self.blocked.append(url)
        return route.abort()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process_group(process) -> None:
    """Stop a server started with ``start_new_session=True`` and everything it spawned."""
    import signal
    import subprocess

    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def make_command(target: str, port: int, **variables: str) -> list[str]:
    """The marimo command line that ``make <target>`` runs (read with ``make -n``), on ``port``.

    ``target`` is ``run`` or ``edit``; ``variables`` are further make variables (``NB=...``).
    The command uses this interpreter's venv, so it matches what the tests import.
    """
    import shlex
    import subprocess
    import sys

    arguments = [
        "make",
        "-n",
        target,
        f"VENV={sys.prefix}",
        f"PORT={port}",
        *(f"{name}={value}" for name, value in variables.items()),
    ]
    result = subprocess.run(arguments, cwd=ROOT, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(arguments)} failed: {result.stderr}")
    line = next((line for line in result.stdout.splitlines() if f"marimo {target}" in line), None)
    if line is None:
        raise RuntimeError(f"`make -n {target}` runs no `marimo {target}`: {result.stdout}")
    return shlex.split(line)


def serve(command: list[str], cwd: Path, log_path: Path, timeout: float = 120.0, env: dict | None = None):
    """Start a marimo server (its own process group); return it and its base URL once it answers.

    Stop it with :func:`stop_process_group`. The server's output goes to ``log_path``.
    """
    import subprocess
    import time
    import urllib.request

    port = command[command.index("--port") + 1]
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    base = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"{command[:3]} exited: {Path(log_path).read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(base, timeout=5) as response:
                if response.status == 200:
                    return server, base
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_process_group(server)
            raise RuntimeError(f"{command[:3]} did not answer within {timeout:.0f} s")
        time.sleep(0.3)


@contextlib.contextmanager
def served(command: list[str], cwd: Path, log_path: Path, **options):
    """:func:`serve` for the length of a ``with`` block: its base URL, the server stopped after."""
    server, base = serve(command, cwd, log_path, **options)
    try:
        yield base
    finally:
        stop_process_group(server)


# marimo edit's "Run all stale cells" button (the run button outside every cell), once enabled;
# marked with data-run-all so that a locator can click it.
_RUN_ALL_JS = r"""
() => {
  const buttons = [...document.querySelectorAll('button[data-testid=run-button]')]
    .filter(b => !b.closest('[data-cell-id]') && !b.closest('.marimo-cell'));
  const button = buttons[buttons.length - 1];
  if (!button || button.disabled) return false;
  button.setAttribute('data-run-all', '');
  return true;
}
"""


def editor_run_all(page, timeout_ms: float = 60_000) -> float | None:
    """In ``marimo edit``, run every cell as a learner does on opening a notebook.

    marimo 0.25's editor runs nothing on open unless ``runtime.auto_instantiate`` is true (the
    course's pyproject.toml sets it); otherwise it offers "Run all stale cells", which this
    presses. Call after the page's ``kernel-ready`` (``__mw.kernelReady``). Returns the page clock
    (``performance.now()``, ms) at the press, or None when the editor runs the cells by itself.
    The setting is the user's configuration overridden by the project's (pyproject.toml), which
    the page receives as ``configOverrides`` in its mount config, not in ``marimo-user-config``.
    """
    config = page.evaluate(
        "() => { const c = window.__MARIMO_MOUNT_CONFIG__ || {};"
        " const runtime = k => ((c[k] || {}).runtime || {}).auto_instantiate;"
        " return [runtime('configOverrides'), runtime('config')]; }"
    )
    overridden, user = config
    if overridden if overridden is not None else user:
        return None
    page.wait_for_function(_RUN_ALL_JS, timeout=timeout_ms, polling=50)
    pressed = page.evaluate("() => performance.now()")
    page.locator("button[data-run-all]").click()
    return pressed


# ----------------------------------------------------------------------------- widgets (issue 15)
# The drawing surface of an anywidget (engine/course/widgets.py): its largest visible canvas, SVG
# or image, looked up through open shadow roots (a Slider2D and a ChartPuck draw on a canvas,
# drawdata's scatter on an SVG, Paint on a canvas under a toolbar of small SVG icons).
_SURFACE_JS = r"""
(root) => {
  let best = null, bestArea = 0;
  const visit = (node) => {
    if (!node) return;
    for (const el of node.querySelectorAll('canvas, svg, img')) {
      const box = el.getBoundingClientRect();
      if (box.width * box.height > bestArea && !(el.closest('svg') && el.closest('svg') !== el)) {
        best = el; bestArea = box.width * box.height;
      }
    }
    for (const el of node.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(root.shadowRoot); visit(root);
  return best;
}
"""


def drag_on_widget(page, widget, path, *, steps: int = 10) -> str | None:
    """Drag with the mouse along ``path`` on an anywidget's drawing surface; return the id of the
    output area that holds the widget.

    ``widget``: a Playwright ElementHandle or Locator of the widget (e.g.
    ``page.locator("marimo-anywidget").nth(0)``) or of any element around its surface.
    ``path``: two or more ``(fx, fy)`` points as fractions of the surface's box (0, 0 the top-left
    corner): press at the first, move through the others in ``steps`` mouse moves each, release
    at the last. ``[(0.5, 0.5), (0.95, 0.05)]`` drags a point from the centre to the top-right
    corner (a ChartPuck's puck must sit at the first point); ``[(0.3, 0.2), (0.3, 0.8)]`` draws
    a vertical stroke on a canvas or sprays a line of points on a scatter.

    The widget redraws itself when dragged, so a test that the *dependent* output changed compares
    :data:`SNAPSHOT_JS` snapshots taken before and after (waiting for ``__mw.idleAfter(n)``), and
    leaves the returned area out of :func:`changed_areas`' result.
    """
    if len(path) < 2:
        raise ValueError(f"drag_on_widget: a path needs at least two points, got {path!r}")
    handle = widget.element_handle() if hasattr(widget, "element_handle") else widget
    surface = handle.evaluate_handle(_SURFACE_JS).as_element()
    if surface is None:
        raise AssertionError("drag_on_widget: the widget has no canvas, SVG or image to drag on")
    surface.scroll_into_view_if_needed()
    box = surface.bounding_box()
    if not box or box["width"] < 2 or box["height"] < 2:
        raise AssertionError(f"drag_on_widget: the widget's surface is not visible ({box})")

    def at(fx, fy):
        return box["x"] + fx * (box["width"] - 1), box["y"] + fy * (box["height"] - 1)

    page.mouse.move(*at(*path[0]))
    page.mouse.down()
    for fx, fy in path[1:]:
        page.mouse.move(*at(fx, fy), steps=steps)
    page.mouse.up()
    return handle.evaluate("(el) => { const a = el.closest('.output-area'); return a ? a.id : null; }")


# ----------------------------------------------------------------------------- editing a lesson cell (issue 24)


@contextlib.contextmanager
def notebook_in_editor(executable: str, notebook: str, folder: Path, timeout_ms: float = 180_000):
    """``notebook`` opened in ``marimo edit`` (as ``make edit`` starts it, ``--headless --no-token``)
    on a copy of the course in ``folder``, so that what the editor saves never lands in the working
    tree, with every cell run: yields ``(page, server log path)``.

    The copy has the repository's pyproject.toml, which sets ``runtime.auto_instantiate``: the
    editor runs every cell on open by itself (marimo 0.25's editor otherwise waits for "Run all
    stale cells", which :func:`editor_run_all` would press). Opening and running saves nothing:
    the copy's notebooks are checked byte for byte before anything is yielded."""
    import shutil

    copy = folder / "course"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "__marimo__")
    for name in ("engine", "notebooks", "cheatsheets"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")

    def pages():
        return {
            path.relative_to(copy).as_posix(): path.read_bytes()
            for name in ("notebooks", "cheatsheets")
            for path in sorted((copy / name).rglob("*.py"))
        }

    before = pages()
    log = folder / "edit.log"
    command = make_command("edit", free_port()) + ["--headless", "--no-token"]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # as `make edit`
    with served(command, copy, log, env=env) as base, open_page(executable) as page:
        page.goto(base + f"?file={notebook}", wait_until="commit")
        page.wait_for_function("() => window.__mw && __mw.kernelReady", timeout=timeout_ms, polling=100)
        assert editor_run_all(page, timeout_ms) is None, (
            "the editor waits for 'Run all stale cells': pyproject.toml's runtime.auto_instantiate is not in effect"
        )
        page.wait_for_function(
            "() => __mw.completed > 0 && __mw.busy() === 0 && __mw.cells.every(id => __mw.status[id] === 'idle')",
            timeout=timeout_ms,
            polling=100,
        )
        after = pages()
        changed = sorted(name for name in after if after[name] != before.get(name))
        assert not changed and set(after) == set(before), (
            f"marimo edit rewrote {changed} or created {sorted(set(after) - set(before))} on open"
        )
        yield page, log


def changed_reading(page, read, before, timeout_ms: float = 60_000):
    """``read(page)`` once it differs from ``before``: the kernel's run is over when
    :func:`replace_cell_code` returns, but the browser may draw its outputs a moment later.
    Fails with both readings when nothing changes within ``timeout_ms``."""
    deadline = time.monotonic() + timeout_ms / 1000
    while (now := read(page)) == before and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert now != before, f"still {now!r} after {timeout_ms / 1000:.0f} s"
    return now


def replace_cell_code(page, notebook: str, name: str, code: str, timeout_ms: float = 180_000) -> None:
    """Type ``code`` over the code of ``notebook``'s ``@app.function`` / ``@app.class_definition``
    cell ``name`` in the editor, run it with Ctrl+Enter as a learner does, and wait until the
    cells that depend on it have run."""
    from notebook_driver import load_app

    # the editor lists the cells in the file's order: the cell's id is at its position
    names = [cell.name.lstrip("*") for cell in load_app(notebook)._cell_manager.cell_data()]  # "*block"
    position = names.index(name)
    cell = page.locator(f'[data-cell-id="{page.evaluate("() => __mw.cells")[position]}"]')
    cell.scroll_into_view_if_needed()  # the editor draws a cell's code once the cell is in view
    editor = cell.locator(".cm-content").first
    first_line = editor.inner_text().lstrip().splitlines()[0]
    assert first_line.startswith((f"def {name}(", f"class {name}")), first_line
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)
    completed = page.evaluate("() => __mw.completed")
    page.keyboard.press("Control+Enter")
    wait_idle_after(page, completed, timeout_ms, f"running the edited {name}")


def edited_cell_code(notebook: str, name: str, old: str, new: str) -> str:
    """The code of ``notebook``'s lesson cell ``name`` (an ``@app.function`` or
    ``@app.class_definition``) as the editor shows it, without its decorator, with ``old`` replaced
    by ``new``: a page's "change this cell" prompt made on the cell's current code, for
    :func:`replace_cell_code` to type. Fails when ``old`` does not stand in the cell exactly once,
    so a test whose prompt no longer fits the page says so instead of typing the cell unchanged."""
    import inspect

    from notebook_driver import load_module

    source = inspect.getsource(getattr(load_module(notebook), name))
    assert source.count(old) == 1, f"{notebook}: {name} no longer contains {old!r} once: update the test's prompt"
    return "\n".join(line for line in source.replace(old, new).splitlines() if not line.startswith("@"))


def press_and_wait(page, button, timeout_ms: float, what: str) -> None:
    """Click ``button`` (a locator, such as a run button) and wait until the cells it ran are over."""
    completed = page.evaluate("() => __mw.completed")
    button.click()
    wait_idle_after(page, completed, timeout_ms, what)


def press_run_button(page, log, outputs, name: str, done: str, timeout_ms: float, what: str) -> None:
    """Press the run button labelled ``name`` among the cells' ``outputs``, wait until the cells it
    ran are over and the text ``done`` shows, and check the page shows no error (``what`` says
    what ran, for the messages)."""
    press_and_wait(page, outputs.get_by_role("button", name=name).first, timeout_ms, what)
    outputs.get_by_text(done).first.wait_for()
    assert_no_errors(page, log, f"after {what}")


@contextlib.contextmanager
def editing(notebook: str, folder: Path, timeout_ms: float = 180_000):
    """An editor test's opening: ``notebook`` in ``marimo edit`` (:func:`notebook_in_editor`, in the
    Chromium of ``oracle.require_browser``, which skips the test without one), every cell run by
    the editor on open, nothing saved, and no error on open (no error output, no traceback on
    stderr, no cell marked as an error, no JavaScript error). Every notebook's editor test starts
    here, so this is also the check that each notebook runs in the editor. Yields ``(page, server log path, the cells' output areas)``: the areas are a
    locator for what the cells draw (the editor shows each cell's code too)."""
    from oracle import require_browser

    with notebook_in_editor(require_browser(), notebook, folder, timeout_ms) as (page, log):
        assert_no_errors(page, log, f"{Path(notebook).stem} on open")
        # The editor marks a cell whose output is an error with the class has-error.
        marked = page.locator(".marimo-cell.has-error").evaluate_all("els => els.map(e => e.dataset.cellId)")
        assert not marked, f"{Path(notebook).stem}: cells marked as errors on the page: {marked}"
        yield page, log, page.locator(".output-area")
