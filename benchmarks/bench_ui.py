"""UI benchmark: how fast each page of the course opens and answers, in Chromium (``make bench-ui``).

It serves the course as ``make run`` does (``marimo run notebooks cheatsheets`` on a free port of
127.0.0.1) and drives Debian's Chromium with Playwright. For every page of the table of contents,
plus an empty marimo notebook as the baseline row (one slider driving one trivial cell: its
latency is marimo's **floor**, measured in the same run), it prints

- **ready**: seconds from the start of the page's navigation until its last cell finished (the
  last ``cell-op`` message of the first run, followed by a quiet period with no cell busy), and
  **kernel**: until marimo's ``kernel-ready`` message;
- for every control (slider, range slider, dropdown, radio, number, checkbox, switch, text), the
  **latency** of one change: from the key press / click / selection to the last ``cell-op``
  message it caused (then ``--quiet-ms`` with nothing more). Each control is changed
  ``--repeats`` times, alternating directions (ArrowRight, ArrowLeft, ...: it stays within one
  step of where it started); the table gives median and worst, the number of cells that ran, and the slowest cell
  (its first line in the notebook), and the median split of a change: **kernel** (our cells' run
  times, summed, from the kernel's own time stamps on each cell-op message), **marimo** (the rest of
  the latency: the input reaching the kernel, marimo's work before and between cells, the messages'
  way to the page), within it **start** (input to the first cell running) and **send** (the last
  message's way from the kernel to the page), and **render** (after the last message, until the last
  Vega view finished redrawing: the page hooks the canvas renderer and watches SVG charts; ``-``
  when no chart redrew); a control inside a form (``.form()``: its value reaches Python only when
  the form is submitted, as training settings do) is listed but not driven;
- each button (run buttons that start training) pressed once, after the controls, timed the same
  way up to ``--button-timeout`` (``--no-buttons`` skips them);
- **editor**: the same page in ``marimo edit`` (as ``make edit``, headless, on a copy of the
  repository so nothing is saved over the working tree): seconds until every cell has run. marimo
  0.25's editor does not run cells on open unless ``runtime.auto_instantiate`` is true, so the
  benchmark presses "Run all stale cells" as soon as the kernel is ready, as a learner would.

Times come from the page's own clock (``performance.now()``, stamped when each websocket message
and each input event arrives), so Playwright's round trips are not counted. Two goals, each marked
per control, counted per page and overall: issue 16's budget (every control that does not start
training answers with median <= 0.1 s and worst <= 0.3 s, every page ready within 1 s of the empty
notebook; ``*`` misses it) and issue 29's headroom (median <= 0.05 s, or within 0.02 s of the floor
slider's median, worst <= 0.15 s, ready within 0.5 s; ``+`` meets issue 16 but misses this). The
latency the goals judge ends at the last cell-op message, as before the render column existed, so
runs stay comparable; add the render column for what a learner sees drawn. Benchmarks are not
tests: the summary marks each goal pass/fail, and the exit status is 0 unless the benchmark itself
broke.

    python -m benchmarks.bench_ui [--pages 05_convolution,derivatives] [--repeats 5]
                                  [--no-editor] [--no-buttons] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

CASES: list = []  # `make bench` collects bench_*.py modules; this one is run by `make bench-ui`

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "tests" / "support"

GOAL_MEDIAN = 0.1
GOAL_WORST = 0.3
GOAL_READY_MARGIN = 1.0
# Issue 29's headroom, so that a machine twice as slow still meets issue 16's budget: a control may
# instead be within HEADROOM_FLOOR_MARGIN of the floor (the empty notebook's slider, in the same run).
HEADROOM_MEDIAN = 0.05
HEADROOM_WORST = 0.15
HEADROOM_READY_MARGIN = 0.5
HEADROOM_FLOOR_MARGIN = 0.02

# Container elements: their children are timed as controls of their own.
CONTAINERS = {
    "dictionary",
    "array",
    "tabs",
    "table",
    "form",
    "batch",
    "accordion",
    "anywidget",
    "chat",
    "file-browser",
    "data-explorer",
    "dataframe",
    "microphone",
    "file",
}
DRIVEN = {"slider", "range-slider", "dropdown", "radio", "number", "checkbox", "switch", "text", "text-area"}

# Timestamps in the page: every cell-op message (its arrival, and the kernel's own time stamp moved
# to the page's clock), the kernel's ready message, the first input event after the benchmark "arms"
# a measurement (capture phase, so shadow DOM is no obstacle), and every redraw of a Vega view: the
# course's charts draw on a <canvas class="marks"> (Vega's canvas renderer, which ends each render
# with restore()), or into an <svg class="marks"> (its SVG renderer: a mutation under .vega-embed,
# seen by an observer on the document and on every shadow root, where marimo puts its outputs).
BENCH_HOOK = r"""
(() => {
  if (window.__bt) return;
  const bt = window.__bt = {events: [], last: -1, kernelReady: null, armT: null, t0: null, draws: []};
  const drawn = () => { const t = performance.now(); if (bt.draws.at(-1) !== t) bt.draws.push(t); };
  const proto = CanvasRenderingContext2D.prototype, restore = proto.restore;
  proto.restore = function (...args) {
    const canvas = this.canvas;
    if (canvas && canvas.classList && canvas.classList.contains('marks')) drawn();
    return restore.apply(this, args);
  };
  const observe = (root) => new MutationObserver((records) => {
    for (const r of records) {
      const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      if (el && el.closest && el.closest('.vega-embed svg')) { drawn(); return; }
    }
  }).observe(root, {subtree: true, childList: true, attributes: true, characterData: true});
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (...args) { const root = attach.apply(this, args); observe(root); return root; };
  document.addEventListener('DOMContentLoaded', () => observe(document));
  bt.arm = () => { bt.armT = performance.now(); bt.t0 = null; return bt.armT; };
  bt.closedSections = (sel) => [...document.querySelectorAll('marimo-accordion')]
    .reduce((n, a) => n + [a, a.shadowRoot].reduce((m, r) => m + (r ? r.querySelectorAll(sel).length : 0), 0), 0);
  for (const kind of ['keydown', 'pointerdown', 'mousedown', 'click', 'input', 'change']) {
    window.addEventListener(kind, () => {
      if (bt.armT !== null && bt.t0 === null) bt.t0 = performance.now();
    }, true);
  }
  const Original = window.WebSocket;
  class Timed extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        if (typeof event.data !== 'string') return;
        const t = performance.now();
        let msg;
        try { msg = JSON.parse(event.data); } catch (e) { return; }
        if (msg.op === 'kernel-ready') bt.kernelReady = t;
        else if (msg.op === 'cell-op') {
          const d = msg.data || {};
          const kernelT = typeof d.timestamp === 'number' ? d.timestamp * 1000 - performance.timeOrigin : null;
          bt.events.push([t, d.cell_id, d.status || null, kernelT]);
          bt.last = t;
        }
      });
    }
  }
  window.WebSocket = Timed;
})();
"""

# Settled: nothing busy, no cell-op and no chart redraw for `quiet` ms since `since` (a time in ms)
# saw a cell-op.
SETTLED_JS = r"""
([since, quiet, noRun]) => {
  const now = performance.now();
  if (__bt.last < since) return now - since > noRun ? 'none' : false;
  if (!window.__mw || __mw.busy() > 0 || now - __bt.last < quiet) return false;
  if (__bt.draws.length && now - __bt.draws.at(-1) < quiet) return false;
  return 'done';
}
"""

# Every UI element on the page (shadow roots included): object id, kind, label.
CONTROLS_JS = r"""
() => {
  const found = [], seen = new Set();
  const text = (html) => {
    if (!html) return '';
    let raw = html;
    try { raw = JSON.parse(html); } catch (e) {}
    const div = document.createElement('div');
    div.innerHTML = raw;
    return div.textContent.replace(/\s+/g, ' ').trim();
  };
  // whether an element sits in a marimo form (its value goes to Python only on submit), across
  // the shadow roots between them
  const inForm = (el) => {
    for (let n = el.parentNode; n; n = n.parentNode || n.host) {
      if (n.tagName === 'MARIMO-FORM') return true;
    }
    return false;
  };
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.tagName === 'MARIMO-UI-ELEMENT') {
        const id = el.getAttribute('object-id');
        const inner = [...el.children].find(c => c.tagName.startsWith('MARIMO-'));
        if (id && inner && !seen.has(id)) {
          seen.add(id);
          const kind = inner.tagName.toLowerCase().replace(/^marimo-/, '');
          let label = text(inner.getAttribute('data-label'));
          if (!label && kind === 'button') label = text(inner.getAttribute('data-label') || el.textContent);
          found.push({id, kind, label: label.slice(0, 60),
                      debounce: inner.getAttribute('data-debounce'),
                      inForm: inForm(el),
                      cell: (el.closest('[data-cell-id]') || {}).dataset?.cellId || null});
        }
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return found;
}
"""


# ----------------------------------------------------------------------------- helpers
def _support():
    if str(SUPPORT) not in sys.path:
        sys.path.insert(0, str(SUPPORT))
    import browser_tools

    return browser_tools


def _chromium(explicit: str | None) -> str:
    for candidate in (
        explicit,
        os.environ.get("CHROMIUM_PATH"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    sys.exit("bench-ui: no Chromium (apt-get install chromium, or pass --chromium / CHROMIUM_PATH)")


def _server_env() -> dict:
    env = dict(os.environ)
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # as `make run` / `make edit`
        env.setdefault(variable, "1")
    return env


EMPTY_NOTEBOOK = """import marimo

__generated_with = "0.0.0"
app = marimo.App()


@app.cell
def _():
    import marimo as mo
    return (mo,)


@app.cell
def _(mo):
    floor = mo.ui.slider(0, 10, value=5, label="floor slider")
    floor
    return (floor,)


@app.cell
def _(floor):
    floor.value
    return


if __name__ == "__main__":
    app.run()
"""


def _file_seconds(path: Path) -> float:
    """CPU seconds that marimo 0.25's own handling of one notebook file costs a page load under
    ``marimo run``, whatever its cells compute (medians of 3, in this process). Traced per load:
    the page's HTML request and the session's creation each build an ``AppFileManager`` (the file
    parsed, then every cell compiled: ``load_app``); the kernel compiles every cell once more, and
    in run mode looks up each cell's line numbers in a map built by parsing the file again, twice
    (``mutate_graph`` clears that cache once). So a load pays 3 x ``load_app`` + 1 x
    ``parse_notebook``; its parse is Python's own tokenizer run twice over each cell (marimo's
    ``fixed_dedent``), so it grows with the code's tokens, not with the prose."""
    from marimo._ast.load import load_app
    from marimo._ast.parse import parse_notebook

    text = path.read_text(encoding="utf-8")

    def median_cpu(work) -> float:
        times = []
        for _ in range(3):
            started = time.process_time()
            work()
            times.append(time.process_time() - started)
        return statistics.median(times)

    return 3 * median_cpu(lambda: load_app(str(path))) + median_cpu(lambda: parse_notebook(text))


def _cell_names(path: Path) -> dict[str, str]:
    """cell id -> 'L<line> <first code line>' (marimo numbers cells the same way on every load)."""
    try:
        from marimo._ast.load import load_app

        app = load_app(str(path))
        lines = path.read_text(encoding="utf-8").splitlines()
        names, position = {}, 0
        for data in app._cell_manager.cell_data():  # in the file's order
            first = next((line.strip() for line in data.code.splitlines() if line.strip()), "")
            number = next((i for i in range(position, len(lines)) if first and lines[i].strip() == first), None)
            if number is not None:
                position = number + 1
            names[data.cell_id] = f"L{'?' if number is None else number + 1} {first[:40]}"
        return names
    except Exception:  # a private marimo API: names are a convenience, never a failure
        return {}


def _wait_settled(page, since: float, quiet_ms: int, no_run_ms: int, timeout_ms: int) -> str:
    """'done' once cells ran after ``since`` and settled, 'none' when none ran, 'timeout'."""
    try:
        handle = page.wait_for_function(SETTLED_JS, arg=[since, quiet_ms, no_run_ms], timeout=timeout_ms, polling=50)
        return handle.json_value()
    except Exception as error:  # playwright's TimeoutError
        if "Timeout" in type(error).__name__ or "Timeout" in str(error):
            return "timeout"
        raise


def _runs_since(events: list, since: float) -> dict:
    """The cell runs among the cell-op events that arrived after ``since`` (ms, the page's clock):
    ``cells`` (how many ran), ``slowest`` and ``slowest_s`` (the longest run), ``kernel_s`` (every
    run's time summed), ``first_start`` (ms, when the first cell started) and ``last_send`` (ms, how
    long the last message took from the kernel's stamp to its arrival). Runs are timed by the
    kernel's own stamps (each event's fourth field, on the page's clock; arrival as a fallback), so
    the websocket's delivery is not counted in them."""
    started, slowest, ran, kernel, first, send = {}, (None, 0.0), set(), 0.0, None, None
    for t, cell, status, *stamp in events:
        if t < since:
            continue
        at = stamp[0] if stamp and stamp[0] is not None else t
        send = t - at
        if status == "running":
            started[cell] = at
            ran.add(cell)
            first = at if first is None else min(first, at)
        elif status in ("idle", "queued") and cell in started:
            duration = max(0.0, at - started.pop(cell)) / 1000
            kernel += duration
            if duration >= slowest[1]:
                slowest = (cell, duration)
    return {
        "cells": len(ran),
        "slowest": slowest[0],
        "slowest_s": slowest[1],
        "kernel_s": kernel,
        "first_start": first,
        "last_send": send,
    }


def _split(runs: dict, t0: float, last: float, draws: list) -> dict:
    """One change's latency (input event to the last cell-op, s) split into ``kernel`` (our cells'
    runs, summed), ``marimo`` (the rest: the input reaching the kernel, marimo's work before and
    between cells, the messages' delivery) and ``render`` (from the last cell-op until the last Vega
    view finished redrawing; None when no chart redrew). Two parts of ``marimo`` compare the kernel's
    clock with the page's (a few ms either way): ``start``, from the input to the first cell
    starting, and ``send``, the last message's way from the kernel to the page (serialising the
    output, the server, the websocket: large outputs such as charts' data show here)."""
    latency = max(0.0, (last - t0) / 1000)
    kernel = min(runs["kernel_s"], latency)
    later = [t for t in draws if t >= t0]
    return {
        "kernel": kernel,
        "marimo": latency - kernel,
        "render": max(0.0, (max(later) - last) / 1000) if later else None,
        "start": None if runs["first_start"] is None else max(0.0, (runs["first_start"] - t0) / 1000),
        "send": None if runs["last_send"] is None else max(0.0, runs["last_send"] / 1000),
    }


def _errors(page, start: int) -> list[str]:
    tools = _support()
    errors = page.evaluate(f"() => window.__mw ? __mw.errors.slice({start}) : []")
    return [f"{e['type']}: {e['msg'][:120]}" for e in errors if e["type"] not in tools.INTENTIONAL_ERRORS]


def _error_count(page) -> int:
    return page.evaluate("() => window.__mw ? __mw.errors.length : 0")


# ----------------------------------------------------------------------------- one change
TARGETS = {
    "slider": "[role=slider]",
    "range-slider": "[role=slider]",
    "number": "input",
    "dropdown": "select",
    "radio": "[role=radio], input[type=radio]",
    "checkbox": "[role=checkbox], input[type=checkbox]",
    "switch": "[role=switch]",
    "text": "input",
    "text-area": "textarea",
    "button": "button",
}


def _element(page, control: dict):
    """The control's element on the page: the first copy whose input is visible (a layout plugin
    such as ``mo.accordion`` keeps its children as markup and draws a copy of them), else the first."""
    copies = page.locator(f'marimo-ui-element[object-id="{control["id"]}"]')
    selector = TARGETS.get(control["kind"])
    if selector:
        for index in range(copies.count()):
            try:
                if copies.nth(index).locator(selector).first.is_visible():
                    return copies.nth(index)
            except Exception:
                continue
    return copies.first


def _visible(page, control: dict) -> bool:
    """Whether the control's input is on the page and visible (not in a closed tab or accordion)."""
    selector = TARGETS.get(control["kind"])
    try:
        return bool(selector) and _element(page, control).locator(selector).first.is_visible()
    except Exception:
        return False


def _unfold(page) -> int:
    """Open every closed ``mo.accordion`` section (no cell runs), so the controls folded in them are
    timed too; how many were opened."""
    closed = page.locator("marimo-accordion button[aria-expanded=false]")
    opened = 0
    for _ in range(closed.count()):
        left = closed.count()
        try:
            closed.first.scroll_into_view_if_needed(timeout=5_000)
            closed.first.click(timeout=5_000)
            page.wait_for_function(
                "([sel, n]) => document.querySelectorAll('marimo-accordion').length === 0 || "
                "__bt.closedSections(sel) < n",
                arg=["button[aria-expanded=false]", left],
                timeout=5_000,
                polling=50,
            )
            opened += 1
        except Exception:  # a section the driver cannot open: its controls show as hidden
            break
    if opened:
        page.wait_for_timeout(300)
    return opened


def _act(page, control: dict, repeat: int) -> bool:
    """Make one change to ``control`` (arming the page's clock first); False if impossible."""
    element = _element(page, control)
    kind, forward = control["kind"], repeat % 2 == 0
    if kind in ("slider", "range-slider"):
        thumb = element.locator("[role=slider]").first
        if control.get("start_left") is None:
            now, high = thumb.get_attribute("aria-valuenow"), thumb.get_attribute("aria-valuemax")
            control["start_left"] = now is not None and now == high
        key = "ArrowLeft" if forward == control["start_left"] else "ArrowRight"
        thumb.scroll_into_view_if_needed()
        thumb.focus()
        page.evaluate("() => __bt.arm()")
        thumb.press(key)
        return True
    if kind == "number":
        field = element.locator("input").first
        field.scroll_into_view_if_needed()
        field.focus()
        page.evaluate("() => __bt.arm()")
        field.press("ArrowUp" if forward else "ArrowDown")
        return True
    if kind == "dropdown":
        select = element.locator("select").first
        if control.get("values") is None:
            control["values"] = select.evaluate("s => [...s.options].map(o => o.value)")
            control["original"] = select.input_value()
        values = control["values"]
        if len(values) < 2:
            return False
        index = values.index(control["original"]) if control["original"] in values else 0
        target = values[(index + 1) % len(values)] if forward else control["original"]
        select.scroll_into_view_if_needed()
        page.evaluate("() => __bt.arm()")
        select.select_option(value=target)
        return True
    if kind == "radio":
        options = element.locator("[role=radio], input[type=radio]")
        if options.count() < 2:
            return False
        if control.get("original") is None:
            states = options.evaluate_all(
                "els => els.map(e => e.getAttribute('aria-checked') === 'true' || e.checked === true "
                "|| e.getAttribute('data-state') === 'checked')"
            )
            control["original"] = states.index(True) if True in states else 0
        original = control["original"]
        target = (original + 1) % options.count() if forward else original
        options.nth(target).scroll_into_view_if_needed()
        page.evaluate("() => __bt.arm()")
        options.nth(target).click()
        return True
    if kind in ("checkbox", "switch"):
        box = element.locator(f"[role={kind}], input[type=checkbox]").first
        box.scroll_into_view_if_needed()
        page.evaluate("() => __bt.arm()")
        box.click()
        return True
    if kind in ("text", "text-area"):
        field = element.locator("textarea, input").first
        if control.get("original") is None:
            control["original"] = field.input_value()
        original = control["original"]
        target = (original + " " if original else "1") if forward else (original or "2")
        field.scroll_into_view_if_needed()
        immediate = control.get("debounce") in ("false", "0")
        if immediate:
            page.evaluate("() => __bt.arm()")
        field.fill(target)
        if not immediate:
            page.evaluate("() => __bt.arm()")
            field.press("Enter")
        return True
    return False


def _measure(page, args, action) -> dict:
    """Run ``action`` (which arms the clock) and time it until the cells it caused settle."""
    errors_before = _error_count(page)
    if action() is False:
        return {"state": "skipped"}
    since = page.evaluate("() => __bt.t0 ?? __bt.armT")
    state = _wait_settled(page, since, args.quiet_ms, args.no_run_ms, args.timeout * 1000)
    info = page.evaluate("() => ({t0: __bt.t0 ?? __bt.armT, last: __bt.last, events: __bt.events, draws: __bt.draws})")
    runs = _runs_since(info["events"], info["t0"])
    done = state == "done"
    latency = max(0.0, (info["last"] - info["t0"]) / 1000) if done else None
    split = _split(runs, info["t0"], info["last"], info["draws"]) if done else None
    return {
        "state": state,
        "latency": latency,
        "split": split,
        "cells": runs["cells"],
        "slowest": runs["slowest"],
        "slowest_s": runs["slowest_s"],
        "errors": _errors(page, errors_before),
    }


# ----------------------------------------------------------------------------- one page
def _open(page, url: str, args, editor: bool = False) -> dict:
    """Navigate and wait until every cell of the first run finished; times in seconds."""
    page.goto("about:blank")
    page.goto(url, wait_until="commit")
    timeout = args.timeout * 1000
    page.wait_for_function("() => window.__mw && __mw.kernelReady && window.__bt", timeout=timeout, polling=50)
    clicked = None
    if editor:
        pressed = _support().editor_run_all(page, timeout)
        clicked = None if pressed is None else pressed / 1000
    if editor and clicked is not None:
        since = clicked * 1000
        state = _wait_settled(page, since, args.quiet_ms, 10_000, timeout)
    else:
        page.wait_for_function("() => __mw.completed > 0", timeout=timeout, polling=50)
        state = _wait_settled(page, 0, args.quiet_ms, timeout, timeout)
    info = page.evaluate("() => ({last: __bt.last, kernel: __bt.kernelReady, cells: __mw.cells.length})")
    return {
        "state": state,
        "ready": info["last"] / 1000,
        "kernel": (info["kernel"] or 0) / 1000,
        "run_clicked": clicked,
        "cells": info["cells"],
    }


def _bench_page(page, base: str, entry, args, names: dict[str, str]) -> dict:
    url = base + f"?file={entry['file']}"
    loads = []
    for _ in range(max(3 if entry.get("baseline") else 1, args.loads)):
        page.page_errors.clear()
        loads.append(_open(page, url, args))
    load = loads[-1]
    result = {
        "page": entry["id"],
        "ready": statistics.median(one["ready"] for one in loads),
        "kernel": statistics.median(one["kernel"] for one in loads),
        "cells": load["cells"],
        "load_state": load["state"],
        "controls": [],
        "buttons": [],
        "errors": _errors(page, 0),
    }
    page.wait_for_timeout(300)  # the DOM follows the last message by a frame or two
    result["unfolded"] = _unfold(page)
    controls = page.evaluate(CONTROLS_JS)
    for control in controls:
        kind = control["kind"]
        if kind in CONTAINERS or kind == "button":
            continue
        label = control["label"] or f"({kind} of {names.get(control['id'].split('-')[0], control['id'])})"
        row = {
            "label": label,
            "kind": kind,
            "samples": [],
            "splits": [],
            "cells": 0,
            "slowest": None,
            "slowest_s": 0.0,
            "errors": [],
            "note": "",
        }
        if control.get("inForm"):
            row["note"] = "in a form: sent on submit (not driven)"
        elif kind not in DRIVEN:
            row["note"] = f"{kind}: not driven"
        elif not _visible(page, control):
            row["note"] = "hidden (not driven)"
        else:
            for repeat in range(args.repeats):
                try:
                    sample = _measure(page, args, lambda: _act(page, control, repeat))
                except Exception as error:  # a control the driver cannot operate: say so, go on
                    row["note"] = f"driver error: {str(error).splitlines()[0][:80]}"
                    break
                if sample["state"] == "skipped":
                    row["note"] = "cannot change (one option?)"
                    break
                if sample["state"] == "none":
                    row["note"] = f"no cell ran within {args.no_run_ms} ms"
                    continue
                if sample["state"] == "timeout":
                    row["note"] = f"still busy after {args.timeout} s"
                    break
                row["samples"].append(sample["latency"])
                row["splits"].append(sample["split"])
                row["errors"] += sample["errors"]
                if sample["cells"] >= row["cells"]:
                    row["cells"] = sample["cells"]
                if sample["slowest_s"] >= row["slowest_s"]:
                    row["slowest"], row["slowest_s"] = sample["slowest"], sample["slowest_s"]
        row["slowest"] = names.get(row["slowest"], row["slowest"])
        result["controls"].append(row)
    if not args.no_buttons and not entry.get("baseline"):
        for control in controls:
            if control["kind"] != "button" or not _visible(page, control):
                continue
            element = _element(page, control).locator("button").first

            def press(element=element):
                if element.is_disabled():
                    return False
                element.scroll_into_view_if_needed()
                page.evaluate("() => __bt.arm()")
                element.click()
                return True

            saved = args.timeout
            args.timeout = args.button_timeout
            try:
                sample = _measure(page, args, press)
            finally:
                args.timeout = saved
            label = (
                control["label"]
                or page.locator(f'marimo-ui-element[object-id="{control["id"]}"]').first.inner_text().strip()[:60]
            )
            result["buttons"].append(
                {
                    "label": label,
                    "state": sample["state"],
                    "latency": sample.get("latency"),
                    "cells": sample.get("cells", 0),
                    "slowest": names.get(sample.get("slowest"), sample.get("slowest")),
                    "slowest_s": sample.get("slowest_s", 0.0),
                    "errors": sample.get("errors", []),
                }
            )
    result["js_errors"] = list(page.page_errors)
    return result


# ----------------------------------------------------------------------------- report
def _fmt(seconds: float | None) -> str:
    return "  -  " if seconds is None else f"{seconds:5.2f}"


def _median_of(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _summarise(row: dict) -> None:
    """A control's median and worst latency and the median of each part of its split."""
    samples = row["samples"]
    row["median"] = statistics.median(samples) if samples else None
    row["worst"] = max(samples) if samples else None
    splits = row.get("splits", [])
    for part in ("kernel", "marimo", "start", "send", "render"):
        row[part] = _median_of(split[part] for split in splits if split)


def _meets(row: dict, floor: float | None) -> tuple[bool, bool]:
    """Whether a timed control meets issue 16's budget and issue 29's headroom (within
    ``HEADROOM_FLOOR_MARGIN`` of the floor slider's median counts as meeting its median)."""
    budget = row["median"] <= GOAL_MEDIAN and row["worst"] <= GOAL_WORST
    near_floor = floor is not None and row["median"] <= floor + HEADROOM_FLOOR_MARGIN
    headroom = (row["median"] <= HEADROOM_MEDIAN or near_floor) and row["worst"] <= HEADROOM_WORST
    return budget, headroom


def _mark(row: dict, floor: float | None) -> str:
    """'*' misses issue 16's budget, '+' meets it but not issue 29's headroom, ' ' meets both."""
    if row["median"] is None:
        return " "
    budget, headroom = _meets(row, floor)
    return "*" if not budget else "+" if not headroom else " "


def _print_page(result: dict, baseline: float | None, editor: dict | None, floor: float | None) -> None:
    delta = "" if baseline is None else f" ({result['ready'] - baseline:+.2f} s vs empty)"
    line = (
        f"\n## {result['page']}: ready {result['ready']:.2f} s{delta}, kernel-ready "
        f"{result['kernel']:.2f} s, {result['cells']} cells"
        + (f", {result['unfolded']} accordion sections opened" if result.get("unfolded") else "")
        + (f"; marimo's handling of the file costs {result['parse']:.2f} s CPU a load" if result.get("parse") else "")
    )
    if editor:
        edit_delta = ""
        if editor.get("baseline") is not None and editor.get("ready") is not None:
            edit_delta = f" ({editor['ready'] - editor['baseline']:+.2f} s vs empty)"
        line += f"; editor ready {_fmt(editor.get('ready')).strip()} s{edit_delta}"
    print(line)
    if result.get("load_state") != "done":
        print(f"   first run: {result.get('load_state')}")
    for problem in result.get("errors", []) + [f"JavaScript: {e}" for e in result.get("js_errors", [])]:
        print(f"   ! {problem[:160]}")
    if result["controls"]:
        print(
            f"   {'control':<34} {'kind':<9} {'median':>6} {'worst':>6} {'kernel':>6} {'marimo':>6} "
            f"{'start':>6} {'send':>6} {'render':>6} {'n':>2} {'cells':>5}  slowest cell"
        )
        for row in result["controls"]:
            slowest = f"{row['slowest_s']:.2f} s {row['slowest']}" if row["slowest"] else ""
            print(
                f" {_mark(row, floor)} {row['label'][:34]:<34} {row['kind']:<9} {_fmt(row['median']):>6} "
                f"{_fmt(row['worst']):>6} {_fmt(row['kernel']):>6} {_fmt(row['marimo']):>6} "
                f"{_fmt(row['start']):>6} {_fmt(row['send']):>6} {_fmt(row['render']):>6} {len(row['samples']):>2} {row['cells']:>5}  {slowest[:60]}"
                + (f"  [{row['note']}]" if row["note"] else "")
            )
            for error in sorted(set(row["errors"]))[:3]:
                print(f"     ! {error[:150]}")
    for button in result["buttons"]:
        state = "" if button["state"] == "done" else f"  [{button['state']}]"
        slowest = f"{button['slowest_s']:.2f} s {button['slowest']}" if button["slowest"] else ""
        print(
            f"   button {button['label'][:34]!r:<36} {_fmt(button['latency'])} s  {button['cells']} cells  "
            f"{slowest[:60]}{state}"
        )


GOALS = [  # (name, controls' rule, seconds a page may take beyond the empty notebook)
    (
        f"issue 16: median <= {GOAL_MEDIAN} s, worst <= {GOAL_WORST} s, ready <= empty + {GOAL_READY_MARGIN} s",
        0,
        GOAL_READY_MARGIN,
    ),
    (
        f"issue 29 (headroom): median <= {HEADROOM_MEDIAN} s or within {HEADROOM_FLOOR_MARGIN} s of the floor "
        f"slider, worst <= {HEADROOM_WORST} s, ready <= empty + {HEADROOM_READY_MARGIN} s",
        1,
        HEADROOM_READY_MARGIN,
    ),
]


def _print_summary(results: list[dict], baseline: dict, editors: dict, top: int, floor: float | None) -> None:
    rows = [(r["page"], c) for r in results for c in r["controls"] if c["median"] is not None]
    print("\n## Worst controls overall (by worst latency)")
    for page, row in sorted(rows, key=lambda pr: -pr[1]["worst"])[:top]:
        print(
            f"   {page:<22} {row['label'][:34]:<34} median {row['median']:.2f} s  worst {row['worst']:.2f} s  "
            f"(kernel {_fmt(row['kernel']).strip()}, marimo {_fmt(row['marimo']).strip()}, "
            f"render {_fmt(row['render']).strip()})"
        )
    _print_exceptions(rows, floor)
    broken = [(r["page"], c["label"]) for r in results for c in r["controls"] if c["errors"]]
    print(
        f"\n## Goals (floor: the empty notebook's slider, median {_fmt(floor).strip()} s; "
        "'*' above misses issue 16, '+' meets it but not issue 29)"
    )
    print(
        f"   {'page':<22} {'controls':>8} {'meet 16':>8} {'meet 29':>8} {'worst':>6} {'ready vs empty':>15}"
        f" {'16':>4} {'29':>4}"
    )
    edit_base = editors.get("_empty", {}).get("ready")
    for result in results:
        timed = [c for c in result["controls"] if c["median"] is not None]
        meets = [_meets(c, floor) for c in timed]
        extra = result["ready"] - baseline["ready"]
        worst = max((c["worst"] for c in timed), default=None)
        print(
            f"   {result['page']:<22} {len(timed):>8} {sum(m[0] for m in meets):>8} {sum(m[1] for m in meets):>8} "
            f"{_fmt(worst):>6} {extra:>+13.2f} s {'ok' if extra <= GOAL_READY_MARGIN else 'FAIL':>4} "
            f"{'ok' if extra <= HEADROOM_READY_MARGIN else 'FAIL':>4}"
        )
    for name, which, margin in GOALS:
        meeting = [pc for pc in rows if _meets(pc[1], floor)[which]]
        ready = [r for r in results if r["ready"] - baseline["ready"] <= margin]
        print(f"   {name}:")
        print(
            f"      controls {'PASS' if len(meeting) == len(rows) else 'FAIL'} ({len(meeting)}/{len(rows)}); "
            f"page ready {'PASS' if len(ready) == len(results) else 'FAIL'} ({len(ready)}/{len(results)} pages, "
            f"empty {baseline['ready']:.2f} s)",
            end="",
        )
        if editors:
            counted = {k: v for k, v in editors.items() if k != "_empty"}
            fast = [
                k
                for k, v in counted.items()
                if edit_base is not None and v.get("ready") is not None and v["ready"] - edit_base <= margin
            ]
            print(
                f"; editor ready {'PASS' if len(fast) == len(counted) else 'FAIL'} ({len(fast)}/{len(counted)}, "
                f"empty {_fmt(edit_base).strip()} s)",
                end="",
            )
        print()
    slow_editors = {k: v for k, v in editors.items() if k != "_empty" and v.get("ready") is None}
    for page, value in slow_editors.items():
        print(f"      editor {page}: not ready: {value.get('state')}")
    if broken:
        print(f"   controls whose change gave an error output: {broken}")
    errors = [r["page"] for r in results if r.get("errors") or r.get("js_errors")]
    editor_errors = [k for k, v in editors.items() if v.get("errors")]
    if errors or editor_errors:
        print(f"   error outputs on opening: marimo run {errors}, marimo edit {editor_errors}")


def _where(row: dict) -> str:
    """The largest part of a control's median split, named: what a fix has to cut."""
    kernel, marimo, start, send = (row.get(k) or 0.0 for k in ("kernel", "marimo", "start", "send"))
    between = max(0.0, marimo - start - send)
    parts = {
        "our cells (kernel)": kernel,
        "marimo before the first cell (start)": start,
        "marimo between cells": between,
        "the last message's way to the page (send)": send,
    }
    name, seconds = max(parts.items(), key=lambda item: item[1])
    return f"{name} {seconds:.2f} s"


def _print_exceptions(rows: list[tuple[str, dict]], floor: float | None) -> None:
    """Every control that misses a goal, with its split and its largest part (issue 29 asks each
    exception to be named with where its time goes)."""
    missing = [(page, row) for page, row in rows if not all(_meets(row, floor))]
    if not missing:
        return
    print("\n## Controls missing a goal, with their median split ('*' misses issue 16, '+' only issue 29)")
    print(
        f"   {'page':<16} {'control':<34} {'median':>6} {'worst':>6} {'kernel':>6} {'start':>6} {'send':>6}"
        f" {'render':>6}  largest part; slowest cell"
    )
    for page, row in sorted(missing, key=lambda pr: (pr[0], -pr[1]["worst"])):
        slowest = f"; {row['slowest'][:50]}" if row.get("slowest") else ""
        print(
            f" {_mark(row, floor)} {page[:16]:<16} {row['label'][:34]:<34} {_fmt(row['median']):>6} "
            f"{_fmt(row['worst']):>6} {_fmt(row['kernel']):>6} {_fmt(row['start']):>6} {_fmt(row['send']):>6} "
            f"{_fmt(row['render']):>6}  {_where(row)}{slowest}"
        )


# ----------------------------------------------------------------------------- main
def _floor(baseline: dict) -> float | None:
    """The floor slider's median latency (marimo's own cost of a change that runs one trivial cell)."""
    for row in baseline["controls"]:
        _summarise(row)
    return next((row["median"] for row in baseline["controls"] if row["median"] is not None), None)


def _pages(selection: str | None) -> list[dict]:
    sys.path.insert(0, str(ROOT))
    from engine.course import toc

    entries = [{"id": e.id, "file": e.path} for e in toc.entries() if (ROOT / e.path).is_file()]
    if selection:
        wanted = [s.strip() for s in selection.split(",") if s.strip()]
        entries = [e for e in entries if any(e["id"] == w or e["id"].startswith(w) for w in wanted)]
        if not entries:
            sys.exit(f"bench-ui: no page matches --pages {selection}")
    return entries


def _new_page(browser, tools):
    context = browser.new_context(viewport=tools.VIEWPORT)
    context.add_init_script(tools.KERNEL_HOOK)
    context.add_init_script(BENCH_HOOK)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.page_errors = []
    page.on("pageerror", lambda error: page.page_errors.append(str(error)[:300]))
    return context, page


def _bench_editor(browser, tools, pages: list[dict], empty: Path, args, work: Path) -> dict:
    """Editor page-ready time of each page, on a copy of the repository (nothing saved over it)."""
    copy = work / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "__marimo__")
    for folder in ("engine", "notebooks", "cheatsheets"):
        if (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, copy / folder, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "_empty").mkdir()
    shutil.copy2(empty, copy / "_empty" / "empty.py")
    port = tools.free_port()
    command = tools.make_command("edit", port) + ["--headless", "--no-token"]
    server, base = tools.serve(command, copy, work / "edit.log", env=_server_env())
    results = {}
    try:
        context, page = _new_page(browser, tools)
        for entry in [{"id": "_empty", "file": "_empty/empty.py"}] + pages:
            started = time.monotonic()
            try:
                load = _open(page, base + f"?file={entry['file']}", args, editor=True)
                results[entry["id"]] = {
                    "ready": load["ready"] if load["state"] == "done" else None,
                    "state": load["state"],
                    "run_clicked": load["run_clicked"],
                    "errors": _errors(page, 0),
                }
            except Exception as error:
                results[entry["id"]] = {"ready": None, "state": f"error: {str(error).splitlines()[0][:100]}"}
            print(
                f"   editor {entry['id']}: {results[entry['id']]} ({time.monotonic() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
        context.close()
    finally:
        tools.stop_process_group(server)
    base_ready = results.get("_empty", {}).get("ready")
    for value in results.values():
        value["baseline"] = base_ready
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", help="comma-separated page ids or prefixes (default: every page)")
    parser.add_argument("--repeats", type=int, default=5, help="changes per control (default 5)")
    parser.add_argument(
        "--loads",
        type=int,
        default=1,
        help="page loads per page (the empty baseline: at least 3); ready is their median",
    )
    parser.add_argument("--quiet-ms", type=int, default=300, help="no cell-op for this long = settled")
    parser.add_argument(
        "--no-run-ms",
        type=int,
        default=3000,
        help="a change that starts no cell within this long counts as 'no cell ran'",
    )
    parser.add_argument("--timeout", type=float, default=180, help="seconds per page load or change")
    parser.add_argument("--button-timeout", type=float, default=180, help="seconds per button press")
    parser.add_argument("--no-buttons", action="store_true", help="do not press run buttons")
    parser.add_argument("--no-editor", action="store_true", help="skip the marimo edit page-ready times")
    parser.add_argument("--top", type=int, default=10, help="rows in 'worst controls overall'")
    parser.add_argument("--chromium", help="Chromium executable (default /usr/bin/chromium)")
    parser.add_argument("--json", type=Path, help="also write every measurement to this file")
    args = parser.parse_args(argv)

    tools = _support()
    executable = _chromium(args.chromium)
    pages = _pages(args.pages)
    import marimo
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()
    print(
        f"# bench-ui: marimo {marimo.__version__}, {len(pages)} pages, {args.repeats} changes per "
        f"control, quiet {args.quiet_ms} ms; {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {time.strftime('%Y-%m-%d %H:%M:%S')}"
    )
    if load[0] > (os.cpu_count() or 1) / 2:
        print("# warning: the machine is busy; times are inflated and noisy")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as temp:
        work = Path(temp)
        empty = work / "empty" / "empty.py"
        empty.parent.mkdir()
        empty.write_text(EMPTY_NOTEBOOK, encoding="utf-8")
        port = tools.free_port()
        command = tools.make_command("run", port) + [str(empty.parent)]
        server, base = tools.serve(command, ROOT, work / "run.log", env=_server_env())
        results, editors = [], {}
        with sync_playwright() as playwright:
            browser = tools.launch(playwright, executable)
            try:
                context, page = _new_page(browser, tools)
                # Warm the server and the OS caches once (first imports of numpy, the engine, the widgets, ...).
                _open(page, base + f"?file={pages[0]['file']}", args)
                baseline = _bench_page(
                    page,
                    base,
                    {"id": "(empty notebook)", "file": str(empty), "baseline": True},
                    args,
                    _cell_names(empty),
                )
                floor = _floor(baseline)
                _print_page(baseline, None, None, floor)
                for entry in pages:
                    t = time.monotonic()
                    result = _bench_page(page, base, entry, args, _cell_names(ROOT / entry["file"]))
                    result["seconds"] = time.monotonic() - t
                    result["parse"] = _file_seconds(ROOT / entry["file"])
                    for row in result["controls"]:
                        _summarise(row)
                    results.append(result)
                    print(f"   ({entry['id']} measured in {result['seconds']:.0f} s)", file=sys.stderr, flush=True)
                context.close()
                if not args.no_editor:
                    tools.stop_process_group(server)
                    print("# editor (marimo edit) page-ready times ...", file=sys.stderr, flush=True)
                    editors = _bench_editor(browser, tools, pages, empty, args, work)
            finally:
                browser.close()
                tools.stop_process_group(server)
        if editors:
            edit_base = editors.get("_empty", {}).get("ready")
            print(f"\n## (empty notebook) in the editor: ready {_fmt(edit_base).strip()} s")
        for result in results:
            _print_page(result, baseline["ready"], editors.get(result["page"]), floor)
        _print_summary(results, baseline, editors, args.top, floor)
    load = os.getloadavg()
    print(f"\n# done in {time.monotonic() - started:.0f} s; load average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"baseline": baseline, "floor": floor, "pages": results, "editor": editors}, indent=1, default=str
            ),
            encoding="utf-8",
        )
        print(f"# wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
