"""The two layers: `import engine` is the library (NumPy only, no lesson code); `engine.course`
sits on top of it and nothing in the library imports it back."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
COURSE = ENGINE / "course"

# Runs in a fresh interpreter, in the repository root. Phase 1: `import engine` and every library
# module (every .py under engine/ outside engine/course/, by its dotted name), with plotting,
# marimo, widgets and torch refused by an import hook. Phase 2: every module of the course layer,
# with the same hook: its modules import marimo, Altair and Matplotlib only inside functions.
IMPORT_PROBE = textwrap.dedent(
    """
    import importlib, importlib.abc, json, pathlib, sys

    FORBIDDEN = {"marimo", "matplotlib", "altair", "anywidget", "wigglystuff", "torch", "pandas",
                 "scipy", "PIL", "pytest", "hypothesis", "playwright"}
    attempts = []

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in FORBIDDEN:
                attempts.append(name)
                raise ImportError(f"blocked by the test: {name}")
            return None

    def modules(folder, skip=None):
        for path in sorted(pathlib.Path(folder).rglob("*.py")):
            if "__pycache__" in path.parts or (skip and path.is_relative_to(skip)):
                continue
            yield ".".join(path.with_suffix("").parts).removesuffix(".__init__")

    def third_party(names):
        tops = {name.split(".")[0] for name in names}
        return sorted(tops - set(sys.stdlib_module_names) - {"engine", "numpy", "cython_runtime"}
                      - {n for n in tops if n.startswith("_")})

    before = set(sys.modules)
    sys.meta_path.insert(0, Refuse())
    import engine
    library = [importlib.import_module(name).__name__ for name in modules("engine", skip="engine/course")]
    after_library = set(sys.modules)
    course = [importlib.import_module(name).__name__ for name in modules("engine/course")]
    print(json.dumps({
        "attempts": attempts,
        "library": library,
        "library_loaded": sorted(after_library - before),
        "library_third_party": third_party(after_library - before),
        "course": course,
        "course_third_party": third_party(set(sys.modules) - before),
    }))
    """
)


def _probe() -> dict:
    result = subprocess.run([sys.executable, "-c", IMPORT_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_import_engine_loads_no_course_plotting_or_widget_module():
    """`import engine` and every library submodule: no engine.course*, no marimo, Altair,
    Matplotlib, anywidget or wigglystuff in sys.modules; NumPy is the only third-party package."""
    report = _probe()
    assert report["attempts"] == [], f"importing engine tried to import {report['attempts']}"
    assert report["library_third_party"] == [], f"importing engine loaded {report['library_third_party']}"
    course_loaded = [m for m in report["library_loaded"] if m == "engine.course" or m.startswith("engine.course.")]
    assert course_loaded == [], f"importing the library loaded the course layer: {course_loaded}"
    library = {
        _dotted(p) for p in ENGINE.rglob("*.py") if "__pycache__" not in p.parts and not p.is_relative_to(COURSE)
    }
    assert library <= set(report["library"]), f"not imported: {sorted(library - set(report['library']))}"
    assert "engine.nn" in report["library"] and "engine.course" not in report["library"]


def test_the_course_layer_imports_without_marimo_or_plotting_at_module_level():
    report = _probe()
    course = {_dotted(p) for p in COURSE.rglob("*.py") if "__pycache__" not in p.parts} - {"engine.course"}
    assert course <= set(report["course"]), f"not imported: {sorted(course - set(report['course']))}"
    assert report["course_third_party"] == [], f"importing engine.course loaded {report['course_third_party']}"


def _imports_of(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source`` of ``module``, relative ones
    resolved (``from . import x`` in engine/__init__.py is engine.x)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            found += [(node.lineno, name)] + [(node.lineno, f"{name}.{a.name}") for a in node.names]
    return found


def _course_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    return [
        f"{line}: {name}"
        for line, name in _imports_of(source, module, is_package)
        if name == "engine.course" or name.startswith("engine.course.")
    ]


def test_no_library_module_imports_the_course_layer():
    """Checked on the source too (function-local imports included), not only on what loads."""
    offenders = []
    for path in sorted(ENGINE.rglob("*.py")):
        if "__pycache__" in path.parts or path.is_relative_to(COURSE):
            continue
        source = path.read_text(encoding="utf-8")
        offenders += [
            f"{path.relative_to(ROOT)}:{hit}"
            for hit in _course_imports(source, _dotted(path), path.name == "__init__.py")
        ]
    assert offenders == [], "the library imports the course layer:\n" + "\n".join(offenders)


def test_the_source_check_can_fail():
    assert _course_imports("from . import course", "engine", is_package=True)
    assert _course_imports("def f():\n    from ..course import toc", "engine.nn.layers")
    assert _course_imports("from engine.course.labs import vae", "engine.vae")
    assert _course_imports("import engine.course.plot", "engine.metrics")
    assert not _course_imports("from . import nn\nfrom engine import data", "engine", is_package=True)
    assert not _course_imports("from .. import functional", "engine.nn.layers")
