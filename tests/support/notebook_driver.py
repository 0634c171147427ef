"""Shared helpers for notebook and cheat-sheet tests: run them headless, drive their controls.

How a test drives a control (marimo 0.25)
=========================================
``app.run(defs={...})`` *replaces* every cell that defines one of the given names: that cell does
not run, and the cells that read the name get the given object instead. So a notebook is written
so that its controls can be replaced one at a time:

1. **One control per cell, defined by name**, and nothing else computed in that cell::

       @app.cell
       def _():
           slope = mo.ui.slider(0.0, 0.5, step=0.01, value=0.1, label="slope α")
           return (slope,)

   (A cell may define several controls; :func:`run_app` then fills in the others with their
   default objects, since an overridden cell must have *all* its names supplied.)
2. **Cells read ``control.value``** (never the element's private state, and never inside the
   defining cell), and display the control from another cell or the same one.
3. **Run buttons**: a training cell starts with
   ``mo.stop(not train_button.value, mo.md("press the button"))``; a test passes
   ``train_button=True`` to run the training.
4. The values worth checking (e.g. the GELU minimum shown in the prose) are **defined as names**
   in the cell that shows them, so the test can compare ``defs[name]`` with the engine and find
   the same number in the cell's text output.
5. Extremes never raise: a cell that cannot compute shows ``mo.callout(..., kind="warn")`` and
   returns, so every test of min/max values is also a test that no traceback appears.

Then::

    from notebook_driver import load_app, run_app, control_values, output_text

    app = load_app("notebooks/01_activations.py")
    outputs, defs = run_app(app)                                # defaults
    for v in control_values(defs["slope"]):                     # min, max, default
        outputs, defs = run_app(app, slope=v)                   # a Driven stand-in, .value == v
        assert f"{v:.2f}" in output_text(outputs)

:func:`run_app` wraps each value in :class:`Driven`, which has ``.value`` and otherwise behaves like
the original element (its display, its ``start``/``stop``...). It fails the test on any exception,
any warning (RuntimeWarning from NumPy, Matplotlib warnings...) and anything written to stderr.

Whole-file checks: :func:`run_headless` (``python notebook.py`` exits 0 with empty stderr),
:func:`marimo_check` (``marimo check --strict``, optionally ``--select MW`` for WASM safety) and
:func:`export_html` (``marimo export html``).
"""

from __future__ import annotations

import contextlib
import html
import importlib.util
import inspect
import io
import json
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
MARIMO = str(VENV_BIN / "marimo") if (VENV_BIN / "marimo").exists() else "marimo"

_APPS: dict = {}


# ----------------------------------------------------------------------------- loading


def load_app(path):
    """Import a notebook file and return its ``app`` (cached per path: import once per session).

    Importing runs the ``with app.setup:`` block, so the notebook's ``@app.function`` helpers are
    available as attributes of ``load_module(path)``.
    """
    return load_module(path).app


def load_module(path):
    path = (ROOT / path).resolve()
    if path not in _APPS:
        name = "nb_" + path.stem.replace("-", "_")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(ROOT))  # notebooks import `engine` from the repository root
        # registered before it runs: marimo reads an @app.class_definition's source through
        # inspect, which finds a class's file by its module in sys.modules (and otherwise drops the
        # cell from the app without a word, so app.run() raises NameError for the class)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _APPS[path] = module
    return _APPS[path]


# ----------------------------------------------------------------------------- driving controls


class Driven:
    """Stand-in for a UI element in ``app.run(defs=...)``: ``.value`` is fixed, the rest delegates."""

    def __init__(self, original, value):
        self._original = original
        self.value = value

    def __getattr__(self, name):
        if name == "_original":
            raise AttributeError(name)
        return getattr(self._original, name)

    def _mime_(self):
        # marimo looks the display method up on the type, so delegate it explicitly
        return self._original._mime_()

    def __repr__(self):
        return f"Driven({type(self._original).__name__}, value={self.value!r})"


def _defs_by_cell(app) -> list:
    app._maybe_initialize()
    return [set(cd.cell._cell.defs) for cd in app._cell_manager.cell_data() if cd.cell is not None]


_DEFAULTS: dict = {}


def default_defs(app):
    """The definitions of a plain run (cached per app): the controls' default objects."""
    if id(app) not in _DEFAULTS:
        _DEFAULTS[id(app)] = run_app(app)[1]
    return _DEFAULTS[id(app)]


def run_app(app, **values):
    """Run ``app`` with the named controls set to ``values``; return ``(outputs, defs)``.

    A value is wrapped in :class:`Driven` around the control's default object; the value for a
    lesson function or class (``run_app(app, loss=my_loss)``) replaces it as it is; a dict for a
    ``mo.ui.dictionary`` sets the entries it names (``answers_check={"dw": "5"}``). Names defined in
    the same cell as a driven control keep their default objects. Fails (raises AssertionError)
    on warnings or stderr output; exceptions from cells propagate.
    """
    defs = {}
    if values:
        base = default_defs(app)
        for name, v in values.items():
            if name not in base:
                raise KeyError(f"run_app: the notebook defines no {name!r}")
            # a lesson cell (@app.function / @app.class_definition) is swapped for the function or
            # class given, as a learner's edit replaces it; a control gets a Driven stand-in
            lesson = inspect.isfunction(base[name]) or inspect.isclass(base[name])
            if type(base[name]).__name__ == "dictionary" and isinstance(v, dict):
                v = {**base[name].value, **v}  # the entries not named keep their defaults
            defs[name] = v if isinstance(v, Driven) or lesson else Driven(base[name], v)
        for cell_defs in _defs_by_cell(app):
            if cell_defs & set(values):
                for other in cell_defs - set(values):
                    defs[other] = base[other]
    err = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        outputs, out_defs = app.run(defs=defs or None)
    problems = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught if not _ignorable(w)]
    assert not problems, "warnings while running the notebook:\n" + "\n".join(problems)
    assert not err.getvalue().strip(), "stderr while running the notebook:\n" + err.getvalue()
    return outputs, out_defs


def _ignorable(w) -> bool:
    # marimo itself may warn about running outside its runtime; those are not the notebook's.
    return "marimo" in str(w.filename) and issubclass(w.category, (DeprecationWarning, UserWarning))


def control_values(control) -> list:
    """Values to drive a control with: its minimum, maximum and default (in ``.value`` space).

    Sliders and numbers: start, stop, value. Dropdowns and radios: every option's value.
    Dictionaries, batches and arrays of controls: every element at its minimum, then at its maximum,
    then at its default; a form: its element's values (as if submitted). Switches, checkboxes and run buttons: False, True (a pressed run button). Text: '', the default, and a 200-character junk string.
    Widgets made by engine/course/widgets.py (anywidgets, matrices): their ``test_values`` (an
    empty drawing, a full one, a corner point, one class...), then their default.
    """
    cls = type(getattr(control, "_original", control)).__name__
    extremes = getattr(control, "test_values", None)
    if extremes is not None:
        return [*extremes, control.value]
    if hasattr(control, "start") and hasattr(control, "stop"):
        return list(dict.fromkeys([control.start, control.stop, control.value]))
    if cls in ("dropdown", "radio"):
        return list(control.options.values())
    if cls in ("switch", "checkbox", "run_button", "button"):
        return [False, True]
    if cls in ("text", "text_area"):
        return ["", control.value, "x" * 200]
    if cls == "multiselect":
        return [[], list(control.options.values())]
    if cls == "form":
        # a form's value is its element's, once submitted (None before: the default run covers it)
        return control_values(control.element)
    if cls in ("dictionary", "array", "batch"):
        # each element's own minimum, maximum and default, all elements together
        parts = (
            {k: control_values(v) for k, v in control.elements.items()}
            if cls in ("dictionary", "batch")
            else {i: control_values(v) for i, v in enumerate(control.elements)}
        )
        runs = [{k: vs[min(j, len(vs) - 1)] for k, vs in parts.items()} for j in range(3)]
        return runs if cls != "array" else [list(r.values()) for r in runs]
    raise TypeError(f"control_values: don't know how to drive a {cls}")


# ----------------------------------------------------------------------------- reading outputs


def output_html(outputs) -> str:
    """The HTML of every output (markdown, callouts, stacks), joined."""
    parts = []
    for o in outputs:
        if o is None:
            continue
        text = getattr(o, "text", None)
        parts.append(text if isinstance(text, str) else repr(o))
    return "\n".join(parts)


def _decode_attr(value: str) -> str:
    try:
        decoded = json.loads(html.unescape(value))
    except (ValueError, TypeError):
        return ""
    return decoded if isinstance(decoded, str) else ""


def _visible_text(markup: str) -> str:
    # Callouts, labels and some layouts keep their inner HTML in data-* attributes, as JSON
    # strings: put that HTML where the tag stood, then strip every tag.
    def expand(tag):
        inner = [_decode_attr(v) for v in re.findall(r"data-(?:label|html)='([^']*)'", tag.group(0))]
        return " " + " ".join(inner) + " "

    for _ in range(3):  # nested outputs (a callout inside a stack inside a callout)
        markup = re.sub(r"<[^>]*data-(?:label|html)='[^']*'[^>]*>", expand, markup)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def output_text(outputs) -> str:
    """The visible text of every output (tags removed, entities decoded, callouts' and labels'
    inner HTML included): for `in` assertions."""
    return _visible_text(output_html(outputs))


def assert_no_error_outputs(outputs):
    """No output is an exception object or shows a Python traceback."""
    for o in outputs:
        assert not isinstance(o, BaseException), f"a cell output is an exception: {o!r}"
    text = output_html(outputs)
    assert "Traceback (most recent call last)" not in text, text[:2000]


# ----------------------------------------------------------------------------- whole-file checks


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def run_headless(path, timeout: float = 120) -> float:
    """``python <notebook>``: asserts exit code 0 and empty stderr; returns the wall time in seconds."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / path)], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=_env()
    )
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, f"{path} exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert not proc.stderr.strip(), f"{path} wrote to stderr:\n{proc.stderr[-3000:]}"
    return seconds


def marimo_check(*paths, select: str | None = None) -> str:
    """``marimo check --strict`` (with ``--select`` rules if given); asserts it passes, returns its output."""
    cmd = [MARIMO, "check", "--strict"] + (["--select", select] if select else []) + [str(ROOT / p) for p in paths]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env=_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"marimo check failed:\n{out[-4000:]}"
    return out


def export_html(path, out_path) -> str:
    """``marimo export html``: asserts success (marimo exits 1 when a cell failed) and that the page
    holds no error output; returns the page.

    A page of the table of contents is exported once per test session: where this session builds
    the site anyway (a selected test reads it, and its tools are here; tests/support/site_build.py:
    `make site` runs the same ``marimo export html`` for every page), the site's static page is
    read instead of exporting the page a second time. Otherwise the page is exported here."""
    page = _site_static_page(path)
    if page is None:
        cmd = [MARIMO, "export", "html", str(ROOT / path), "-o", str(out_path), "--no-sandbox"]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=_env())
        assert proc.returncode == 0, f"export of {path} failed:\n{(proc.stdout + proc.stderr)[-4000:]}"
        page = Path(out_path).read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" not in page, f"the exported {path} shows a traceback"
    assert "application/vnd.marimo+error" not in page, f"the exported {path} shows an error"
    return page


def _site_static_page(path) -> str | None:
    """The site build's static export of the table-of-contents page at ``path``, or None (no site
    tools here, not a page of the table of contents, or the site lacks it)."""
    import shutil

    from engine.course import toc

    entry = next((e for e in toc.entries() if Path(e.path) == Path(path)), None)
    if entry is None:
        return None
    import site_build  # tests/support/site_build.py, beside this file

    if not site_build.BUILT_THIS_SESSION:  # no selected test reads the site: do not build it for this
        return None
    if not (site_build.build_site.PYODIDE_LOCK.is_file() or shutil.which("npm")):
        return None
    built = site_build.site_build()
    static = built.site / site_build.build_site.static_path(entry.id)
    return static.read_text(encoding="utf-8") if static.is_file() else None


def exported_outputs(page: str) -> dict:
    """``{cell id: output data}`` of a page written by ``marimo export html`` (its session record:
    what the static page shows in each cell, mimetype -> payload)."""
    start = page.find('"session": ')
    assert start >= 0, "the exported page holds no session record"
    session, _ = json.JSONDecoder().raw_decode(page[start + len('"session": ') :])
    return {
        cell["id"]: {k: v for o in cell["outputs"] for k, v in (o.get("data") or {}).items()}
        for cell in session["cells"]
    }


# ----------------------------------------------------------------------------- the convention
# (docs/notebook-convention.md): what every notebook test discovers instead of listing by hand.

PASSIVE = ("table",)  # UI elements that show data and take no input worth driving


def notebook_path(nb: str) -> str:
    """``"05_convolution"`` -> ``"notebooks/05_convolution.py"`` (a path is returned unchanged)."""
    return nb if nb.endswith(".py") else f"notebooks/{nb}.py"


def controls(app) -> dict:
    """Every input control a notebook defines, by name (run buttons excluded: see run_buttons)."""
    from marimo._plugins.ui._core.ui_element import UIElement

    return {
        n: v
        for n, v in default_defs(app).items()
        if isinstance(v, UIElement) and type(v).__name__ not in PASSIVE + ("run_button",)
    }


def run_buttons(app) -> dict:
    return {n: v for n, v in default_defs(app).items() if type(v).__name__ == "run_button"}


def extreme_runs(app) -> list[dict]:
    """Settings that drive every control to its extremes in a few runs: all controls at their first
    value (minimum), all at their second (maximum), then every further option of every choice
    control and every further test value of every widget (run i sets each to its option i,
    cycling, from i = 2: the first two runs already set options 0 and 1). Each run also presses
    every run button, so the training controls act at their extremes."""
    found = controls(app)
    values = {name: control_values(c) for name, c in found.items()}
    pressed = {name: True for name in run_buttons(app)}
    runs = [{**{n: v[min(k, len(v) - 1)] for n, v in values.items()}, **pressed} for k in (0, 1)]
    choices = {
        n: vs
        for n, vs in values.items()
        if type(found[n]).__name__ in ("dropdown", "radio") or hasattr(found[n], "test_values")
    }
    for i in range(2, max((len(vs) for vs in choices.values()), default=0)):
        runs.append({n: vs[i % len(vs)] for n, vs in choices.items()})
    return runs


def notebook_text(nb: str, **values) -> tuple[str, dict]:
    """Run notebook ``nb`` with ``values``; fail on an error output; return (visible text, defs)."""
    outputs, defs = run_app(load_app(notebook_path(nb)), **values)
    assert_no_error_outputs(outputs)
    return output_text(outputs), defs


def script_cells(app) -> list:
    """The "same in your own script" cells: visible code that defines a private ``_script``."""
    app._maybe_initialize()
    return [cd for cd in app._cell_manager.cell_data() if cd.cell is not None and "def _script(" in cd.code]
